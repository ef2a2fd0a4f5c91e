"""Building OTLP JSON requests in tests: spans with attributes (and events) as OTLP encodes them."""

from __future__ import annotations

from typing import Any

TRACE = "0af7651916cd43dd8448eb211c80319c"
START = 1_700_000_000_000_000_000


def value(v: Any) -> dict[str, Any]:
    """A Python value as an OTLP ``AnyValue``."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def span(
    number: int, name: str, attributes: dict[str, Any], parent: int | None = None, **extra: Any
) -> dict[str, Any]:
    """Span ``number`` (its id) of one trace; ``extra`` sets OTLP fields (events, status...)."""
    found = {
        "traceId": TRACE,
        "spanId": f"{number:016x}",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(START + number * 1000),
        "endTimeUnixNano": str(START + number * 1000 + 500),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }
    if parent is not None:
        found["parentSpanId"] = f"{parent:016x}"
    found.update(extra)
    return found


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    """One ``ExportTraceServiceRequest`` holding the spans."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": value("my-memory")}]},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}],
            }
        ]
    }


def event(name: str, attributes: dict[str, Any], at: int = 0) -> dict[str, Any]:
    """A span event as OTLP JSON encodes it."""
    return {
        "name": name,
        "timeUnixNano": str(START + at),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }
