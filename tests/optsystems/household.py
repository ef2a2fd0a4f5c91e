"""Household: a rule-based memory of a family's notes, one conversation per household.

Per message ``Household.note`` keeps it as a note when it has at least ``min_words`` content
words (extraction); ``shelve`` stores it and forgets the oldest note beyond ``keep_last``
(update: the forgetting threshold); per question ``lookup`` returns the ``top_k`` notes sharing
most words with it, newest first on a tie (retrieval), and ``answer`` quotes the first
``answer_words`` words of each (generation). The judge: the gold answer is in the quote.

Weak defaults, each in the knob one operation reads (``DEFAULTS``): ``min_words`` 4 drops the
three-word wifi note, ``keep_last`` 4 forgets the plumber's day (and the wifi code once it is
kept), ``top_k`` 1 returns the bike lock's key instead of the spare key, ``answer_words`` 6
cuts the glasses' drawer off. Better values: min_words <= 3, keep_last >= 6-8 (households
differ in length), top_k >= 2, answer_words >= 10.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from memtrace.optimize.plugin import (
    CaseResult,
    Configuration,
    Knob,
    ParameterKnob,
    SystemRun,
    Tracing,
)
from memtrace.replay.hook import STEP, Replayed, ReplayTrace
from memtrace.settings import Settings
from memtrace.tracing import SimClock, Var, case, delete, operation, read, session, trace, variable

DEFAULTS: dict[str, int] = {"min_words": 4, "keep_last": 4, "top_k": 1, "answer_words": 6}
RANGES = {"min_words": (1, 8), "keep_last": (1, 12), "top_k": (1, 5), "answer_words": (2, 16)}
NAMES = ["Ana", "Ben", "Carla", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"]
COLORS = ["red", "blue", "green", "yellow", "white", "black"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
FILLER = [
    "The garden tools are kept in the shed behind the garage.",
    "Grandma likes the old teapot for her morning tea with lemon.",
    "The cat gets fed twice a day with the dry food from the pantry.",
]
SMALL = {"the", "a", "an", "is", "are", "of", "in", "on", "for", "her", "his", "to", "with", "by"}
SMALL |= {"what", "where", "which", "when", "does", "do", "who", "how", "at", "it", "and", "on"}


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in SMALL]


@dataclass(frozen=True)
class Household:
    """One household's conversation: its messages and questions (id, text, gold, evidence)."""

    id: str
    messages: tuple[tuple[str, str], ...]
    questions: tuple[tuple[str, str, str, str], ...]


def household(number: int) -> Household:
    name, color = NAMES[number % len(NAMES)], COLORS[number % len(COLORS)]
    day, code = DAYS[number % len(DAYS)], f"{4000 + 37 * number}"
    said = [
        ("m1", f"Wifi code {code}."),
        ("m2", f"Plumber {name} visits every {day} morning to check the boiler."),
        *[(f"f{i}", FILLER[i]) for i in range(number % 3)],  # households differ in length
        ("m5", f"The recycling goes out on {DAYS[(number + 2) % 6]} evenings."),
        ("m6", "Grandma keeps her reading glasses safe in the top drawer of the desk."),
        ("m3", f"The spare key: {color} flowerpot near the back door."),
        ("m4", "The bike lock key is kept on the hook by the front door."),
    ]
    hid = f"h{number:02d}"
    questions = (
        (f"{hid}-wifi", "What is the wifi code?", code, "m1"),
        (f"{hid}-plumber", "Which day does the plumber visit?", day, "m2"),
        (f"{hid}-key", "Where is the key kept?", f"{color} flowerpot", "m3"),
        (f"{hid}-recycling", "When does the recycling go out?", DAYS[(number + 2) % 6], "m5"),
        (f"{hid}-glasses", "Where are Grandma's reading glasses?", "top drawer", "m6"),
    )
    return Household(hid, tuple((f"{hid}-{m}", t) for m, t in said), questions)


