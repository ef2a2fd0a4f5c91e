"""OpenTelemetry traces (OTLP JSON) -> memtrace records: ``reader.py`` converts spans into
operations, variables and cases; ``spans.py`` reads and validates the files; ``conventions/``
says what each instrumentation family's span is and which texts went in and out;
``attributes.py`` reads documents and GenAI memory records. docs/trace-format.md has the
mapping."""

from memtrace.loaders.otlp.reader import (
    UNKNOWN_KIND_SPANS,
    UNREAD_CONTENT_SPANS,
    LabeledQuestion,
    Labels,
    looks_like_otlp,
    otlp_trace_id,
    read_otlp,
    read_otlp_document,
)

__all__ = [
    "UNKNOWN_KIND_SPANS",
    "UNREAD_CONTENT_SPANS",
    "LabeledQuestion",
    "Labels",
    "looks_like_otlp",
    "otlp_trace_id",
    "read_otlp",
    "read_otlp_document",
]
