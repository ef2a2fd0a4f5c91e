"""PAMem: a rule-based personal-assistant memory written for the tests of a user's first contact
(issue 40), in a style unlike the reference systems and TripLog: one class per stage, memories
keyed by the sentence's subject, forgetting by importance and age.

A user's messages go through four stages: ``take_note`` (extraction) keeps first-person
statements and skips questions and sentences about someone else; ``consolidate`` (update) files
a note under its subject ("my car" of "My car is a red Fiat."), the newest note winning; after
the messages ``forget`` (deletion) drops notes of low importance ("sometimes", "maybe") once they
are old; per question ``recall`` (retrieval) takes the note with the best word overlap times
recency and ``respond`` (generation, no replay step: it always runs for real) answers with the
note's first span, up to its first comma. The judge checks that the gold answer is in it.

The cause of each failure is written down before memtrace runs (``PLANTED``: case -> step and
error type). The module is also the user's replayer module (``make_replayer``), which the
tests copy into a folder of their own and name with ``--replayer pamem_system:make_replayer``
from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memtrace.replay.hook import STEP, Replayed, ReplayTrace
from memtrace.tracing import (
    SimClock,
    Var,
    case,
    delete,
    edge,
    mutation,
    operation,
    read,
    session,
    trace,
    variable,
)

MESSAGES = {
    "m1": "I work as a nurse in Gdansk.",
    "m2": "Did I ever tell you I'm allergic to peanuts?",  # a question: never noted
    "m3": "My car is a red Fiat.",
    "m4": "I sometimes drink green tea at night.",  # low importance: forgotten
    "m5": "I keep my passport in the blue drawer.",
    "m6": "My car is at the garage now.",  # same subject as m3: overwrites it
    "m7": "I was born in Poznan, but I grew up in Torun.",
    "m8": "I keep my gym bag in the car.",  # newer and overlapping: outranks m5
}
QUESTIONS = {  # case id -> (question, gold answer, evidence message)
    "q-job": ("Where do I work as a nurse?", "gdansk", "m1"),
    "q-allergy": ("What am I allergic to?", "peanuts", "m2"),
    "q-car": ("What colour is my car?", "red", "m3"),
    "q-tea": ("What do I drink at night?", "green tea", "m4"),
    "q-passport": ("Where do I keep my passport?", "blue drawer", "m5"),
    "q-town": ("Where did I grow up?", "torun", "m7"),
}
PLANTED = {  # what must be blamed: case -> (step, error type); None: the answer op
    "q-allergy": ("note:m2", "ExtractionError"),
    "q-car": ("consolidate:m6", "UpdateError"),
    "q-tea": ("forget:u1", "DeletionError"),
    "q-passport": ("recall:q-passport", "RetrievalError"),
    "q-town": (None, "ResponseError"),
}
LOW_IMPORTANCE = ("sometimes", "maybe")
STOP = {"do", "did", "the", "a", "what", "where", "is", "am", "to", "at", "in"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z']+", text.lower())} - STOP


def subject(sentence: str) -> str:
    """The words before the first "is" ("my car"), else the whole sentence (its own subject)."""
    head, found, _ = sentence.lower().partition(" is ")
    return head if found else sentence.lower()


@dataclass
class Assistant:
    """One pass over the user's messages and questions; ``repaired``: step -> the evidence
    message its oracle restores (the replayer's); ``changed``: what each repair changed."""

    repaired: Mapping[str, str] = field(default_factory=dict)
    notes: dict[str, tuple[str, int, Var]] = field(default_factory=dict)  # subject -> note
    changed: dict[str, str] = field(default_factory=dict)

    def take_note(self, msg_id: str) -> tuple[list[str], Var]:
        step = f"note:{msg_id}"
        text = MESSAGES[msg_id]
        with operation("pamem.take_note", category="extraction", metadata={STEP: step}):
            message = variable(f"msg-{msg_id}", text, category="message")
            read(message)
            noted = [] if text.endswith("?") or not text.startswith(("I ", "My ")) else [text]
            if not noted and self.repaired.get(step) == msg_id:
                noted = [text]
                self.changed[step] = f"noted {text!r}, which take_note skipped"
            output = variable(f"noted-{msg_id}", noted, category="llm_response", sources=(message,))
            return noted, output

    def consolidate(self, msg_id: str, noted: list[str], output: Var, position: int) -> None:
        step = f"consolidate:{msg_id}"
        with operation("pamem.consolidate", category="update", metadata={STEP: step}):
            read(output)
            for sentence in noted:
                key = subject(sentence)
                held = self.notes.get(key)
                evidence = self.repaired.get(step)
                if held is not None and evidence is not None and held[0] == MESSAGES[evidence]:
                    self.changed[step] = f"kept the note {held[0]!r} instead of overwriting it"
                    key, held = f"{key} ({msg_id})", None
                if held is None:
                    memory = variable(
                        f"memory-{key}", sentence, category="memory_entry", sources=(output,)
                    )
                else:  # newest wins: the old note's words are gone
                    memory = mutation(held[2], sentence)
                    edge(output, memory)
                self.notes[key] = (sentence, position, memory)

    def forget(self, user: str, now: int) -> None:
        step = f"forget:{user}"
        with operation("pamem.forget", category="deletion", metadata={STEP: step}):
            for key, (sentence, position, memory) in list(self.notes.items()):
                old = now - position > 3
                if old and any(w in sentence.lower() for w in LOW_IMPORTANCE):
                    evidence = self.repaired.get(step)
                    if evidence is not None and MESSAGES[evidence] == sentence:
                        self.changed[step] = f"kept the note {sentence!r} it would have forgotten"
                        continue
                    read(memory)
                    delete(memory)
                    del self.notes[key]

    def recall(self, case_id: str, query: Var, now: int) -> tuple[str, Var]:
        step = f"recall:{case_id}"
        question, _, evidence = QUESTIONS[case_id]
        with operation("pamem.recall", category="retrieval", metadata={STEP: step}):
            read(query, *(memory for _, _, memory in self.notes.values()))

            def score(key: str) -> float:
                sentence, position, _ = self.notes[key]
                return len(words(question) & words(sentence)) / (1 + (now - position) / 2)

            ranked = sorted(self.notes, key=lambda k: (-score(k), k))
            top = ranked[:1]
            if self.repaired.get(step) == evidence:
                wanted = [k for k in self.notes if self.notes[k][0] == MESSAGES[evidence]]
                if wanted and wanted[0] not in top:
                    top = wanted
                    self.changed[step] = f"recalled {MESSAGES[evidence]!r}"
            sentence = self.notes[top[0]][0] if top else ""
            sources = tuple(self.notes[k][2] for k in top)
            context = variable(f"recalled-{case_id}", sentence, category="context", sources=sources)
            return sentence, context

    def respond(self, case_id: str, query: Var, context: Var, sentence: str) -> bool:
        _, gold, evidence = QUESTIONS[case_id]
        with operation("pamem.respond", kind="generation"):
            read(query, context)
            reply = sentence.split(",")[0]
            prediction = variable(
                f"reply-{case_id}", reply, class_name="prediction", sources=(context,)
            )
        passed = gold in reply.lower()
        case(id=case_id, query=query.id, prediction=prediction.id, golden_answers=[gold],
             judge_score=1.0 if passed else 0.0, evidence=[f"msg-{evidence}@1"])  # fmt: skip
        return passed

    def run(self, cases: list[str]) -> dict[str, bool]:
        with session("u1-messages"):
            for position, msg_id in enumerate(MESSAGES):
                noted, output = self.take_note(msg_id)
                self.consolidate(msg_id, noted, output, position)
            now = len(MESSAGES)
            self.forget("u1", now)
        with session("u1-questions"):
            out = {}
            for case_id in cases:
                query = variable(case_id, QUESTIONS[case_id][0], class_name="query")
                sentence, context = self.recall(case_id, query, now)
                out[case_id] = self.respond(case_id, query, context, sentence)
            return out


def write_trace(path: Path, trace_id: str) -> dict[str, bool]:
    with trace(path, trace_id, system="pamem", clock=SimClock()):
        return Assistant().run(list(QUESTIONS))


class PAMemReplayer:
    """Re-runs the user's messages and one question with the steps given repaired by the
    system's own oracle (it knows each question's evidence message)."""

    def __init__(self, trace: ReplayTrace) -> None:
        self.trace_id = trace.trace_id

    def replay(self, case_id: str, steps: frozenset[str]) -> Replayed:
        evidence = QUESTIONS[case_id][2]
        assistant = Assistant(repaired=dict.fromkeys(steps, evidence))
        passed = assistant.run([case_id])[case_id]
        return Replayed(passed, "", assistant.changed)


def make_replayer(trace: ReplayTrace) -> PAMemReplayer:
    return PAMemReplayer(trace)
