"""OTLP JSON trace files: the structure (validated with clear paths) and the spans in them.

A file is one OTLP ``ExportTraceServiceRequest`` as JSON (``{"resourceSpans": [...]}``) or JSON
Lines of them (what the Collector's file exporter writes). Ids may be hex (OTLP JSON) or base64
(protobuf's generic JSON mapping); attribute values are decoded to Python values.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from memtrace.errors import InputError
from memtrace.loaders.files import decode_json, read_text, validate
from memtrace.taxonomy import SPAN_STATUSES, SpanStatus

_HEX_TRACE = re.compile(r"^[0-9a-fA-F]{32}$")
_HEX_SPAN = re.compile(r"^[0-9a-fA-F]{16}$")
_INDEXED_KEY = re.compile(r"^(.+?)\.(\d+)\.(.+)$")  # prefix . N . rest (the first number)
M = TypeVar("M", bound=BaseModel)

# -- the OTLP JSON structure (unknown fields are ignored: OTLP grows) --------------------------


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")


class OtlpKeyValue(_Item):
    key: Annotated[str, Field(min_length=1, strict=True)]
    value: dict[str, Any] = Field(default_factory=dict)


class OtlpEvent(_Item):
    name: str = ""
    timeUnixNano: int | str | None = None
    attributes: list[OtlpKeyValue] = Field(default_factory=list)


class OtlpStatus(_Item):
    code: int | str = 0
    message: str = ""


class OtlpSpan(_Item):
    traceId: Annotated[str, Field(min_length=1, strict=True)]
    spanId: Annotated[str, Field(min_length=1, strict=True)]
    parentSpanId: str = ""
    name: Annotated[str, Field(min_length=1, strict=True)]
    kind: int | str = 0
    startTimeUnixNano: int | str
    endTimeUnixNano: int | str
    attributes: list[OtlpKeyValue] = Field(default_factory=list)
    events: list[OtlpEvent] = Field(default_factory=list)
    status: OtlpStatus = Field(default_factory=OtlpStatus)


class OtlpScopeSpans(_Item):
    scope: dict[str, Any] = Field(default_factory=dict)
    spans: list[Any] = Field(default_factory=list)


class OtlpResource(_Item):
    attributes: list[OtlpKeyValue] = Field(default_factory=list)


class OtlpResourceSpans(_Item):
    resource: OtlpResource = Field(default_factory=OtlpResource)
    scopeSpans: list[OtlpScopeSpans] = Field(default_factory=list)


class OtlpRequest(_Item):
    resourceSpans: list[Any]


def looks_like_otlp(head: bytes) -> bool:
    """Whether a file starting with ``head`` is OTLP JSON: its first key is ``resourceSpans``."""
    return re.match(rb'^\s*\{\s*"resourceSpans"\s*:', head) is not None


# -- reading ----------------------------------------------------------------------------------


@dataclass
class Span:
    """One validated span, its attributes decoded to Python values."""

    location: str
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status: SpanStatus
    resource: dict[str, Any]
    status_message: str = ""
    scope: str = ""  # the instrumentation scope's name: which package wrote the span
    depth: int = 0
    keys: dict[str, int] = field(default_factory=dict)  # attribute key -> index in the file
    _groups: dict[str, list[dict[str, Any]]] | None = field(default=None, repr=False)

    def indexed(self, prefix: str) -> list[dict[str, Any]]:
        """``prefix.N.rest = value`` attributes as a list of ``{rest: value}`` in N order. Every
        prefix is grouped on the first call (conventions ask a span for several)."""
        if self._groups is None:
            groups: dict[str, dict[int, dict[str, Any]]] = {}
            for key, value in self.attributes.items():
                match = _INDEXED_KEY.match(key)
                if match is not None:
                    items = groups.setdefault(match[1], {})
                    items.setdefault(int(match[2]), {})[match[3]] = value
            self._groups = {p: [items[i] for i in sorted(items)] for p, items in groups.items()}
        return self._groups.get(prefix, [])

    def attribute_location(self, key: str) -> str:
        """Where attribute ``key`` of this span is in the file, for errors."""
        return f"{self.location}.attributes[{self.keys.get(key, '?')}]"


def read_spans(file: Path) -> list[Span]:
    """The spans of a file: one OTLP JSON request, or JSON Lines of them."""
    path = str(file)
    text = read_text(file, "empty file: no OTLP trace data")
    try:
        return document_spans(json.loads(text), path)
    except json.JSONDecodeError:
        pass
    # JSON Lines: one ExportTraceServiceRequest per line (the Collector's file exporter)
    spans: list[Span] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            data = decode_json(line, path, str(number))
            spans += document_spans(data, path, f"line {number}: ")
    return spans


def document_spans(document: Any, path: str, prefix: str = "") -> list[Span]:
    """The validated spans of one decoded OTLP JSON ``ExportTraceServiceRequest``; ``path`` and
    ``prefix`` name it in errors."""
    spans: list[Span] = []
    request = validate(OtlpRequest, document, path, f"{prefix}$")
    for r, raw_resource in enumerate(request.resourceSpans):
        where = f"{prefix}resourceSpans[{r}]"
        resource = validate(OtlpResourceSpans, raw_resource, path, where)
        resource_attributes = _attributes(resource.resource.attributes, path, where)
        for s, scope in enumerate(resource.scopeSpans):
            scope_name = scope.scope.get("name")
            for i, raw_span in enumerate(scope.spans):
                location = f"{where}.scopeSpans[{s}].spans[{i}]"
                span = _span(raw_span, path, location, resource_attributes)
                span.scope = scope_name if isinstance(scope_name, str) else ""
                spans.append(span)
    return spans


def _span(data: Any, path: str, location: str, resource: dict[str, Any]) -> Span:
    span = validate(OtlpSpan, data, path, location)
    start = _nanos(span.startTimeUnixNano, path, f"{location}.startTimeUnixNano")
    end = _nanos(span.endTimeUnixNano, path, f"{location}.endTimeUnixNano")
    if end < start:
        raise InputError(path, f"{location}.endTimeUnixNano", "ends before it starts")
    # an all-zero parent is how some exporters write "no parent"; an all-zero trace or span id
    # is invalid (OpenTelemetry) and refused
    parent = "" if span.parentSpanId.strip("0") == "" else span.parentSpanId
    return Span(
        location=location,
        trace_id=_hex_id(span.traceId, 16, path, f"{location}.traceId"),
        span_id=_hex_id(span.spanId, 8, path, f"{location}.spanId"),
        parent_id=_hex_id(parent, 8, path, f"{location}.parentSpanId") if parent else None,
        name=span.name,
        start_ns=start,
        end_ns=end,
        attributes=_attributes(span.attributes, path, location),
        events=[
            (event.name, _attributes(event.attributes, path, f"{location}.events[{j}]"))
            for j, event in enumerate(span.events)
        ],
        status=_status(span.status.code, path, f"{location}.status.code"),
        status_message=span.status.message,
        resource=resource,
        keys={pair.key: i for i, pair in enumerate(span.attributes)},
    )


def _hex_id(value: str, size: int, path: str, location: str) -> str:
    """OTLP JSON ids are hex; protobuf's JSON mapping writes them base64: both are read."""
    if (_HEX_TRACE if size == 16 else _HEX_SPAN).match(value):
        raw = bytes.fromhex(value)
    else:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
    if len(raw) == size:
        if not any(raw):
            raise InputError(path, location, f"{value!r}: an all-zero id is invalid")
        return raw.hex()
    raise InputError(path, location, f"expected {2 * size} hex digits, got {value!r}")