HOUSEHOLDS = {h.id: h for h in map(household, range(1, 13))}


class Memory:
    """The system itself: notes in a list, newest last. A replay repairs the ``repaired``
    steps with its oracle, the ``evidence`` message of the case it answers again."""

    def __init__(
        self, config: dict[str, int], repaired: frozenset[str] = frozenset(), evidence: str = ""
    ) -> None:
        self.config = config
        self.notes: list[tuple[str, str, Var]] = []  # (message id, text, traced memory)
        self.repaired = repaired
        self.evidence = evidence
        self.changed: dict[str, str] = {}  # step -> what its repair changed

    def knob(self, name: str) -> int:
        """A configuration value, recorded as the parameter the current operation reads."""
        read(variable(name, self.config[name], category="parameter"))
        return self.config[name]

    def note(self, message_id: str, text: str) -> tuple[list[str], Var]:
        step = f"note:{message_id}"
        with operation("household.note", category="extraction", metadata={STEP: step}):
            message = variable(message_id, text, category="message")
            read(message)
            kept = [text] if len(words(text)) >= self.knob("min_words") else []
            if step in self.repaired and not kept:
                kept, self.changed[step] = [text], f"kept the note {text!r}"
            return kept, variable(f"kept:{message_id}", kept, sources=(message,))

    def shelve(self, message_id: str, kept: list[str], source: Var) -> None:
        step = f"shelve:{message_id}"
        with operation("household.shelve", category="update", metadata={STEP: step}):
            read(source)
            for text in kept:
                memory = variable(f"note:{message_id}", text, category="memory", sources=(source,))
                self.notes.append((message_id, text, memory))
            limit = self.knob("keep_last")
            while len(self.notes) > limit:
                oldest = 0
                if step in self.repaired and self.notes[0][0] == self.evidence:
                    oldest, self.changed[step] = 1, f"kept the note of {self.evidence}"
                delete(self.notes.pop(oldest)[2])

    def lookup(self, question_id: str, question: Var, text: str) -> tuple[list[str], Var]:
        step = f"lookup:{question_id}"
        with operation("household.lookup", category="retrieval", metadata={STEP: step}):
            read(question, *(memory for _, _, memory in self.notes))
            asked = set(words(text))
            order = sorted(
                range(len(self.notes)),
                key=lambda i: (-len(asked & set(words(self.notes[i][1]))), -i),
            )[: self.knob("top_k")]
            held = [i for i, note in enumerate(self.notes) if note[0] == self.evidence]
            if step in self.repaired and held and held[0] not in order:
                order = [*order[:-1], held[0]]  # as many results, the evidence among them
                self.changed[step] = f"returned the note of {self.evidence}"
            found = [self.notes[i][1] for i in order]
            sources = tuple(self.notes[i][2] for i in order)
            return found, variable(f"context:{question_id}", found, category="context",
                                   sources=sources)  # fmt: skip

    def answer(
        self, question_id: str, question: Var, found: list[str], context: Var
    ) -> tuple[str, Var]:
        step = f"answer:{question_id}"
        with operation("household.answer", category="generation", metadata={STEP: step}):
            read(question, context)
            cut = self.knob("answer_words")
            if step in self.repaired:  # the oracle answers from the whole of every note
                cut, self.changed[step] = max(len(n.split()) for n in found or [""]), "quoted all"
            quote = " | ".join(" ".join(note.split()[:cut]) for note in found)
            prediction = variable(
                f"answer:{question_id}", quote, class_name="prediction", sources=(context,)
            )
            return quote, prediction


