"""OpenInference and OTel GenAI span attributes: a span's kind, inputs, outputs and documents.

The conventions memtrace reads are listed in docs/trace-format.md; everything here is pure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.otlp_json import Span
from memtrace.taxonomy import Kind

# OpenInference span kinds and OTel GenAI operation names -> memtrace kinds; used when the span
# name matches no rule of loaders/kinds.py (a name such as memory_system.extract_facts is more
# specific than "LLM").
OPENINFERENCE_KINDS: Final[dict[str, Kind]] = {
    "LLM": "generation",
    "RETRIEVER": "retrieval",
    "RERANKER": "retrieval",
    "EMBEDDING": "embedding",
    "EVALUATOR": "judge",
    "CHAIN": "other",
    "TOOL": "other",
    "AGENT": "other",
    "GUARDRAIL": "other",
}
GEN_AI_KINDS: Final[dict[str, Kind]] = {
    "chat": "generation",
    "text_completion": "generation",
    "generate_content": "generation",
    "embeddings": "embedding",
}
# OTel GenAI memory operations (semantic conventions, status Development). A create writes what
# an extraction produced into the store, as Mem0's add_to_vector_store does (kind embedding).
GEN_AI_MEMORY_KINDS: Final[dict[str, Kind]] = {
    "search_memory": "retrieval",
    "create_memory": "embedding",
    "update_memory": "update",
    "upsert_memory": "update",
    "delete_memory": "deletion",
    "create_memory_store": "other",
    "delete_memory_store": "deletion",
}
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
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


@dataclass(frozen=True)
class Io:
    """One input or output of a span: where it came from, its role and its text."""

    slot: str
    role: str | None
    text: str


# -- attribute conventions --------------------------------------------------------------------


def span_kind(span: Span) -> Kind:
    by_name = derive_kind(span.name, None)
    if by_name != "other":
        return by_name
    attributes = span.attributes
    span_kind = attributes.get("openinference.span.kind")
    if isinstance(span_kind, str) and span_kind.upper() in OPENINFERENCE_KINDS:
        return OPENINFERENCE_KINDS[span_kind.upper()]
    operation = attributes.get("gen_ai.operation.name")
    if isinstance(operation, str):
        kind = GEN_AI_KINDS.get(operation) or GEN_AI_MEMORY_KINDS.get(operation)
        if kind is not None:
            return kind
    return "other"


def input_category(role: str | None, kind: Kind) -> str:
    if role in ("system", "developer"):
        return "prompt"
    if role in ("user", "human") or kind == "extraction":
        return "message"
    return "input"


def output_category(span: Span, kind: Kind) -> str:
    if kind == "retrieval":
        return "context"
    attributes = span.attributes
    llm = attributes.get("openinference.span.kind") == "LLM" or (
        GEN_AI_KINDS.get(str(attributes.get("gen_ai.operation.name"))) == "generation"
    )
    return "llm_response" if llm or kind in ("generation", "judge") else "output"


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest = value`` attributes as a list of ``{rest: value}`` in N order."""
    found: dict[int, dict[str, Any]] = {}
    start = len(prefix) + 1
    for key, value in attributes.items():
        if key.startswith(prefix) and key[start - 1 : start] == ".":
            match = _INDEXED.match(key[start:])
            if match is not None:
                found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [found[i] for i in sorted(found)]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _message_text(message: dict[str, Any]) -> str | None:
    """OpenInference ``message.content`` / ``message.contents.N.message_content.text``."""
    content = message.get("message.content")
    if content is not None:
        return _text(content)
    parts = [v for k, v in sorted(message.items()) if k.endswith("message_content.text")]
    return "\n".join(str(p) for p in parts) if parts else None


