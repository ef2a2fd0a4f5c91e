"""OTLP span attributes beyond a span's texts: categories, documents and GenAI memory records.

A span's kind and texts come from the conventions of conventions/; everything here is pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from memtrace.loaders.otlp.conventions import convention_kind
from memtrace.loaders.otlp.conventions.gen_ai import GEN_AI_MEMORY_KINDS
from memtrace.loaders.otlp.conventions.shapes import as_text
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

# the event each record of a memory operation has when the record names none (Mem0's
# ADD / UPDATE / DELETE / NONE, NONE = seen and left unchanged)
_MEMORY_EVENTS: Final[dict[str, str]] = {
    "create_memory": "ADD",
    "update_memory": "UPDATE",
    "upsert_memory": "ADD",
    "delete_memory": "DELETE",
    "search_memory": "NONE",
}
_RECORD_EVENTS: Final = ("ADD", "UPDATE", "DELETE", "NONE")
_DOC_TEXT_KEYS: Final = ("memory", "text", "content", "data")


def input_category(role: str | None, kind: Kind) -> str:
    if role in ("system", "developer"):
        return "prompt"
    if role in ("user", "human") or kind == "extraction":
        return "message"
    return "input"


def output_category(span: Span, kind: Kind) -> str:
    if kind == "retrieval":
        return "context"
    # an LLM call named for its purpose (memory_system.extract_facts) still writes a response
    llm = convention_kind(span) == "generation"
    return "llm_response" if llm or kind in ("generation", "judge") else "output"


def retrieved_documents(span: Span) -> list[tuple[str, str | None]]:
    """``retrieval.documents.N.document.{id,content}`` and ``reranker.input_documents`` with ids."""
    found: list[tuple[str, str | None]] = []
    for prefix in ("retrieval.documents", "reranker.input_documents"):
        for doc in span.indexed(prefix):
            doc_id = doc.get("document.id")
            if doc_id is not None:
                found.append((str(doc_id), as_text(doc.get("document.content"))))
    return found


def written_documents(value: Any) -> list[tuple[str, str | None, str]] | None:
    """Documents an output writes: Mem0's ``{"results": [{id, memory, event}]}`` shape (or a
    bare list of such objects). None when the output is not of that shape."""
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return None
    items = parsed.get("results") if isinstance(parsed, dict) else parsed
    if not isinstance(items, list) or not items:
        return None
    found: list[tuple[str, str | None, str]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            return None
        event = str(item.get("event") or "ADD").upper()
        text = next((item[k] for k in _DOC_TEXT_KEYS if isinstance(item.get(k), str)), None)
        if text is None and event not in ("DELETE", "NONE"):
            return None
        found.append((item["id"], text, event))
    return found


# -- OTel GenAI memory spans ------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryRecord:
    """One entry of ``gen_ai.memory.records`` (or the span's ``gen_ai.memory.record.id``)."""

    id: str
    content: str | None  # None when content capture was off
    score: float | None
    event: str  # ADD / UPDATE / DELETE / NONE


@dataclass(frozen=True)
class MemorySpan:
    """What a GenAI memory span says: its operation, the store (the scope) and its records."""

    operation: str
    store: str | None
    records: tuple[MemoryRecord, ...]


class AttributeProblem(ValueError):
    """An attribute of the wrong type or shape: ``key`` names it, the message says what is wrong."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key


def memory_span(span: Span) -> MemorySpan | None:
    """The GenAI memory operation of a span; None when ``gen_ai.operation.name`` names none.
    Raises AttributeProblem for a ``gen_ai.memory.*`` attribute of the wrong type."""
    attributes = span.attributes
    operation = attributes.get("gen_ai.operation.name")
    if not isinstance(operation, str) or operation not in GEN_AI_MEMORY_KINDS:
        return None
    for key in ("gen_ai.memory.store.id", "gen_ai.memory.query.text", "gen_ai.memory.record.id"):
        value = attributes.get(key)
        if value is not None and not isinstance(value, str):
            raise AttributeProblem(key, f"expected a string, got {_shown(value)}")
    store = attributes.get("gen_ai.memory.store.id")
    default_event = _MEMORY_EVENTS.get(operation, "NONE")
    records = _records(attributes.get("gen_ai.memory.records"), default_event)
    record_id = attributes.get("gen_ai.memory.record.id")
    if not records and isinstance(record_id, str):
        records = [MemoryRecord(record_id, None, None, default_event)]
    return MemorySpan(operation, store if isinstance(store, str) else None, tuple(records))


def _records(value: Any, default_event: str) -> list[MemoryRecord]:
    """``gen_ai.memory.records``: a JSON array of ``{id, content, metadata, score}`` as a string
    (the usual encoding) or as an OTLP array of key-value lists."""
    key = "gen_ai.memory.records"
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise AttributeProblem(key, f"malformed JSON ({exc.msg})") from None
    if not isinstance(value, list):
        raise AttributeProblem(key, f"expected a JSON array of records, got {_shown(value)}")
    records = []
    for j, item in enumerate(value):
        where = f"{key}[{j}]"
        if not isinstance(item, dict):
            raise AttributeProblem(where, f"expected a record object, got {_shown(item)}")
        record_id = item.get("id")
        if not isinstance(record_id, str) or not record_id:
            raise AttributeProblem(f"{where}.id", f"expected a string, got {_shown(record_id)}")
        content = item.get("content")
        if content is not None and not isinstance(content, str):
            raise AttributeProblem(f"{where}.content", f"expected a string, got {_shown(content)}")
        score = item.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise AttributeProblem(f"{where}.score", f"expected a number, got {_shown(score)}")
        metadata = item.get("metadata")
        event = item.get("event") or (metadata.get("event") if isinstance(metadata, dict) else None)
        event = str(event).upper() if event is not None else default_event
        if event not in _RECORD_EVENTS:
            raise AttributeProblem(f"{where}.event", f"expected one of {', '.join(_RECORD_EVENTS)}")
        records.append(
            MemoryRecord(record_id, content, float(score) if score is not None else None, event)
        )
    return records


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {json.dumps(value, default=str)[:40]}"
