"""Langfuse's OpenTelemetry conventions (the Langfuse SDK v3 and later is built on OpenTelemetry;
libraries that trace through it, cognee 1.6's model calls for one, put their content there
only): ``langfuse.observation.type`` / ``.input`` / ``.output`` / ``.model.name``, trace-level
``langfuse.trace.*``, and the session and user ids (``langfuse.session.id`` /
``langfuse.user.id``, or the plain ``session.id`` / ``user.id`` the JS SDK v4 writes)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Final

from memtrace.loaders.otlp.conventions.shapes import (
    Convention,
    Io,
    as_text,
    json_decoded,
    lookup,
    messages,
)
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

OBSERVATION_KINDS: Final[dict[str, Kind]] = {
    "generation": "generation",
    "embedding": "embedding",
    "retriever": "retrieval",
    "evaluator": "judge",
    "span": "other",
    "event": "other",
    "agent": "other",
    "tool": "other",
    "chain": "other",
    "guardrail": "other",
}
SESSION_KEYS: Final = ("langfuse.session.id", "session.id")
USER_KEYS: Final = ("langfuse.user.id", "user.id")


def _kind(span: Span) -> Kind | None:
    value = span.attributes.get("langfuse.observation.type")
    return lookup(OBSERVATION_KINDS, value.lower() if isinstance(value, str) else None)


def _texts(span: Span, key: str, role: str | None) -> Iterator[Io]:
    """An observation's input or output: chat messages (a list, or one message object) read
    as messages, any other value as one text."""
    value = span.attributes.get(key)
    if value is None:
        return
    decoded = json_decoded(value)
    if isinstance(decoded, str) and decoded[:1] == '"':  # the SDK serialises every value
        with contextlib.suppress(json.JSONDecodeError):
            decoded = json.loads(decoded)
    chat = isinstance(decoded, list) and all(isinstance(m, dict) and "role" in m for m in decoded)
    if chat or (isinstance(decoded, dict) and "role" in decoded and "content" in decoded):
        for i, (own_role, said) in enumerate(messages(decoded)):
            yield Io(f"{key}.{i}", own_role or role, said)
        return
    text: str | None = decoded if isinstance(decoded, str) else as_text(value)
    if text:
        yield Io(key, role, text)


def _inputs(span: Span) -> Iterator[Io]:
    yield from _texts(span, "langfuse.observation.input", None)


def _outputs(span: Span) -> Iterator[Io]:
    generation = _kind(span) == "generation"
    yield from _texts(span, "langfuse.observation.output", "assistant" if generation else None)


CONVENTION: Final = Convention("langfuse", _kind, _inputs, _outputs)
