"""cognee's own tracing (``COGNEE_TRACING_ENABLED=true``, cognee 1.6): memory spans
``memory.store`` / ``memory.process`` / ``memory.retrieve`` / ``memory.delete`` with
``memory.system`` / ``memory.operation`` and counts, no stored or retrieved content. They are
known kinds whose spans carry no content (``content_free``), said so apart from spans whose
content nothing read. Its model calls carry their content in Langfuse's attributes
(langfuse.py)."""

from __future__ import annotations

from typing import Final

from memtrace.loaders.otlp.conventions.shapes import Convention, lookup, nothing
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

MEMORY_SPAN_KINDS: Final[dict[str, Kind]] = {
    "memory.store": "embedding",  # adds data to the store
    "memory.process": "extraction",  # cognify: builds the knowledge graph from what is stored
    "memory.retrieve": "retrieval",
    "memory.delete": "deletion",
}


def _kind(span: Span) -> Kind | None:
    if span.name not in MEMORY_SPAN_KINDS and "memory.system" not in span.attributes:
        return None
    operation = span.attributes.get("memory.operation")
    by_operation = lookup(MEMORY_SPAN_KINDS, f"memory.{operation}" if operation else None)
    return lookup(MEMORY_SPAN_KINDS, span.name) or by_operation


def content_free(span: Span) -> bool:
    """A cognee memory span: it says what was done and how much, never with what."""
    return _kind(span) is not None


CONVENTION: Final = Convention("cognee", _kind, nothing, nothing)
