"""TripLog: a small memory system written for the replay plugin tests, in a style unlike the
reference systems (plain functions, notes keyed by topic, no LoCoMo): what a user has.

Per message, ``parse`` splits it into clauses (extraction) and ``shelve`` files each clause
under its topic, its first word, overwriting what the topic held
(update). Per question, ``recall`` returns the two notes sharing most words with the question
(retrieval) and ``reply`` answers with the first one (generation); the judge checks that the
gold answer is in it.

The causes of its failures, written down before memtrace runs (``PLANTED``): ``parse`` drops the
clause of message ``d1-2`` (the evidence of ``q-bike``); messages ``d2-1`` and ``d2-2`` are about
the topics of ``d1-1`` and ``d1-3`` (the evidence of ``q-roses`` and ``q-tea``), so shelving
them overwrites those notes.

Replays: ``make_replayer`` is the plugin point's factory; the replayer re-runs the whole log with
the steps it is given repaired by the system's own oracle (it knows each question's evidence)
and says what each repair changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memtrace.replay.hook import STEP, Replayed, ReplayTrace
from memtrace.tracing import SimClock, Var, case, operation, read, session, trace, variable

DAYS = {
    "day-1": {
        "d1-1": "garden roses bloom in June",
        "d1-2": "bike repairs cost forty euros",
        "d1-3": "tea shop opens at nine",
    },
    "day-2": {
        "d2-1": "garden tomatoes need water",
        "d2-2": "tea tastes better with honey",
    },
}
QUESTIONS = {  # case id -> (question, gold answer, evidence message)
    "q-bike": ("How much did the bike repairs cost?", "forty euros", "d1-2"),
    "q-tea": ("When does the tea shop open?", "nine", "d1-3"),
    "q-roses": ("When do the garden roses bloom?", "June", "d1-1"),
}
DROPPED = "d1-2"  # parse drops this message's clause (a bug of the parser)
# what must be blamed: case -> (step, error type)
PLANTED = {
    "q-bike": ("parse:d1-2", "ExtractionError"),
    "q-roses": ("shelve:d2-1", "UpdateError"),
    "q-tea": ("shelve:d2-2", "UpdateError"),
}


def words(text: str) -> set[str]:
    return {w.strip("?.,").lower() for w in text.split()} - {"the", "do", "does", "did", "at"}


@dataclass
class Run:
    """One pass over the log; ``repaired``: step -> the evidence message its oracle restores."""

    repaired: Mapping[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # topic -> clause
    changed: dict[str, str] = field(default_factory=dict)  # step -> what its repair changed
    handles: dict[str, Var] = field(default_factory=dict)

    def parse(self, msg_id: str, text: str) -> list[str]:
        step = f"parse:{msg_id}"
        with operation("triplog.parse", category="extraction", metadata={STEP: step}):
            message = variable(msg_id, text, category="message")
            read(message)
            clauses = [] if msg_id == DROPPED else [text]
            if step in self.repaired and not clauses:
                clauses = [text]
                self.changed[step] = f"kept the clause {clauses[0]!r} that parse dropped"
            # the parser's output, even when empty (as the docs trace an extractor's reply)
            variable(f"clauses-{msg_id}", clauses, category="llm_response", sources=(message,))
            return clauses

    def shelve(self, msg_id: str, clauses: list[str]) -> None:
        step = f"shelve:{msg_id}"
        with operation("triplog.shelve", category="update", metadata={STEP: step}):
            source = variable(f"clauses-{msg_id}", clauses, category="llm_response")
            read(source)
            for clause in clauses:
                topic = clause.split()[0]
                held = self.notes.get(topic)
                evidence = self.repaired.get(step)
                if held is not None and evidence is not None and self._holds(held, evidence):
                    topic = f"{topic}-{msg_id}"  # the oracle keeps the evidence's note
                    self.changed[step] = f"kept the note {held!r} instead of overwriting it"
                self.notes[topic] = clause
                old = self.handles.get(topic)
                sources = (source,) if old is None else (source, old)
                self.handles[topic] = variable(
                    f"note-{topic}", clause, category="note", sources=sources
                )

    def _holds(self, note: str, evidence: str) -> bool:
        text = next(t for day in DAYS.values() for m, t in day.items() if m == evidence)
        return note == text

    def ask(self, case_id: str) -> tuple[bool, str]:
        question, gold, _ = QUESTIONS[case_id]
        query = variable(case_id, question, class_name="query")
        with operation(
            "triplog.recall", category="retrieval", metadata={STEP: f"recall:{case_id}"}
        ):
            read(query, *(self.handles[t] for t in self.notes))
            ranked = sorted(
                self.notes, key=lambda t: (-len(words(question) & words(self.notes[t])), t)
            )
            top = [self.notes[t] for t in ranked[:2]]
            context = variable(f"context-{case_id}", top, category="context", sources=(query,))
        with operation("triplog.reply", category="generation", kind="generation"):
            read(query, context)
            answer = top[0] if top else ""
            prediction = variable(f"answer-{case_id}", answer, class_name="prediction")
        passed = gold in answer
        evidence = [f"{QUESTIONS[case_id][2]}@1"]
        case(id=case_id, query=query.id, prediction=prediction.id, golden_answers=[gold],
             judge_score=1.0 if passed else 0.0, evidence=evidence)  # fmt: skip
        return passed, answer

    def run(self, cases: list[str]) -> dict[str, tuple[bool, str]]:
        for day, messages in DAYS.items():
            with session(day):
                for msg_id, text in messages.items():
                    self.shelve(msg_id, self.parse(msg_id, text))
        with session("questions"):
            return {c: self.ask(c) for c in cases}


def write_trace(path: Path, trace_id: str) -> dict[str, tuple[bool, str]]:
    with trace(path, trace_id, system="triplog", clock=SimClock()):
        return Run().run(list(QUESTIONS))


class TripLogReplayer:
    def __init__(self, trace: ReplayTrace) -> None:
        self.trace_id = trace.trace_id

    def replay(self, case_id: str, steps: frozenset[str]) -> Replayed:
        evidence = QUESTIONS[case_id][2]
        run = Run(repaired=dict.fromkeys(steps, evidence))
        passed, answer = run.run([case_id])[case_id]
        return Replayed(passed, answer, run.changed)


def make_replayer(trace: ReplayTrace) -> TripLogReplayer:
    return TripLogReplayer(trace)
