"""Validated trace records, shared by both input formats (docs/trace-format.md)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt

from memtrace.taxonomy import Kind, LabelType

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_META_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def parse_timestamp(text: str) -> int:
    """Microseconds since the epoch (UTC) of an ISO 8601 / smartcomment timestamp."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"bad timestamp {text!r}: expected ISO 8601 or 'YYYY-MM-DD HH:MM:SS.mmm'"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _check_timestamp(text: str) -> str:
    parse_timestamp(text)
    return text


Id = Annotated[str, Field(min_length=1, max_length=1024, strict=True)]
# Neo4j integers are 64-bit: a larger one would pass here and fail half-way through the write.
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
Text = Annotated[str | None, Field(strict=True)]
Timestamp = Annotated[str, Field(strict=True), AfterValidator(_check_timestamp)]
Metadata = dict[str, Any]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TraceRecord(Record):
    type: Literal["trace"]
    format_version: Literal[1, 2]
    id: Id
    system: Text = None
    dataset: Text = None
    user_id: Text = None
    created_at: Timestamp | None = None
    metadata: Metadata = Field(default_factory=dict)


class SessionRecord(Record):
    type: Literal["session"]
    id: Id
    name: Text = None
    category: Text = None
    created_at: Timestamp | None = None
    comment: Text = None
    metadata: Metadata = Field(default_factory=dict)


class OperationRecord(Record):
    type: Literal["operation"]
    id: Id
    name: Annotated[str, Field(min_length=1, strict=True)]
    kind: Kind | None = None
    category: Text = None
    session: Id | None = None
    created_at: Timestamp
    seq: Annotated[StrictInt, Field(ge=0)] | None = None
    reads: list[Id] = Field(default_factory=list)
    writes: list[Id] = Field(default_factory=list)
    comment: Text = None
    filename: Text = None
    lineno: Int64 | None = None
    metadata: Metadata = Field(default_factory=dict)


class InlineEdgesOperationRecord(OperationRecord):
    """Format 2: an operation may carry its exact flows as ``edges: [[source, target], ...]``.

    The reader turns them into ``EdgeRecord``s right after the ``OperationRecord`` (ids from
    ``inline_edge_id``), the same records a format 1 file spells out as separate lines.
    """

    edges: list[tuple[Id, Id]] = Field(default_factory=list)


def inline_edge_id(op_id: str, number: int) -> str:
    """The id of an operation's ``number``-th (from 1) inline edge."""
    return f"{op_id}/edge-{number}"


class VariableRecord(Record):
    type: Literal["variable"]
    id: Id
    name: Annotated[str, Field(min_length=1, strict=True)]
    version: Annotated[StrictInt, Field(ge=1, le=2**63 - 1)] = 1
    category: Text = None
    class_name: Text = None
    value: Text = None
    created_at: Timestamp
    session: Id | None = None
    seq: Annotated[StrictInt, Field(ge=0)] | None = None
    comment: Text = None
    filename: Text = None
    lineno: Int64 | None = None
    metadata: Metadata = Field(default_factory=dict)

    @property
    def is_marker(self) -> bool:
        return self.class_name == "delete_marker" or self.category == "marker"


class EdgeRecord(Record):
    type: Literal["edge"]
    id: Id
    op: Id
    source: Id
    target: Id
    category: Text = None
    created_at: Timestamp | None = None
    comment: Text = None
    filename: Text = None
    lineno: Int64 | None = None
    metadata: Metadata = Field(default_factory=dict)


class Label(Record):
    op_id: Id
    error_type: LabelType
    reason: Text = None
    source: Annotated[str, Field(strict=True)] = "annotation"
    metadata: Metadata = Field(default_factory=dict)


class CaseRecord(Record):
    type: Literal["case"]
    id: Id
    query: Id
    query_text: Text = None
    prediction: Id | None = None
    prediction_text: Text = None
    golden_answers: list[Annotated[str, Field(strict=True)]] = Field(default_factory=list)
    judge_score: StrictFloat | Int64 | None = None
    failed: Annotated[bool, Field(strict=True)] | None = None
    category: Text = None
    evidence: list[Id] = Field(default_factory=list)
    missing_evidence: list[Annotated[str, Field(strict=True)]] = Field(default_factory=list)
    labels: list[Label] = Field(default_factory=list)
    metadata: Metadata = Field(default_factory=dict)

    @property
    def is_failed(self) -> bool | None:
        if self.failed is not None:
            return self.failed
        if self.judge_score is None:
            return None
        return float(self.judge_score) == 0.0


BodyRecord = SessionRecord | OperationRecord | VariableRecord | EdgeRecord | CaseRecord
BodyRecordV2 = SessionRecord | InlineEdgesOperationRecord | VariableRecord | EdgeRecord | CaseRecord
AnyRecord = TraceRecord | BodyRecord


def metadata_properties(metadata: Metadata) -> dict[str, Any]:
    """``metadata`` as a JSON string plus queryable ``meta_<key>`` copies of simple values."""
    if not metadata:
        return {}
    props: dict[str, Any] = {"metadata": json.dumps(metadata, ensure_ascii=False, sort_keys=True)}
    for key, value in metadata.items():
        if _META_KEY.match(key) and _is_simple(value):
            props[f"meta_{key}"] = value
    return props


def _is_simple(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and any(
            all(_is_scalar(item, kind) for item in value) for kind in (str, bool, int, float)
        )
    return any(_is_scalar(value, kind) for kind in (str, bool, int, float))


def _is_scalar(value: Any, kind: type) -> bool:
    if kind is int:
        return type(value) is int and abs(value) < 2**63
    return type(value) is kind
