"""smartcomment / MemTraceBench graph files -> the same records as the native format.

A graph file is one JSON object (a few MB), read whole. Errors name the JSON path of the item.
"""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from memtrace.errors import InputError
from memtrace.loaders.files import decode_json, read_text, validate
from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    EdgeRecord,
    Id,
    Int64,
    Label,
    OperationRecord,
    SessionRecord,
    Text,
    Timestamp,
    TraceRecord,
    VariableRecord,
    parse_timestamp,
)
from memtrace.taxonomy import LabelType

Lineno = Int64 | None


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SCNode(_Item):
    full_node_id: Id
    name: Annotated[str, Field(min_length=1, strict=True)]
    version: Annotated[StrictInt, Field(ge=1, le=2**63 - 1)]
    value: Text = None
    category: Text = None
    class_name: Text = None
    session_id: Id | None = None
    created_at: Timestamp
    comment: Text = None
    filename: Text = None
    lineno: Lineno = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SCOperation(_Item):
    op_id: Id
    op_name: Annotated[str, Field(min_length=1, strict=True)]
    category: Text = None
    session_id: Id | None = None
    created_at: Timestamp
    comment: Text = None
    filename: Text = None
    lineno: Lineno = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SCEdge(_Item):
    edge_id: Id
    op_id: Id
    source_full_node_id: Id
    target_full_node_id: Id
    category: Text = None
    created_at: Timestamp | None = None
    comment: Text = None
    filename: Text = None
    lineno: Lineno = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SCSession(_Item):
    session_id: Id
    session_name: Text = None
    category: Text = None
    created_at: Timestamp | None = None
    comment: Text = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SCAnnotation(BaseModel):
    model_config = ConfigDict(extra="allow")

    query_id: Id
    final_op_id: Id
    final_error_type: LabelType
    source_evidence_ids: list[Id] = Field(default_factory=list)
    golden_answers: (
        list[Annotated[str, Field(strict=True)]] | Annotated[str, Field(strict=True)]
    ) = Field(default_factory=list)
    prediction: Text = None
    query: Text = None
    reason: Text = None
    label_source: Text = None


class SCData(_Item):
    nodes: list[Any]
    edges: list[Any]
    operations: list[Any]
    sessions: list[Any] = Field(default_factory=list)
    annotations: list[Any] = Field(default_factory=list)


class SCGraph(_Item):
    graph_id: Id
    user_id: Text = None
    project_id: Text = None
    created_at: Timestamp | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    data: SCData


def python_text(value: str | None) -> str | None:
    """The text of a value smartcomment stored as a Python ``repr`` of a string."""
    if value and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
        if isinstance(parsed, str):
            return parsed
    return value


def _answers(value: str | None) -> list[str]:
    if value is None:
        return []
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(value)
        except (ValueError, SyntaxError):
            continue
        if isinstance(parsed, list):
            return [str(item) for item in parsed]
        if isinstance(parsed, str):
            return [parsed]
    return [value]


def _score(value: str | None) -> float | None:
    text = python_text(value)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def read_smartcomment(file: Path) -> list[tuple[str, AnyRecord]]:
    """Parse, validate and convert one graph file; the first record is the TraceRecord."""
    path = str(file)
    text = read_text(file, "empty file: no graph object")
    end = text.rstrip()

    def truncated(exc: json.JSONDecodeError) -> str | None:
        # A graph file ends with the "}" of its object; one cut short usually fails elsewhere
        # (inside a string or an escape), so look at the end, not at where the parser stopped.
        cut = exc.pos >= len(end) or not end.endswith("}")
        return (
            "the file looks truncated: it ends before the graph object is closed" if cut else None
        )

    raw = decode_json(text, path, None, truncated)
    graph = validate(SCGraph, raw, path, "$")
    return list(_convert(graph, path))


def _convert(graph: SCGraph, path: str) -> Iterator[tuple[str, AnyRecord]]:
    data = graph.data
    metadata = graph.metadata
    # MemTraceBench files name their source dataset; MemBase's runners record the dataset class
    dataset = metadata.get("memtracebench_dataset_source") or metadata.get("dataset_cls")
    yield (
        "$",
        TraceRecord(
            type="trace",
            format_version=1,
            id=graph.graph_id,
            system=graph.project_id,
            dataset=dataset if isinstance(dataset, str) else None,
            user_id=graph.user_id,
            created_at=graph.created_at,
            metadata=metadata,
        ),
    )
    for i, item in enumerate(data.sessions):
        location = f"data.sessions[{i}]"
        session = validate(SCSession, item, path, location)
        yield (
            location,
            SessionRecord(
                type="session",
                id=session.session_id,
                name=session.session_name,
                category=session.category,
                created_at=session.created_at,
                comment=session.comment,
                metadata=session.metadata,
            ),
        )
    variables: dict[str, VariableRecord] = {}
    node_locations: dict[str, str] = {}
    for i, item in enumerate(data.nodes):
        location = f"data.nodes[{i}]"
        node = validate(SCNode, item, path, location)
        variable = VariableRecord(
            type="variable",
            id=node.full_node_id,
            name=node.name,
            version=node.version,
            category=node.category,
            class_name=node.class_name,
            value=node.value,
            created_at=node.created_at,
            session=node.session_id,
            comment=node.comment,
            filename=node.filename,
            lineno=node.lineno,
            metadata=node.metadata,
        )
        variables.setdefault(variable.id, variable)
        node_locations.setdefault(variable.id, location)
        yield location, variable
    edges_by_op: dict[str, list[SCEdge]] = defaultdict(list)
    for i, item in enumerate(data.edges):
        location = f"data.edges[{i}]"
        edge = validate(SCEdge, item, path, location)
        edges_by_op[edge.op_id].append(edge)
        yield (
            location,
            EdgeRecord(
                type="edge",
                id=edge.edge_id,
                op=edge.op_id,
                source=edge.source_full_node_id,
                target=edge.target_full_node_id,
                category=edge.category,
                created_at=edge.created_at,
                comment=edge.comment,
                filename=edge.filename,
                lineno=edge.lineno,
                metadata=edge.metadata,
            ),
        )
    operations: list[OperationRecord] = []
    for i, item in enumerate(data.operations):
        location = f"data.operations[{i}]"
        op = validate(SCOperation, item, path, location)
        edges = edges_by_op.get(op.op_id, [])
        targets = dict.fromkeys(e.target_full_node_id for e in edges)
        reads = [s for s in dict.fromkeys(e.source_full_node_id for e in edges) if s not in targets]
        record = OperationRecord(
            type="operation",
            id=op.op_id,
            name=op.op_name,
            kind=derive_kind(op.op_name, op.category),
            category=op.category,
            session=op.session_id,
            created_at=op.created_at,
            reads=reads,
            writes=list(targets),
            comment=op.comment,
            filename=op.filename,
            lineno=op.lineno,
            metadata=op.metadata,
        )
        operations.append(record)
        yield location, record
    yield from _cases(graph, path, variables, node_locations, operations)