def _gen_ai_messages(value: Any) -> list[tuple[str | None, str]]:
    """OTel GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return [(None, value)]
    if not isinstance(value, list):
        return []
    found: list[tuple[str | None, str]] = []
    for message in value:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if isinstance(message.get("content"), str):
            found.append((role, message["content"]))
            continue
        texts = [
            str(part.get("content"))
            for part in message.get("parts", [])
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        if texts:
            found.append((role, "\n".join(texts)))
    return found


def span_inputs(span: Span) -> list[Io]:
    attributes = span.attributes
    found: list[Io] = []
    for i, message in enumerate(_indexed(attributes, "llm.input_messages")):
        text = _message_text(message)
        if text is not None:
            role = message.get("message.role")
            found.append(Io(f"input_messages.{i}", str(role) if role else None, text))
    for i, (role, text) in enumerate(_gen_ai_messages(attributes.get("gen_ai.input.messages"))):
        found.append(Io(f"gen_ai.input.{i}", role, text))
    system = attributes.get("gen_ai.system_instructions")
    if system is not None:
        for i, (_, text) in enumerate(_gen_ai_messages(system)):
            found.append(Io(f"gen_ai.system.{i}", "system", text))
    for i, prompt in enumerate(_indexed(attributes, "gen_ai.prompt")):
        if prompt.get("content") is not None:
            found.append(
                Io(f"gen_ai.prompt.{i}", prompt.get("role"), _text(prompt["content"]) or "")
            )
    for i, (name, event) in enumerate(span.events):
        if name.startswith("gen_ai.") and name.endswith(".message") and "content" in event:
            role = name.removeprefix("gen_ai.").removesuffix(".message")
            found.append(Io(f"event.{i}", role, _text(event["content"]) or ""))
    for i, embedding in enumerate(_indexed(attributes, "embedding.embeddings")):
        text = embedding.get("embedding.text")
        if text is not None:
            found.append(Io(f"embedding.{i}", None, _text(text) or ""))
    query = attributes.get("gen_ai.memory.query.text")
    if isinstance(query, str):
        found.append(Io("gen_ai.memory.query", None, query))
    value = attributes.get("input.value")
    if value is not None:
        found.append(Io("input", None, _text(value) or ""))
    return _unique(found)


def span_outputs(span: Span, *, skip_output_value: bool) -> list[Io]:
    attributes = span.attributes
    found: list[Io] = []
    for i, message in enumerate(_indexed(attributes, "llm.output_messages")):
        text = _message_text(message)
        if text is not None:
            found.append(Io(f"output_messages.{i}", "assistant", text))
    for i, (role, text) in enumerate(_gen_ai_messages(attributes.get("gen_ai.output.messages"))):
        found.append(Io(f"gen_ai.output.{i}", role, text))
    for i, completion in enumerate(_indexed(attributes, "gen_ai.completion")):
        if completion.get("content") is not None:
            found.append(
                Io(f"gen_ai.completion.{i}", "assistant", _text(completion["content"]) or "")
            )
    for i, (name, event) in enumerate(span.events):
        if name == "gen_ai.choice":
            choice = event.get("message")
            content = choice.get("content") if isinstance(choice, dict) else event.get("content")
            if content is not None:
                found.append(Io(f"event.{i}", "assistant", _text(content) or ""))
    value = attributes.get("output.value")
    if value is not None and not skip_output_value:
        found.append(Io("output", None, _text(value) or ""))
    return _unique(found)


def _unique(found: list[Io]) -> list[Io]:
    """One input per text: the same text twice is one variable read once."""
    seen: set[str] = set()
    unique = []
    for io in found:
        if io.text not in seen:
            seen.add(io.text)
            unique.append(io)
    return unique


def retrieved_documents(attributes: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``retrieval.documents.N.document.{id,content}`` and ``reranker.input_documents`` with ids."""
    found: list[tuple[str, str | None]] = []
    for prefix in ("retrieval.documents", "reranker.input_documents"):
        for doc in _indexed(attributes, prefix):
            doc_id = doc.get("document.id")
            if doc_id is not None:
                found.append((str(doc_id), _text(doc.get("document.content"))))
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
