"""Row builders: validated records -> the parameter rows of the load queries (no driver here)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from memtrace.loaders.index import (
    CASE_EVIDENCE,
    CASE_LABEL,
    CASE_PREDICTION,
    CASE_QUERY,
    EDGE_OP,
    EDGE_SOURCE,
    EDGE_TARGET,
    OP_SESSION,
    READS,
    WRITES,
    Counts,
    LinkedRecord,
    NodeRecord,
)
from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.models import (
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
    metadata_properties,
    parse_timestamp,
)
from memtrace.taxonomy import dataset_name

Row = dict[str, Any]
QueryRow = tuple[str, Row]  # (query name under memtrace/cypher, row)


def _clean(props: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in props.items() if value is not None}


def system_name(name: str | None, spellings: Mapping[str, str]) -> str | None:
    """The registry's name of a known memory system (``spellings``: any case, other tools'
    names too, e.g. MemBase's "NaiveRAG"), else ``name`` unchanged: failure classes and
    comparisons by system are then not split by spelling."""
    if name is None:
        return None
    return spellings.get(name.strip().casefold(), name)


def trace_properties(
    trace: TraceRecord,
    source: str,
    source_file: str,
    overrides: dict[str, str | None],
    spellings: Mapping[str, str],
) -> dict[str, Any]:
    props: dict[str, Any] = {
        "system": system_name(overrides.get("system") or trace.system, spellings),
        "dataset": dataset_name(overrides.get("dataset") or trace.dataset),
        "user_id": trace.user_id,
        "source": source,
        "source_file": source_file,
        "format_version": trace.format_version if source == "native" else None,
        "created_at": trace.created_at,
        "ts": parse_timestamp(trace.created_at) if trace.created_at else None,
    }
    props.update(metadata_properties(trace.metadata))
    return _clean(props)


def node_rows(node: NodeRecord) -> Iterator[QueryRow]:
    """Rows creating the node of one record (write pass 1 of 2); ``n`` is the record's number."""
    record, n = node.record, node.n
    match record:
        case VariableRecord():
            props = {
                "name": record.name,
                "version": record.version,
                "category": record.category,
                "class_name": record.class_name,
                "value": record.value,
                "is_marker": record.is_marker,
                "session": record.session,
                "created_at": record.created_at,
                "ts": node.ts,
                "seq": node.seq,
                "comment": record.comment,
                "filename": record.filename,
                "lineno": record.lineno,
                **metadata_properties(record.metadata),
            }
            yield "load/create_variables", {"n": n, "id": record.id, "props": _clean(props)}
        case OperationRecord():
            props = {
                "name": record.name,
                "kind": record.kind or derive_kind(record.name, record.category),
                "category": record.category,
                "session": record.session,
                "created_at": record.created_at,
                "ts": node.ts,
                "seq": node.seq,
                "comment": record.comment,
                "filename": record.filename,
                "lineno": record.lineno,
                **metadata_properties(record.metadata),
            }
            yield "load/create_operations", {"n": n, "id": record.id, "props": _clean(props)}
        case SessionRecord():
            props = {
                "name": record.name,
                "category": record.category,
                "created_at": record.created_at,
                "ts": parse_timestamp(record.created_at) if record.created_at else None,
                "comment": record.comment,
                **metadata_properties(record.metadata),
            }
            yield "load/create_sessions", {"n": n, "id": record.id, "props": _clean(props)}
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
            yield "load/create_cases", {"n": n, "id": record.id, "props": _clean(props)}


def relationship_rows(linked: LinkedRecord) -> Iterator[QueryRow]:
    """Rows creating the relationships of one record (write pass 2 of 2, all nodes exist).

    Endpoints travel as the element ids the node batches returned, so each endpoint is one
    NodeByElementIdSeek instead of a composite unique-index seek.
    """
    record = linked.record
    by_role: dict[int, list[tuple[str, bool]]] = {}
    for role, element_id, marker in linked.endpoints:
        by_role.setdefault(role, []).append((element_id, marker))

    def one(role: int) -> tuple[str | None, bool]:
        found = by_role.get(role)
        return found[0] if found else (None, False)

    def distinct(role: int) -> list[str]:
        return list(dict.fromkeys(element_id for element_id, _ in by_role.get(role, ())))

    match record:
        case OperationRecord():
            yield (
                "load/create_operation_links",
                {
                    "op": linked.own,
                    "session": one(OP_SESSION)[0],
                    "reads": distinct(READS),
                    "writes": distinct(WRITES),
                    "deps": [{"op": op, "via": via} for op, via in linked.depends_on.items()],
                },
            )
        case EdgeRecord():
            source = one(EDGE_SOURCE)[0]
            target, marker = one(EDGE_TARGET)
            yield (
                "load/create_flows_to",
                {
                    "id": record.id,
                    "op": record.op,
                    "source": source,
                    "target": target,
                    "category": record.category,
                },
            )
            if marker:
                yield (
                    "load/create_deletes",
                    {"op": one(EDGE_OP)[0], "var": source, "edge_id": record.id},
                )
        case CaseRecord():
            case = linked.own
            yield (
                "load/create_case_links",
                {
                    "id": case,
                    "query": one(CASE_QUERY)[0],
                    "prediction": one(CASE_PREDICTION)[0],
                },
            )
            if record.evidence:
                yield "load/create_evidence", {"case": case, "vars": distinct(CASE_EVIDENCE)}
            label_ops = by_role.get(CASE_LABEL, [])
            for label, (op, _) in zip(record.labels, label_ops, strict=True):
                props = {
                    "error_type": label.error_type,
                    "reason": label.reason,
                    "source": label.source,
                    **metadata_properties(label.metadata),
                }
                yield "load/create_labels", {"case": case, "op": op, "props": _clean(props)}


def next_version_rows(pairs: Iterator[tuple[str, str]]) -> Iterator[QueryRow]:
    for older, newer in pairs:
        yield "load/create_next_version", {"older": older, "newer": newer}


def count_properties(counts: Counts) -> dict[str, int]:
    return {
        "n_sessions": counts.sessions,
        "n_operations": counts.operations,
        "n_variables": counts.variables,
        "n_edges": counts.edges,
        "n_cases": counts.cases,
        "n_failed_cases": counts.failed_cases,
        "n_labels": counts.labels,
    }
