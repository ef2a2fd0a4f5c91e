"""An OTLP/HTTP trace request body -> its spans grouped by trace, as OTLP JSON (pure).

Both encodings the OTLP/HTTP specification allows are read: binary protobuf
(``application/x-protobuf``) and JSON (``application/json``, ids in hex), either optionally
gzip-compressed. Each trace's spans keep their resource and scope, so a trace's group is itself
an ``ExportTraceServiceRequest`` in OTLP JSON: the document ``memtrace load`` reads from a file.

A body that cannot be read at all is a ``BadRequest`` (the receiver answers 400 with the reason, 413
for one over the size limit, and nothing of it is kept). A span that can be read but not loaded (an
invalid id, an end before its start, no name) is rejected on its own, with its reason: the OTLP
partial success."""

from __future__ import annotations

import base64
import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any, Literal

from memtrace.errors import ConfigError

try:
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from google.rpc.status_pb2 import Status
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
except ImportError as missing:  # pragma: no cover - depends on the installed extras
    raise ConfigError(
        f"memtrace collect needs the 'collect' extra ({missing.name} is missing): "
        "pip install 'memtrace-graph[collect]'"
    ) from None

__all__ = ["ExportTraceServiceResponse", "MessageToDict", "Status"]  # the answers (app.py)

Encoding = Literal["protobuf", "json"]
CONTENT_TYPES: dict[str, Encoding] = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
_HEX = re.compile(r"^[0-9a-f]*$")
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class BadRequest(Exception):
    """The body cannot be read; the message is the reason the client gets with its 400."""


class TooLarge(BadRequest):
    """The body is over the size limit, compressed or once inflated (HTTP 413)."""


@dataclass
class TraceGroup:
    """The accepted spans of one trace from one request, as an OTLP JSON request document."""

    trace_id: str  # 32 lower-case hex digits
    document: dict[str, Any]
    spans: int = 0
    has_root: bool = False  # a span without a parent (exported once ended)


@dataclass
class Decoded:
    groups: list[TraceGroup] = field(default_factory=list)
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)  # distinct, at most a few, for the client

    @property
    def accepted(self) -> int:
        return sum(group.spans for group in self.groups)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if reason not in self.reasons and len(self.reasons) < 5:
            self.reasons.append(reason)


def encoding_of(content_type: str | None) -> Encoding:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media not in CONTENT_TYPES:
        raise BadRequest(
            f"unsupported Content-Type {content_type!r}: OTLP/HTTP sends application/x-protobuf "
            "or application/json"
        )
    return CONTENT_TYPES[media]


def decompress(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    """The body without its Content-Encoding (identity or gzip), at most ``max_bytes`` long."""
    coding = (content_encoding or "identity").strip().lower()
    if coding == "identity":
        if len(body) > max_bytes:
            raise TooLarge(f"body of {len(body)} bytes is over the limit of {max_bytes}")
        return body
    if coding != "gzip":
        raise BadRequest(f"unsupported Content-Encoding {content_encoding!r} (gzip or none)")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, max_bytes + 1)
        if len(data) > max_bytes:
            raise TooLarge(f"gzip body inflates to over the limit of {max_bytes} bytes")
        data += inflater.flush()
    except zlib.error as exc:
        raise BadRequest(f"malformed gzip body: {exc}") from None
    if not inflater.eof or inflater.unused_data:
        raise BadRequest("malformed gzip body: truncated, or data after its end")
    return data


def decode(body: bytes, encoding: Encoding) -> Decoded:
    """Parse an ``ExportTraceServiceRequest`` and group its valid spans by trace."""
    if encoding == "protobuf":
        return group_spans(_from_protobuf(body))
    try:
        document = json.loads(body)
    except UnicodeDecodeError:
        raise BadRequest("malformed JSON body: not UTF-8") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, ValueError) else ""
        raise BadRequest(f"malformed JSON body: {getattr(exc, 'msg', exc)}{where}") from None
    return group_spans(document)


