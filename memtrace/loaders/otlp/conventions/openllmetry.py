"""OpenLLMetry (Traceloop): indexed gen_ai.prompt.N / gen_ai.completion.N (also Strands'), and
the traceloop.entity.* texts of its decorators and framework instrumentations."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Final

from memtrace.loaders.otlp.conventions.shapes import (
    ContentSwitch,
    Convention,
    Io,
    as_text,
    lookup,
    parts_text,
    says_nothing,
)
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

# OpenLLMetry (Traceloop): ``llm.request.type`` on LLM spans, ``traceloop.span.kind`` on the
# spans of its workflow / task / agent / tool decorators and of the frameworks it instruments.
LLM_REQUEST_KINDS: Final[dict[str, Kind]] = {
    "chat": "generation",
    "completion": "generation",
    "embedding": "embedding",
    "rerank": "retrieval",
}
TRACELOOP_KINDS: Final[dict[str, Kind]] = {
    "workflow": "other",
    "task": "other",
    "agent": "other",
    "tool": "other",
}
# The Vercel AI SDK names each span by its operation (``ai.operationId``); a provider call is


def _openllmetry_kind(span: Span) -> Kind | None:
    attributes = span.attributes
    return lookup(LLM_REQUEST_KINDS, attributes.get("llm.request.type")) or lookup(
        TRACELOOP_KINDS, attributes.get("traceloop.span.kind")
    )


def _indexed_text(item: dict[str, Any]) -> str | None:
    """``content`` (OpenLLMetry), ``content.M.text`` parts (Strands, flattened) or ``text``."""
    if item.get("content") is not None:
        return parts_text(item["content"])
    parts = sorted(
        (int(match.group(1)), value)
        for key, value in item.items()
        if (match := re.fullmatch(r"content\.(\d+)\.text", key)) and isinstance(value, str)
    )
    if parts:
        return "\n".join(text for _, text in parts)
    text = item.get("text")
    return text if isinstance(text, str) else None


def _indexed_inputs(span: Span) -> Iterator[Io]:
    for i, prompt in enumerate(span.indexed("gen_ai.prompt")):
        text = _indexed_text(prompt)
        if text is not None:
            role = prompt.get("role")
            yield Io(f"gen_ai.prompt.{i}", str(role) if role is not None else None, text)


def _indexed_outputs(span: Span) -> Iterator[Io]:
    for i, completion in enumerate(span.indexed("gen_ai.completion")):
        text = _indexed_text(completion)
        if text is not None:
            yield Io(f"gen_ai.completion.{i}", "assistant", text)


def _entity_texts(value: Any, keys: tuple[str, ...]) -> list[str]:
    """The texts of ``traceloop.entity.input`` / ``output``: JSON of a decorated function's
    arguments (``{"args": [...], "kwargs": {...}}``) or of a framework's ``{"inputs": ...}`` /
    ``{"outputs": ...}`` (the first of ``keys`` present). Each argument is a text of its own (a
    question passed as an argument is then the same variable as the message that carries it)."""
    parsed = value
    if isinstance(value, str):  # always JSON: a returned string is written as a JSON string
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
    present = [key for key in keys if isinstance(parsed, dict) and key in parsed]
    if not present:
        text = as_text(parsed)
        return [text] if text else []
    assert isinstance(parsed, dict)
    # a framework's step (LangChain's ``{"inputs"}``, a retriever's ``{"query"}``) gives its
    # value; a decorated function its arguments
    chosen = present[:1] if present[0] in ("inputs", "outputs", "query") else present
    items: list[Any] = []
    for key in chosen:
        inner = parsed[key]
        if isinstance(inner, dict):
            items.extend(inner.values())
        elif isinstance(inner, list):
            items.extend(inner)
        elif inner is not None:
            items.append(inner)
    return [text for text in map(as_text, items) if text]


def _entity_inputs(span: Span) -> Iterator[Io]:
    value = span.attributes.get("traceloop.entity.input")
    texts = _entity_texts(value, ("inputs", "query", "args", "kwargs"))
    for i, text in enumerate(texts):
        yield Io(f"traceloop.input.{i}", None, text)


def _entity_outputs(span: Span) -> Iterator[Io]:
    texts = _entity_texts(span.attributes.get("traceloop.entity.output"), ("outputs",))
    for i, text in enumerate(texts):
        yield Io(f"traceloop.output.{i}", None, text)


CONVENTIONS: Final = (
    Convention("openllmetry", _openllmetry_kind, _indexed_inputs, _indexed_outputs),
    Convention("traceloop_entity", says_nothing, _entity_inputs, _entity_outputs),
)

# OpenLLMetry logs prompts and completions unless TRACELOOP_TRACE_CONTENT=false
# (https://traceloop.com/docs/openllmetry/privacy/traces)
SWITCH: Final = ContentSwitch(
    "OpenLLMetry (Traceloop)",
    lambda span: _openllmetry_kind(span) is not None,
    "TRACELOOP_TRACE_CONTENT=true (the default; false keeps prompts and completions off the "
    "spans), or Traceloop.init(trace_content=True)",
)
