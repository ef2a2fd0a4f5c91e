"""What the framework capture apps (tests/langchain_app.py, tests/llamaindex_app.py) remember and
are asked, the replies the local endpoint gives them, and the failures planted in those replies,
written down before memtrace reads a capture.

Each app runs one conversation through three model calls per message (extract a fact, decide
what to do with it given the notes held, answer questions from retrieved notes) and keeps its
notes in a plain dict it reports as GenAI memory spans (``create_memory`` / ``update_memory`` /
``delete_memory``), as an app using a framework without a memory store instrumentation does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fake_openai import Reply

# user message -> the fact the extractor replies with (a planted failure drops what matters)
MESSAGES: dict[str, str] = {
    "I put the green bin out on Thursday evenings.": "The green bin goes out on Thursday evenings.",
    "My dentist appointment is on 14 March at 9:30.": "The user has a dentist appointment.",
    "Paper recycling is collected on alternate Mondays.": (
        "Paper recycling is on alternate Mondays."
    ),
    "My sister Ana lives in Porto.": "Ana, the user's sister, lives in Porto.",
    "The plumber's number is 555-0142.": "The plumber's number is 555-0142.",
    "The spare key is under the blue flowerpot.": "The spare key is under the blue flowerpot.",
    "Ana moved from Porto to Lisbon last month.": "Ana moved from Porto to Lisbon last month.",
    "The car insurance is due in May.": "The car insurance is due in May.",
    "My gym membership renews on 1 June.": "The gym membership renews on 1 June.",
    "I sold my old bike.": "The user sold the old bike.",
}
# fact -> the decision the model replies with: an event on a note (the note it names is the
# note whose text is given, looked up by the app's own ids)
DECISIONS: dict[str, tuple[str, str | None, str | None]] = {
    # event, text of the note it concerns, new text
    "Ana moved from Porto to Lisbon last month.": (
        "UPDATE",
        "Ana, the user's sister, lives in Porto.",
        "The user has a sister, Ana.",
    ),
    "The user sold the old bike.": ("DELETE", "The spare key is under the blue flowerpot.", None),
}


@dataclass(frozen=True)
class Planted:
    """One failure planted before the capture: the question, its golden answer, the message
    holding it, and the operation that should be blamed, named by what it does (``extract``,
    ``decide``: the model call of that chain for ``message``; ``retrieve``, ``answer``: the
    retriever / the answering model call of the question) with the error type."""

    case_id: str
    question: str
    golden: str
    message: str
    error_type: str
    blamed: str
    reply: str  # what the answering model replies
    decided_for: str = ""  # ``decide``: the message whose decision is blamed (default: message)


PLANTED: tuple[Planted, ...] = (
    Planted(
        "fw-1",
        "When is my dentist appointment?",
        "14 March",
        "My dentist appointment is on 14 March at 9:30.",
        "ExtractionError",
        "extract",
        "I don't know.",
    ),
    Planted(
        "fw-2",
        "Where does Ana live now?",
        "Lisbon",
        "Ana moved from Porto to Lisbon last month.",
        "UpdateError",
        "decide",
        "I don't know.",
    ),
    Planted(
        "fw-3",
        "Where is the spare key?",
        "flowerpot",
        "The spare key is under the blue flowerpot.",
        "DeletionError",
        "decide",
        "I don't know.",
        decided_for="I sold my old bike.",
    ),
    Planted(
        "fw-4",
        "Which night is rubbish collection?",
        "Thursday",
        "I put the green bin out on Thursday evenings.",
        "RetrievalError",
        "retrieve",
        "I don't know.",
    ),
    Planted(
        "fw-5",
        "When is my fitness club subscription due?",
        "1 June",
        "My gym membership renews on 1 June.",
        "RetrievalError",
        "retrieve",
        "I don't know.",
    ),
    Planted(
        "fw-6",
        "What is the plumber's number?",
        "555-0142",
        "The plumber's number is 555-0142.",
        "ResponseError",
        "answer",
        "555-0199.",
    ),
    Planted(
        "fw-7",
        "When is paper recycling collected?",
        "alternate Mondays",
        "Paper recycling is collected on alternate Mondays.",
        "ResponseError",
        "answer",
        "Every Friday.",
    ),
)
# a question answered right (no failure, no verdict)
RIGHT = Planted(
    "fw-8",
    "When is the car insurance due?",
    "May",
    "The car insurance is due in May.",
    "",
    "",
    "In May.",
)
QUESTIONS = (*PLANTED, RIGHT)

EXTRACT_INSTRUCTIONS = "Extract the one fact worth remembering from the user's message."
DECIDE_INSTRUCTIONS = (
    'Given the notes held and a new fact, reply with JSON {"event": "ADD"|"UPDATE"|"DELETE", '
    '"id": note id or null, "text": the note\'s new text or null}.'
)
ANSWER_INSTRUCTIONS = "Answer the question from the context only, in a few words."


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def matching(notes: dict[str, str], query: str, k: int = 2) -> list[tuple[str, str]]:
    """The notes sharing the most words of four letters or more with ``query`` (at most k)."""
    scored = [(len(words(text) & words(query)), key, text) for key, text in notes.items()]
    return [(key, text) for score, key, text in sorted(scored, key=lambda s: -s[0]) if score][:k]


class Replies:
    """The endpoint's answers, chosen by the request's last user message (the apps' chains may
    run in any order): the extraction, the decision, the answer."""

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        prompt = "\n".join(
            m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
            for m in body.get("messages", ())
        )
        if EXTRACT_INSTRUCTIONS in prompt:
            return next(
                Reply(content=fact) for message, fact in MESSAGES.items() if message in prompt
            )
        if DECIDE_INSTRUCTIONS in prompt:
            fact = (
                next(fact for fact in DECISIONS if f"New fact: {fact}" in prompt)
                if any(f"New fact: {fact}" in prompt for fact in DECISIONS)
                else None
            )
            if fact is None:
                return Reply(content=json.dumps({"event": "ADD", "id": None, "text": None}))
            event, old, new = DECISIONS[fact]
            note_id = re.search(r"\[(note-\d+)\] " + re.escape(old or ""), prompt)
            return Reply(
                content=json.dumps(
                    {"event": event, "id": note_id and note_id.group(1), "text": new}
                )
            )
        if ANSWER_INSTRUCTIONS in prompt:
            return next(Reply(content=q.reply) for q in QUESTIONS if q.question in prompt)
        return None


class Notes:
    """The app's notes (id -> text), each change reported as a GenAI memory span."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.held: dict[str, str] = {}
        self.added = 0

    def listing(self) -> str:
        return "\n".join(f"[{key}] {text}" for key, text in self.held.items()) or "(none)"

    def apply(self, fact: str, decision: dict[str, Any]) -> None:
        event, note_id = decision.get("event", "ADD"), decision.get("id")
        if event == "ADD" or note_id not in self.held:
            self.added += 1
            note_id = f"note-{self.added}"
            self._span("create_memory", note_id, fact)
            self.held[note_id] = fact
        elif event == "UPDATE":
            self._span("update_memory", note_id, decision["text"])
            self.held[note_id] = decision["text"]
        else:
            self._span("delete_memory", note_id, None)
            del self.held[note_id]

    def _span(self, operation: str, note_id: str, text: str | None) -> None:
        with self.tracer.start_as_current_span(f"{operation} notes") as span:
            span.set_attribute("gen_ai.operation.name", operation)
            span.set_attribute("gen_ai.memory.store.id", "notes")
            record: dict[str, Any] = {"id": note_id}
            if text is not None:
                record["content"] = text
            span.set_attribute("gen_ai.memory.records", json.dumps([record]))


def mark_case(span: Any, case: Planted) -> None:
    """``memtrace.case.*`` on the app's span around one question (docs/trace-format.md)."""
    span.set_attribute("memtrace.case.id", case.case_id)
    span.set_attribute("memtrace.case.question", case.question)
    span.set_attribute("memtrace.case.golden_answers", [case.golden])
    span.set_attribute("memtrace.case.evidence", [case.message])


def score_case(span: Any, case: Planted, reply: str) -> None:
    span.set_attribute(
        "memtrace.case.judge_score", 1.0 if case.golden.lower() in reply.lower() else 0.0
    )