def _cases(
    graph: SCGraph,
    path: str,
    variables: dict[str, VariableRecord],
    node_locations: dict[str, str],
    operations: list[OperationRecord],
) -> Iterator[tuple[str, AnyRecord]]:
    op_ids = {op.id for op in operations}
    annotations: dict[str, list[tuple[str, SCAnnotation]]] = defaultdict(list)
    for i, item in enumerate(graph.data.annotations):
        location = f"data.annotations[{i}]"
        annotation = validate(SCAnnotation, item, path, location)
        if annotation.query_id not in variables:
            raise InputError(path, location, f"query_id: unknown variable {annotation.query_id!r}")
        if variables[annotation.query_id].class_name != "query":
            raise InputError(
                path, location, f"query_id: {annotation.query_id!r} is not a query variable"
            )
        if annotation.final_op_id not in op_ids:
            raise InputError(
                path, location, f"final_op_id: unknown operation {annotation.final_op_id!r}"
            )
        for j, evidence_id in enumerate(annotation.source_evidence_ids):
            if evidence_id not in variables:
                raise InputError(
                    path, location, f"source_evidence_ids[{j}]: unknown variable {evidence_id!r}"
                )
        annotations[annotation.query_id].append((location, annotation))
    by_name: dict[str, str] = {}
    for variable in sorted(variables.values(), key=lambda v: v.version, reverse=True):
        by_name[variable.name] = variable.id
    readers: dict[str, list[OperationRecord]] = defaultdict(list)
    for op in sorted(operations, key=lambda o: (parse_timestamp(o.created_at), o.id)):
        for var in op.reads:
            readers[var].append(op)
    queries = [v for v in variables.values() if v.class_name == "query"]
    for query in queries:
        location = node_locations[query.id]
        qa = _first(readers[query.id], "generation")
        judge = _first(readers[query.id], "judge")
        prediction = _output(qa, variables, "prediction")
        score_var = _output(judge, variables, "judge_score")
        golden_var = _input(judge, variables, "golden_answers")
        meta = query.metadata
        names = meta.get("evidence", [])
        names = names if isinstance(names, list) else []
        evidence = [by_name[n] for n in names if isinstance(n, str) and n in by_name]
        missing = [str(n) for n in names if not (isinstance(n, str) and n in by_name)]
        golden = _answers(golden_var.value) if golden_var else []
        labels: list[Label] = []
        prediction_text = python_text(prediction.value) if prediction else None
        for ann_location, annotation in annotations.get(query.id, []):
            location = ann_location
            if annotation.source_evidence_ids:
                evidence, missing = list(annotation.source_evidence_ids), []
            if not golden:
                answers = annotation.golden_answers
                golden = [answers] if isinstance(answers, str) else list(answers)
            if prediction_text is None:
                prediction_text = annotation.prediction
            extra = {
                key: value
                for key, value in (annotation.model_extra or {}).items()
                if key not in {"golden_answers_id", "prediction_id"}
            }
            labels.append(
                Label(
                    op_id=annotation.final_op_id,
                    error_type=annotation.final_error_type,
                    reason=annotation.reason,
                    source=annotation.label_source or "annotation",
                    metadata=extra,
                )
            )
        question_type = meta.get("question_type")
        case_id = query.name if query.version == 1 else f"{query.name}@{query.version}"
        yield (
            location,
            CaseRecord(
                type="case",
                id=case_id,
                query=query.id,
                query_text=python_text(query.value),
                prediction=prediction.id if prediction else None,
                prediction_text=prediction_text,
                golden_answers=golden,
                judge_score=_score(score_var.value) if score_var else None,
                category=question_type if isinstance(question_type, str) else None,
                evidence=evidence,
                missing_evidence=missing,
                labels=labels,
            ),
        )


def _first(ops: list[OperationRecord], kind: str) -> OperationRecord | None:
    return next((op for op in ops if op.kind == kind), None)


def _output(
    op: OperationRecord | None, variables: dict[str, VariableRecord], class_name: str
) -> VariableRecord | None:
    if op is None:
        return None
    found = (variables[v] for v in op.writes if v in variables)
    return next((v for v in found if v.class_name == class_name), None)


def _input(
    op: OperationRecord | None, variables: dict[str, VariableRecord], class_name: str
) -> VariableRecord | None:
    if op is None:
        return None
    found = (variables[v] for v in op.reads if v in variables)
    return next((v for v in found if v.class_name == class_name), None)
