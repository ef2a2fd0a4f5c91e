"""Streaming reader of native JSON Lines traces: one validated record per line.

Format 2 differs from 1 only in that an operation may carry its edges inline; they are
expanded here into the ``EdgeRecord``s a format 1 file would hold, so everything downstream
sees the same records for both versions.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from memtrace.errors import InputError
from memtrace.loaders.files import decode_json, describe_validation_error
from memtrace.loaders.models import (
    AnyRecord,
    BodyRecord,
    BodyRecordV2,
    CaseRecord,
    EdgeRecord,
    InlineEdgesOperationRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
    inline_edge_id,
)
from memtrace.taxonomy import FORMAT_VERSIONS

BODY_TYPES: Final[dict[str, type[BaseModel]]] = {
    "session": SessionRecord,
    "operation": OperationRecord,
    "variable": VariableRecord,
    "edge": EdgeRecord,
    "case": CaseRecord,
}
BODY_TYPES_BY_VERSION: Final[dict[int, dict[str, type[BaseModel]]]] = {
    1: BODY_TYPES,
    2: {**BODY_TYPES, "operation": InlineEdgesOperationRecord},
}
_OPERATION_FIELDS: Final = tuple(OperationRecord.model_fields)

# Fast path for body lines: pydantic parses and validates the raw bytes in one call (no
# intermediate dicts). Any line it rejects goes through the slow path, whose checks and error
# messages are the contract; both paths accept exactly the same records.
_BODY: Final[dict[int, TypeAdapter[Any]]] = {
    1: TypeAdapter(Annotated[BodyRecord, Field(discriminator="type")]),
    2: TypeAdapter(Annotated[BodyRecordV2, Field(discriminator="type")]),
}


def truncated_hint(path: str) -> str:
    """What to say when a JSON Lines file's last line is cut off (a writer killed mid-line)."""
    return (
        "the file looks truncated: its last line is incomplete (no newline at its end). "
        "If a traced process was killed, cut the torn line off and load the rest with "
        f"`python -c \"from memtrace.tracing import complete_prefix; complete_prefix('{path}')\"` "
        "(this shortens the file in place)"
    )


def _torn(path: str) -> Callable[[json.JSONDecodeError], str]:
    return lambda _: truncated_hint(path)


def validate_record(path: str, location: str, data: Any, version: int | None) -> AnyRecord:
    """Validate one decoded JSON value as a record of a file of ``format_version`` ``version``;
    ``version`` is None for the first line, the trace record."""
    if not isinstance(data, dict):
        raise InputError(path, location, f"a record must be a JSON object, got {_json_type(data)}")
    kind = data.get("type")
    if kind is None:
        raise InputError(path, location, "record has no 'type' field")
    if version is None:
        if kind != "trace":
            raise InputError(
                path,
                location,
                f'the first record must be the trace record ({{"type": "trace", ...}}), '
                f"got type {kind!r}",
            )
        found_version = data.get("format_version")
        if found_version is not None and found_version not in FORMAT_VERSIONS:
            known = " and ".join(map(str, FORMAT_VERSIONS))
            raise InputError(
                path,
                location,
                f"unsupported format_version {found_version!r} (this memtrace reads {known})",
            )
        model: type[BaseModel] = TraceRecord
    elif kind == "trace":
        raise InputError(path, location, "a second trace record: one trace per file")
    else:
        types = BODY_TYPES_BY_VERSION[version]
        found = types.get(kind) if isinstance(kind, str) else None
        if found is None:
            expected = ", ".join(types)
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
    """Yield ``(location, record)``; the first record is the TraceRecord.

    The location is the line number; an inline edge (format 2) is at ``<line>.edges[<i>]``.
    """
    path = str(file)
    version: int | None = None  # None until the trace record has been read
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
                record: AnyRecord | None = None
                if version is not None:
                    with contextlib.suppress(ValidationError):  # the slow path names the problem
                        record = _BODY[version].validate_json(raw)
                if record is None:
                    # only the last line can lack its newline: a writer killed mid-line
                    torn = None if raw.endswith(b"\n") else _torn(path)
                    data = decode_json(line, path, location, torn)
                    record = validate_record(path, location, data, version)
                if isinstance(record, TraceRecord):
                    version = record.format_version
                if isinstance(record, InlineEdgesOperationRecord):
                    yield from _expand(location, record)
                else:
                    yield location, record
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    if version is None:
        raise InputError(path, None, "empty file: no records (expected a trace record first)")


def _expand(
    location: str, op: InlineEdgesOperationRecord
) -> Iterator[tuple[str, OperationRecord | EdgeRecord]]:
    """The operation without its inline edges, then one ``EdgeRecord`` per edge."""
    yield (
        location,
        OperationRecord.model_construct(**{name: getattr(op, name) for name in _OPERATION_FIELDS}),
    )
    for i, (source, target) in enumerate(op.edges):
        yield (
            f"{location}.edges[{i}]",
            EdgeRecord.model_construct(
                type="edge", id=inline_edge_id(op.id, i + 1), op=op.id, source=source, target=target
            ),
        )
