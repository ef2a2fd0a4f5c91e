"""The transport a request came or went by, in OpenTelemetry's HTTP and RPC semantic conventions:
a web service's SERVER root span (``http.request.method``, ``http.route``; ``http.method`` before
v1.23), an outgoing HTTP call, an RPC (``rpc.system``). Such a span moves the request, not a
memory: a known kind, ``other``, whose texts (if any) are read by the other conventions. Every
request of a traced web service has one, so counting them as unknown kind would say nothing."""

from __future__ import annotations

from typing import Final

from memtrace.loaders.otlp.conventions.shapes import Convention, nothing
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

TRANSPORT_KEYS: Final = ("http.request.method", "http.method", "http.route", "rpc.system")


def _kind(span: Span) -> Kind | None:
    return "other" if any(key in span.attributes for key in TRANSPORT_KEYS) else None


CONVENTION: Final = Convention("transport", _kind, nothing, nothing)
