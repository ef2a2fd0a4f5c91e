"""A small diary assistant written for tests of what attribution depends on (issue 30).

Plain functions, a dict keyed by topic that a correction overwrites, substring lookup, an answer
that knows nothing; traced with the SDK. ``Mistakes`` makes it trace the way a user could get
wrong: one field per mistake.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memtrace.loaders.checks import Finding, check_records
from memtrace.loaders.native import read_native
from memtrace.tracing import (
    SimClock,
    Var,
    case,
    mutation,
    operation,
    read,
    trace,
    variable,
    write,
)

DIARY = [
    ("pet", "Our parrot is called Kiwi."),
    ("town", "We live in Porto."),
    ("pet", "Correction: the parrot is called Mango."),
]
QUESTIONS = [
    ("q-pet", "What is the parrot called?", "Mango"),
    ("q-town", "Where do we live?", "Porto"),
]


@dataclass(frozen=True)
class Mistakes:
    answer_reads_question: bool = True
    lookup_reads_question: bool = True
    answer_name: str = "diary.answer"
    overwrite: str = "mutation"  # or "variable": a new version through variable() w/o category
    memory_category: str | None = "diary_entry"
    lookup_name: str = "diary.lookup"
    scored: int = 2  # how many cases get a judge_score
    gold: bool = True
    evidence: bool = True
    message_category: str | None = "message"
    memory_sources: bool = True  # a new memory made from its message (an edge into it)


def run_diary(path: Path, mistakes: Mistakes, trace_id: str = "diary") -> list[Finding]:
    entries: dict[str, Var] = {}
    with trace(path, trace_id, clock=SimClock("2024-01-01")):
        for n, (topic, text) in enumerate(DIARY):
            message = variable(f"line-{n}", text, category=mistakes.message_category)
            with operation("diary.extract_note"):
                read(message)
                if topic in entries:
                    if mistakes.overwrite == "mutation":
                        entries[topic] = mutation(entries[topic], text)
                    else:
                        old = entries[topic]
                        entries[topic] = variable(old.name, text)
                        write(entries[topic])
                else:
                    entries[topic] = variable(
                        f"note-{topic}",
                        text,
                        category=mistakes.memory_category,
                        sources=(message,) if mistakes.memory_sources else (),
                    )
                    write(entries[topic])
        for n, (case_id, question_text, gold) in enumerate(QUESTIONS):
            question = variable(case_id, question_text, category="query")
            with operation(mistakes.lookup_name):
                if mistakes.lookup_reads_question:
                    read(question)
                read(*entries.values())
                hits = [e for e in entries.values() if gold.lower() in "".join(e.name)]
                context = variable(f"context-{case_id}", [h.id for h in hits] or ["nothing"])
                write(context)
            with operation(mistakes.answer_name):
                if mistakes.answer_reads_question:
                    read(question)
                read(context)
                answer = variable(f"answer-{case_id}", "I do not know")
                write(answer)
            fields: dict[str, object] = {"id": case_id, "query": question.id}
            fields["prediction"] = answer.id
            if n < mistakes.scored:
                fields["judge_score"] = 0
            if mistakes.gold:
                fields["golden_answers"] = [gold]
            if mistakes.evidence:
                fields["evidence"] = [f"line-{2 if case_id == 'q-pet' else 1}@1"]
            case(**fields)
    return check_records(record for _, record in read_native(path))
