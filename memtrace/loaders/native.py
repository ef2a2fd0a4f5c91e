"""Streaming reader of native JSON Lines traces: one validated record per line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from memtrace.errors import InputError
from memtrace.loaders.models import (
    FORMAT_VERSION,
    AnyRecord,
    BodyRecord,
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
)

BODY_TYPES: Final[dict[str, type[BaseModel]]] = {
    "session": SessionRecord,
    "operation": OperationRecord,
    "variable": VariableRecord,
    "edge": EdgeRecord,
    "case": CaseRecord,
}

# Fast path for body lines: pydantic parses and validates the raw bytes in one call (no
# intermediate dicts). Any line it rejects goes through the slow path, whose checks and error
# messages are the contract; both paths accept exactly the same records.
_BODY: Final[TypeAdapter[BodyRecord]] = TypeAdapter(
    Annotated[BodyRecord, Field(discriminator="type")]
)


def describe_validation_error(kind: str, exc: ValidationError) -> str:
    """One line naming the first failing field (as a JSON path) and what is wrong with it."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    path = kind
    for part in first["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    message = first["msg"]
    if first["type"] == "missing":
        message = "required field is missing"
    elif first["type"] == "extra_forbidden":
        message = "unknown field (put extra data into 'metadata')"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{path}: {message}{more}"


def validate_record(path: str, location: str, data: Any, first: bool) -> AnyRecord:
    """Validate one decoded JSON value as a record; ``first`` is True for the trace line."""
    if not isinstance(data, dict):
        raise InputError(path, location, f"a record must be a JSON object, got {_json_type(data)}")
    kind = data.get("type")
    if kind is None:
        raise InputError(path, location, "record has no 'type' field")
    if first:
        if kind != "trace":
            raise InputError(
                path,
                location,
                f'the first record must be the trace record ({{"type": "trace", ...}}), '
                f"got type {kind!r}",
            )
        version = data.get("format_version")
        if version is not None and version != FORMAT_VERSION:
            raise InputError(
                path,
                location,
                f"unsupported format_version {version!r} (this memtrace reads {FORMAT_VERSION})",
            )
        model: type[BaseModel] = TraceRecord
    elif kind == "trace":
        raise InputError(path, location, "a second trace record: one trace per file")
    else:
        found = BODY_TYPES.get(kind) if isinstance(kind, str) else None
        if found is None:
            expected = ", ".join(BODY_TYPES)
            raise InputError(
                path, location, f"unknown record type {kind!r} (expected one of {expected})"
            )
        model = found
    try:
        record = model.model_validate(data)
    except ValidationError as exc:
        raise InputError(path, location, describe_validation_error(str(kind), exc)) from None
    return record  # type: ignore[return-value]


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def read_native(file: Path) -> Iterator[tuple[str, AnyRecord]]:
    """Yield ``(line number, record)``; the first record is the TraceRecord."""
    path = str(file)
    seen_any = False
    try:
        with file.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                location = str(number)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(path, location, f"not UTF-8 text ({exc.reason})") from None
                if not line.strip():
                    continue
                if seen_any:
                    try:
                        yield location, _BODY.validate_json(raw)
                        continue
                    except ValidationError:
                        pass  # the slow path below names the problem
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(
                        path, location, f"malformed JSON: {exc.msg} at column {exc.colno}"
                    ) from None
                yield location, validate_record(path, location, data, first=not seen_any)
                seen_any = True
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    if not seen_any:
        raise InputError(path, None, "empty file: no records (expected a trace record first)")