def _status(code: int | str, path: str, location: str) -> SpanStatus:
    """OTLP's status code (0 / 1 / 2, or its enum name) in memtrace's words: UNSET / OK / ERROR."""
    name = str(code).upper().removeprefix("STATUS_CODE_")
    if name.isdigit() and int(name) < len(SPAN_STATUSES) and not isinstance(code, bool):
        return SPAN_STATUSES[int(name)]
    for status in SPAN_STATUSES:
        if name == status:
            return status
    raise InputError(
        path,
        location,
        f"unknown status code {code!r} (expected 0, 1, 2 or STATUS_CODE_UNSET, "
        "STATUS_CODE_OK, STATUS_CODE_ERROR)",
    )


def _nanos(value: int | str, path: str, location: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0 or isinstance(value, bool):
        raise InputError(path, location, f"expected nanoseconds since the epoch, got {value!r}")
    return number


def _attributes(pairs: list[OtlpKeyValue], path: str, location: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for i, pair in enumerate(pairs):
        found[pair.key] = _any_value(pair.value, path, f"{location}.attributes[{i}].value")
    return found


def _any_value(value: dict[str, Any], path: str, location: str) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if not value:
        return None
    ((kind, inner),) = list(value.items())[:1]
    if kind == "stringValue" and isinstance(inner, str):
        return inner
    if kind == "boolValue" and isinstance(inner, bool):
        return inner
    if kind == "intValue" and isinstance(inner, int | str) and not isinstance(inner, bool):
        try:
            return int(inner)
        except ValueError:
            pass
    if (
        kind == "doubleValue"
        and isinstance(inner, int | float | str)
        and not isinstance(inner, bool)
    ):
        try:
            return float(inner)
        except ValueError:
            pass
    if kind == "bytesValue" and isinstance(inner, str):
        return inner
    if kind == "arrayValue" and isinstance(inner, dict):
        items = inner.get("values", [])
        if isinstance(items, list):
            return [
                _any_value(item, path, f"{location}.values[{j}]")
                if isinstance(item, dict)
                else None
                for j, item in enumerate(items)
            ]
    if kind == "kvlistValue" and isinstance(inner, dict):
        items = inner.get("values", [])
        if isinstance(items, list) and all(isinstance(item, dict) for item in items):
            return {
                str(item.get("key")): _any_value(item.get("value") or {}, path, location)
                for item in items
            }
    raise InputError(path, location, f"not an OTLP AnyValue: {json.dumps(value)[:80]}")