def run_household(
    config: dict[str, int],
    home: Household,
    only: Collection[str] | None = None,
    memory: Memory | None = None,
) -> list[tuple[str, bool, str, Var]]:
    """(question id, passed, answer, its prediction) of every question (in ``only``)."""
    memory = memory or Memory(config)
    with session("notes"):
        for message_id, text in home.messages:
            memory.shelve(message_id, *memory.note(message_id, text))
    out = []
    with session("questions"):
        for question_id, text, gold, evidence in home.questions:
            if only is not None and question_id not in only:
                continue
            question = variable(question_id, text, class_name="query")
            found, context = memory.lookup(question_id, question, text)
            answer, prediction = memory.answer(question_id, question, found, context)
            passed = gold.lower() in answer.lower()
            case(id=question_id, query=question.id, prediction=prediction.id,
                 golden_answers=[gold], judge_score=1.0 if passed else 0.0,
                 evidence=[f"{home.id}-{evidence}@1"])  # fmt: skip
            out.append((question_id, passed, answer, prediction))
    return out


# -- the user's own code: its configuration file and evaluation, no memtrace in it -----------


def load_config(path: Path) -> dict[str, int]:
    return {**DEFAULTS, **json.loads(path.read_text(encoding="utf-8"))}


def evaluate(config_file: Path, ids: Sequence[str]) -> float:
    """Accuracy over the households ``ids`` with the configuration in ``config_file``."""
    config = load_config(config_file)
    results = [r for i in ids for r in run_household(config, HOUSEHOLDS[i])]
    return sum(passed for _, passed, _, _ in results) / len(results)


# -- the plugin ------------------------------------------------------------------------------


class HouseholdSystem:
    name = "household"
    answer_op = "household.answer"
    config_file = "household.json"

    def knobs(self) -> list[Knob]:
        return [ParameterKnob(n, v, *RANGES[n]) for n, v in DEFAULTS.items()]

    def case_ids(self) -> list[str]:
        return list(HOUSEHOLDS)

    def run(
        self,
        config: Configuration,
        ids: Sequence[str],
        *,
        tracing: Tracing | None = None,
        only: Collection[str] | None = None,
    ) -> SystemRun:
        values = {n: int(v) for n, v in config.params.items()}
        results, traces = [], {}
        for hid in ids:
            home = HOUSEHOLDS[hid]
            trace_id = f"{tracing.prefix}household-{hid}" if tracing else ""
            path = tracing.directory / f"{trace_id}.jsonl" if tracing else Path()
            with trace(path, trace_id or hid, system=self.name, clock=SimClock(),
                       metadata={"household": hid}, enabled=tracing is not None):  # fmt: skip
                answered = run_household(values, home, only)
            if tracing is not None:
                traces[trace_id] = path
            questions = {q[0]: q for q in home.questions}
            results += [
                CaseResult(qid, hid, passed, answer, questions[qid][1], questions[qid][2], trace_id)
                for qid, passed, answer, _ in answered
            ]
        return SystemRun(results, traces)

    def write_config(self, config: Configuration, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / self.config_file
        path.write_text(json.dumps(dict(config.params), indent=2) + "\n", encoding="utf-8")
        return [path]


def make_system(settings: Settings) -> HouseholdSystem:
    return HouseholdSystem()


class HouseholdReplayer:
    """Answers a case again with steps repaired, under the configuration its trace recorded
    (the parameters its operations read) and its own oracle (the case's evidence message)."""

    def __init__(self, trace: ReplayTrace) -> None:
        head = trace.records[0]
        self.home = HOUSEHOLDS[str(head["metadata"]["household"])]
        recorded = {
            str(r["name"]): int(r["value"])
            for r in trace.records
            if r.get("type") == "variable" and r.get("category") == "parameter"
        }
        self.config = {**DEFAULTS, **recorded}

    def replay(self, case_id: str, steps: frozenset[str]) -> Replayed:
        evidence = next(f"{self.home.id}-{q[3]}" for q in self.home.questions if q[0] == case_id)
        memory = Memory(self.config, steps, evidence)
        ((_, passed, answer, _),) = run_household(self.config, self.home, {case_id}, memory)
        return Replayed(passed, answer, memory.changed)


def make_replayer(trace: ReplayTrace) -> HouseholdReplayer:
    return HouseholdReplayer(trace)
