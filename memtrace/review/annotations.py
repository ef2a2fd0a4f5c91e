"""Human labels in and out: MemTraceBench annotations out, MemTrace's manual annotations in.

Export writes one MemTraceBench annotation per human label (``final_op_id``,
``final_error_type``, ``source_evidence_ids``, ``reason``; plus ``graph_id``, ``reviewer`` and
``saved_at`` so a line says where it belongs). Import reads JSON lines of MemTrace's annotation
interface, ``{saved_at, graph_id, query_id, manual_error_attribution: {op_id, error_type,
edge_id, reason}}``, and also the exported shape, so an export can be imported back. Pure: the
store resolves the ids, ``problems`` says which did not resolve.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memtrace.errors import InputError
from memtrace.review.model import HumanLabel
from memtrace.taxonomy import ANNOTATION_ONLY_TYPES, LabelType

Id = Annotated[str, Field(strict=True, min_length=1)]


class _Attribution(BaseModel):
    model_config = ConfigDict(extra="ignore")

    op_id: Id | None = None
    error_type: LabelType
    edge_id: Id | None = None
    reason: str | None = None


class _Manual(BaseModel):
    """A line of MemTrace's manual-annotation file."""

    model_config = ConfigDict(extra="ignore")

    saved_at: str | None = None
    graph_id: Id
    query_id: Id
    manual_error_attribution: _Attribution


class _Exported(BaseModel):
    """A line of `memtrace review export` (a MemTraceBench annotation with its graph)."""

    model_config = ConfigDict(extra="ignore")

    graph_id: Id
    query_id: Id
    final_op_id: Id | None = None
    final_error_type: LabelType
    reason: str | None = None
    reviewer: Id | None = None
    saved_at: str | None = None


@dataclass(frozen=True)
class Annotation:
    """One imported label, before its ids are resolved."""

    line: int
    graph_id: str
    query_id: str
    op_id: str | None
    error_type: LabelType
    edge_id: str | None
    reason: str | None
    saved_at: str | None
    reviewer: str | None  # named by the line (an export); else the importer's --reviewer


def export_record(label: HumanLabel) -> dict[str, Any]:
    return {
        "graph_id": label.trace_id,
        "query_id": label.query_id,
        "case_id": label.case_id,
        "final_op_id": label.op_id,
        "final_error_type": label.error_type,
        "source_evidence_ids": list(label.evidence_ids),
        "reason": label.reason or "",
        "label_source": "human",
        "reviewer": label.reviewer,
        "saved_at": label.at,
    }


def parse_annotations(path: str, lines: Iterable[str]) -> list[Annotation]:
    """Every annotation of a JSON-lines file; the first bad line raises ``InputError``."""
    found = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"line {number}", f"not JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise InputError(path, f"line {number}", "expected a JSON object")
        found.append(_annotation(path, number, data))
    return found


def _annotation(path: str, number: int, data: dict[str, Any]) -> Annotation:
    model: type[_Manual] | type[_Exported] = (
        _Manual if "manual_error_attribution" in data else _Exported
    )
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(path, f"line {number}", f"{where}: {first['msg']}") from None
    if isinstance(parsed, _Manual):
        manual = parsed.manual_error_attribution
        annotation = Annotation(
            number, parsed.graph_id, parsed.query_id, manual.op_id, manual.error_type,
            manual.edge_id, manual.reason, parsed.saved_at, None,
        )  # fmt: skip
    else:
        annotation = Annotation(
            number, parsed.graph_id, parsed.query_id, parsed.final_op_id,
            parsed.final_error_type, None, parsed.reason, parsed.saved_at, parsed.reviewer,
        )  # fmt: skip
    if annotation.op_id is None and annotation.error_type not in ANNOTATION_ONLY_TYPES:
        raise InputError(path, f"line {number}", f"{annotation.error_type} needs an op_id")
    if annotation.saved_at is not None:
        try:  # ISO 8601, normalised for Cypher's datetime() (which takes no space separator)
            saved_at = datetime.fromisoformat(annotation.saved_at).isoformat()
        except ValueError:
            problem = f"saved_at {annotation.saved_at!r} is not an ISO 8601 date-time"
            raise InputError(path, f"line {number}", problem) from None
        annotation = replace(annotation, saved_at=saved_at)
    return annotation


def resolve_requests(annotations: Sequence[Annotation]) -> list[dict[str, Any]]:
    """``$rows`` of ``resolve_annotations.cypher``."""
    return [
        {
            "index": i,
            "graph_id": a.graph_id,
            "query_id": a.query_id,
            "op_id": a.op_id,
            "edge_id": a.edge_id,
        }
        for i, a in enumerate(annotations)
    ]


def problems(
    path: str, annotations: Sequence[Annotation], resolved: Sequence[Mapping[str, Any]]
) -> list[str]:
    """What did not resolve, one message per id, naming the line."""
    found = []
    for annotation, row in zip(annotations, resolved, strict=True):
        where = f"{path}:line {annotation.line}"
        trace = f"in trace {annotation.graph_id!r}"
        if row["trace_id"] is None:
            found.append(f"{where}: no complete trace with graph_id {annotation.graph_id!r}")
            continue
        if row["case_id"] is None:
            found.append(
                f"{where}: no case of trace {annotation.graph_id!r} asks query_id "
                f"{annotation.query_id!r}"
            )
        if annotation.op_id is not None and row["op_id"] is None:
            found.append(f"{where}: no operation {annotation.op_id!r} {trace}")
        if annotation.edge_id is not None and not row["edge_found"]:
            found.append(f"{where}: no edge {annotation.edge_id!r} {trace}")
        if annotation.op_id is None and row["case_id"] is not None and row["answer_op"] is None:
            found.append(f"{where}: {annotation.error_type} has no op_id and the case no answer op")
    return found
