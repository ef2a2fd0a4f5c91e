"""Row builders: validated records -> the parameter rows of the load queries (no driver here)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memtrace.loaders.index import TraceIndex
from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
    metadata_properties,
    parse_timestamp,
)

Row = dict[str, Any]
QueryRow = tuple[str, Row]  # (query name under memtrace/cypher, row)


def _clean(props: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in props.items() if value is not None}


def trace_properties(
    trace: TraceRecord, source: str, source_file: str, overrides: dict[str, str | None]
) -> dict[str, Any]:
    props: dict[str, Any] = {
        "system": overrides.get("system") or trace.system,
        "dataset": overrides.get("dataset") or trace.dataset,
        "user_id": trace.user_id,
        "source": source,
        "source_file": source_file,
        "format_version": trace.format_version if source == "native" else None,
        "created_at": trace.created_at,
        "ts": parse_timestamp(trace.created_at) if trace.created_at else None,
    }
    props.update(metadata_properties(trace.metadata))
    return _clean(props)


def node_rows(index: TraceIndex, location: str, record: AnyRecord) -> Iterator[QueryRow]:
    """Rows creating the node of one record (write pass 1 of 2)."""
    if not index.is_first(location, record):
        return
    match record:
        case VariableRecord():
            entry = index.variables[record.id]
            props = {
                "name": record.name,
                "version": record.version,
                "category": record.category,
                "class_name": record.class_name,
                "value": record.value,
                "is_marker": record.is_marker,
                "session": record.session,
                "created_at": record.created_at,
                "ts": entry.ts,
                "seq": entry.seq,
                "comment": record.comment,
                "filename": record.filename,
                "lineno": record.lineno,
                **metadata_properties(record.metadata),
            }
            yield "load/create_variables", {"id": record.id, "props": _clean(props)}
        case OperationRecord():
            entry = index.operations[record.id]
            props = {
                "name": record.name,
                "kind": record.kind or derive_kind(record.name, record.category),
                "category": record.category,
                "session": record.session,
                "created_at": record.created_at,
                "ts": entry.ts,
                "seq": entry.seq,
                "comment": record.comment,
                "filename": record.filename,
                "lineno": record.lineno,
                **metadata_properties(record.metadata),
            }
            yield "load/create_operations", {"id": record.id, "props": _clean(props)}
        case SessionRecord():
            props = {
                "name": record.name,
                "category": record.category,
                "created_at": record.created_at,
                "ts": parse_timestamp(record.created_at) if record.created_at else None,
                "comment": record.comment,
                **metadata_properties(record.metadata),
            }
            yield "load/create_sessions", {"id": record.id, "props": _clean(props)}
        case CaseRecord():
            props = {
                "query_id": record.query,
                "query": record.query_text,
                "prediction_id": record.prediction,
                "prediction": record.prediction_text,
                "golden_answers": record.golden_answers,
                "judge_score": None if record.judge_score is None else float(record.judge_score),
                "failed": record.is_failed,
                "category": record.category,
                "missing_evidence": record.missing_evidence or None,
                **metadata_properties(record.metadata),
            }
            yield "load/create_cases", {"id": record.id, "props": _clean(props)}


def relationship_rows(index: TraceIndex, location: str, record: AnyRecord) -> Iterator[QueryRow]:
    """Rows creating the relationships of one record (write pass 2 of 2, all nodes exist)."""
    if not index.is_first(location, record):
        return
    match record:
        case OperationRecord():
            yield (
                "load/create_operation_links",
                {
                    "op": record.id,
                    "session": record.session,
                    "reads": list(dict.fromkeys(record.reads)),
                    "writes": list(dict.fromkeys(record.writes)),
                    "deps": [
                        {"op": op, "via": via} for op, via in index.depends_on(record).items()
                    ],
                },
            )
        case EdgeRecord():
            yield (
                "load/create_flows_to",
                {
                    "id": record.id,
                    "op": record.op,
                    "source": record.source,
                    "target": record.target,
                    "category": record.category,
                },
            )
            if index.variables[record.target].is_marker:
                yield (
                    "load/create_deletes",
                    {
                        "op": record.op,
                        "var": record.source,
                        "edge_id": record.id,
                    },
                )
        case CaseRecord():
            yield (
                "load/create_case_links",
                {
                    "id": record.id,
                    "query": record.query,
                    "prediction": record.prediction,
                },
            )
            if record.evidence:
                evidence = list(dict.fromkeys(record.evidence))
                yield "load/create_evidence", {"case": record.id, "vars": evidence}
            for label in record.labels:
                props = {
                    "error_type": label.error_type,
                    "reason": label.reason,
                    "source": label.source,
                    **metadata_properties(label.metadata),
                }
                yield (
                    "load/create_labels",
                    {"case": record.id, "op": label.op_id, "props": _clean(props)},
                )


def next_version_rows(index: TraceIndex) -> Iterator[QueryRow]:
    for older, newer in index.next_versions:
        yield "load/create_next_version", {"older": older, "newer": newer}


def count_properties(index: TraceIndex) -> dict[str, int]:
    counts = index.counts
    return {
        "n_sessions": counts.sessions,
        "n_operations": counts.operations,
        "n_variables": counts.variables,
        "n_edges": counts.edges,
        "n_cases": counts.cases,
        "n_failed_cases": counts.failed_cases,
        "n_labels": counts.labels,
    }
