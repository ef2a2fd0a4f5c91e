"""Row builders: validated records -> the parameter rows of the load queries (no driver here)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

from memtrace.loaders.index import Table, TraceIndex
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


class ElementIds:
    """The Neo4j elementId of each written node of one table, by slot.

    Element ids look like ``4:<database id>:<number>``: the common prefix is kept once and the
    numbers in an ``array``, so the map costs 8 bytes per node; anything else is kept as is.
    """

    def __init__(self, size: int) -> None:
        self.prefix: str | None = None
        self.numbers = array("q", [-1]) * size
        self.other: dict[int, str] = {}

    def set(self, slot: int, element_id: str) -> None:
        head, _, tail = element_id.rpartition(":")
        if self.prefix is None and head:
            self.prefix = head + ":"
        if head and self.prefix == head + ":" and tail.isdecimal():
            self.numbers[slot] = int(tail)
        else:
            self.other[slot] = element_id

    def get(self, slot: int) -> str:
        number = self.numbers[slot]
        if number >= 0:
            return f"{self.prefix}{number}"
        return self.other[slot]


class NodeMap:
    """Element ids of the nodes of one trace, filled from the node batches' results."""

    def __init__(self, index: TraceIndex) -> None:
        self.index = index
        self.tables: dict[str, tuple[Table, ElementIds]] = {
            name: (table, ElementIds(len(table.ids)))
            for name, table in (
                ("load/create_sessions", index.sessions),
                ("load/create_operations", index.operations),
                ("load/create_variables", index.variables),
                ("load/create_cases", index.cases),
            )
        }
        self.sessions = self.tables["load/create_sessions"][1]
        self.operations = self.tables["load/create_operations"][1]
        self.variables = self.tables["load/create_variables"][1]
        self.cases = self.tables["load/create_cases"][1]

    def record(self, query: str, pairs: list[list[Any]]) -> None:
        """Store ``[slot, elementId]`` pairs returned by a node query."""
        ids = self.tables[query][1]
        for slot, element_id in pairs:
            ids.set(slot, element_id)

    def var(self, var_id: str) -> str:
        return self.variables.get(self.index.variables.ids[var_id])

    def op(self, op_id: str) -> str:
        return self.operations.get(self.index.operations.ids[op_id])


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
    """Rows creating the node of one record (write pass 1 of 2); ``n`` is the record's slot."""
    if not index.is_first(location, record):
        return
    match record:
        case VariableRecord():
            table = index.variables
            slot = table.ids[record.id]
            props = {
                "name": record.name,
                "version": record.version,
                "category": record.category,
                "class_name": record.class_name,
                "value": record.value,
                "is_marker": record.is_marker,
                "session": record.session,
                "created_at": record.created_at,
                "ts": table.ts[slot],
                "seq": table.seq[slot],
                "comment": record.comment,
                "filename": record.filename,
                "lineno": record.lineno,
                **metadata_properties(record.metadata),
            }
            yield "load/create_variables", {"n": slot, "id": record.id, "props": _clean(props)}
        case OperationRecord():
            table = index.operations
            slot = table.ids[record.id]
            props = {
                "name": record.name,
                "kind": record.kind or derive_kind(record.name, record.category),
                "category": record.category,
                "session": record.session,
                "created_at": record.created_at,
                "ts": table.ts[slot],
                "seq": table.seq[slot],
                "comment": record.comment,
                "filename": record.filename,
                "lineno": record.lineno,
                **metadata_properties(record.metadata),
            }
            yield "load/create_operations", {"n": slot, "id": record.id, "props": _clean(props)}
        case SessionRecord():
            props = {
                "name": record.name,
                "category": record.category,
                "created_at": record.created_at,
                "ts": parse_timestamp(record.created_at) if record.created_at else None,
                "comment": record.comment,
                **metadata_properties(record.metadata),
            }
            slot = index.sessions.ids[record.id]
            yield "load/create_sessions", {"n": slot, "id": record.id, "props": _clean(props)}
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
            slot = index.cases.ids[record.id]
            yield "load/create_cases", {"n": slot, "id": record.id, "props": _clean(props)}


def relationship_rows(
    index: TraceIndex, nodes: NodeMap, location: str, record: AnyRecord
) -> Iterator[QueryRow]:
    """Rows creating the relationships of one record (write pass 2 of 2, all nodes exist).

    Endpoints travel as the element ids the node batches returned, so each endpoint is one
    NodeByElementIdSeek instead of a composite unique-index seek.
    """
    if not index.is_first(location, record):
        return
    match record:
        case OperationRecord():
            var = nodes.var
            operations, variables = nodes.operations, index.variables
            session = record.session
            yield (
                "load/create_operation_links",
                {
                    "op": nodes.op(record.id),
                    "session": None
                    if session is None
                    else nodes.sessions.get(index.sessions.ids[session]),
                    "reads": [var(v) for v in dict.fromkeys(record.reads)],
                    "writes": [var(v) for v in dict.fromkeys(record.writes)],
                    "deps": [
                        {"op": operations.get(op), "via": [variables.name(v) for v in via]}
                        for op, via in index.depends_on_slots(record).items()
                    ],
                },
            )
        case EdgeRecord():
            source = nodes.var(record.source)
            yield (
                "load/create_flows_to",
                {
                    "id": record.id,
                    "op": record.op,
                    "source": source,
                    "target": nodes.var(record.target),
                    "category": record.category,
                },
            )
            if index.variables.marker[index.variables.ids[record.target]]:
                yield (
                    "load/create_deletes",
                    {"op": nodes.op(record.op), "var": source, "edge_id": record.id},
                )
        case CaseRecord():
            case = nodes.cases.get(index.cases.ids[record.id])
            prediction = record.prediction
            yield (
                "load/create_case_links",
                {
                    "id": case,
                    "query": nodes.var(record.query),
                    "prediction": None if prediction is None else nodes.var(prediction),
                },
            )
            if record.evidence:
                evidence = [nodes.var(v) for v in dict.fromkeys(record.evidence)]
                yield "load/create_evidence", {"case": case, "vars": evidence}
            for label in record.labels:
                props = {
                    "error_type": label.error_type,
                    "reason": label.reason,
                    "source": label.source,
                    **metadata_properties(label.metadata),
                }
                yield (
                    "load/create_labels",
                    {"case": case, "op": nodes.op(label.op_id), "props": _clean(props)},
                )


def next_version_rows(index: TraceIndex, nodes: NodeMap) -> Iterator[QueryRow]:
    get = nodes.variables.get
    for older, newer in index.next_version_slots:
        yield "load/create_next_version", {"older": get(older), "newer": get(newer)}


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