def _from_protobuf(body: bytes) -> dict[str, Any]:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as exc:
        raise BadRequest(f"malformed protobuf body: {exc}") from None
    # OTLP JSON is protobuf's JSON mapping with enums as integers and ids in hex (not base64).
    document: dict[str, Any] = MessageToDict(request, use_integers_for_enums=True)
    for resource in document.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                for key in _ID_FIELDS:
                    if key in span:
                        span[key] = _base64_hex(span[key])
                for link in span.get("links", ()):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = _base64_hex(link[key])
    return document


def _base64_hex(value: str) -> str:
    return base64.b64decode(value).hex()


def group_spans(document: Any) -> Decoded:
    """Group the spans of a parsed OTLP JSON request by trace, rejecting the invalid ones."""
    if not isinstance(document, dict):
        raise BadRequest("expected a JSON object (an ExportTraceServiceRequest)")
    resources = document.get("resourceSpans", [])
    if not isinstance(resources, list):
        raise BadRequest("resourceSpans: expected a list")
    decoded = Decoded()
    # trace id -> (resource index, scope index) -> that trace's spans there, in request order
    found: dict[str, dict[tuple[int, int], list[Any]]] = {}
    groups: dict[str, TraceGroup] = {}
    for r, resource_spans in enumerate(resources):
        if not isinstance(resource_spans, dict):
            raise BadRequest(f"resourceSpans[{r}]: expected an object")
        scopes = resource_spans.get("scopeSpans", [])
        if not isinstance(scopes, list):
            raise BadRequest(f"resourceSpans[{r}].scopeSpans: expected a list")
        for s, scope_spans in enumerate(scopes):
            spans = scope_spans.get("spans", []) if isinstance(scope_spans, dict) else None
            if not isinstance(spans, list):
                raise BadRequest(f"resourceSpans[{r}].scopeSpans[{s}]: expected spans as a list")
            for span in spans:
                problem = span_problem(span)
                if problem is not None:
                    decoded.reject(problem)
                    continue
                trace_id = span["traceId"].lower()
                span["traceId"] = trace_id
                found.setdefault(trace_id, {}).setdefault((r, s), []).append(span)
                group = groups.get(trace_id)
                if group is None:
                    group = groups[trace_id] = TraceGroup(trace_id, {})
                group.spans += 1
                group.has_root = group.has_root or not span.get("parentSpanId")
    for trace_id, places in found.items():
        by_resource: dict[int, list[dict[str, Any]]] = {}
        for (r, s), spans in places.items():
            scope = {k: v for k, v in resources[r]["scopeSpans"][s].items() if k != "spans"}
            by_resource.setdefault(r, []).append({**scope, "spans": spans})
        groups[trace_id].document = {
            "resourceSpans": [
                {
                    **{k: v for k, v in resources[r].items() if k != "scopeSpans"},
                    "scopeSpans": scopes,
                }
                for r, scopes in by_resource.items()
            ]
        }
    decoded.groups = list(groups.values())
    return decoded


def span_problem(span: Any) -> str | None:
    """Why a span cannot be loaded (None: it can), in the words the client gets back."""
    if not isinstance(span, dict):
        return "a span is not an object"
    trace_id, span_id = span.get("traceId"), span.get("spanId")
    if not _valid_id(trace_id, 32):
        return f"traceId {trace_id!r}: expected 32 hex digits, not all zero"
    if not _valid_id(span_id, 16):
        return f"spanId {span_id!r}: expected 16 hex digits, not all zero"
    parent = span.get("parentSpanId") or ""
    if parent and not _valid_id(parent, 16):
        return f"parentSpanId {parent!r}: expected 16 hex digits or nothing"
    if not isinstance(span.get("name"), str) or not span["name"]:
        return f"span {span_id}: no name"
    start, end = _nanos(span.get("startTimeUnixNano")), _nanos(span.get("endTimeUnixNano"))
    if start is None or end is None:
        return f"span {span_id}: start and end times must be nanoseconds since the epoch"
    if end < start:
        return f"span {span_id}: ends before it starts"
    return None


def _valid_id(value: Any, digits: int) -> bool:
    return (
        isinstance(value, str)
        and len(value) == digits
        and _HEX.match(value.lower()) is not None
        and value.strip("0") != ""
    )


def _nanos(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number >= 0 else None
