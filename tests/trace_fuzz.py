"""Hypothesis strategies for the loader fuzz tests: valid-but-odd native traces and mutations.

Records come from `native_schema.json` through hypothesis-jsonschema (odd unicode, empty and
null texts, deep metadata, every optional field), then their ids and references are rewired so
the trace is valid as a whole. The expected counts are computed here, from what was generated,
not by the loader. A mutation breaks one record in a known way and says what the loader must
answer: the line and the words of the error, or (for harmless ones) the same counts.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

import memtrace.loaders


def fuzz_settings(env: str, default: int) -> settings:
    """The loader fuzz tests' Hypothesis settings: ``default`` examples (the variable ``env``
    raises the count for a longer run), no deadline; tmp_path is shared by the examples (each
    one overwrites its file)."""
    return settings(
        max_examples=int(os.environ.get(env, str(default))),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )


SCHEMA = json.loads((Path(memtrace.loaders.__file__).parent / "native_schema.json").read_text())
COUNTED = ("sessions", "operations", "variables", "edges", "cases", "failed_cases", "labels")


def odd(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """Any record of ``kind`` the JSON Schema allows."""
    strategy = from_schema({"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{kind}"})
    return cast(st.SearchStrategy[dict[str, Any]], strategy)


@dataclass(frozen=True)
class Expected:
    """What loading must give: these counts, or an error at ``location`` containing ``words``."""

    counts: dict[str, int] | None
    location: str | None = None
    words: str = ""


@dataclass
class FuzzTrace:
    records: list[dict[str, Any]]  # the trace record first
    expected: Expected
    note: str = "valid"
    raw_lines: dict[int, str] = field(default_factory=dict)  # index -> a line written verbatim

    def text(self) -> str:
        lines = [
            self.raw_lines.get(i, json.dumps(record, ensure_ascii=False))
            for i, record in enumerate(self.records)
        ]
        return "\n".join(lines) + "\n"

    def line_of(self, record_index: int) -> str:
        return str(record_index + 1)


def _timestamps() -> st.SearchStrategy[str]:
    zones = st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30))])
    moments = st.datetimes(
        min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1), timezones=zones
    )
    return moments.map(lambda moment: moment.isoformat())


def _unique_id(prefix: str, odd_id: str) -> str:
    return f"{prefix}-{odd_id}"[:1024]


@st.composite
def valid_traces(draw: st.DrawFn) -> FuzzTrace:
    version = draw(st.sampled_from([1, 2]))
    trace = draw(odd("trace"))
    trace["format_version"] = version
    if "created_at" in trace:
        trace["created_at"] = draw(_timestamps())

    sessions = draw(st.lists(odd("session"), max_size=3))
    for i, session in enumerate(sessions):
        session["id"] = _unique_id(f"s{i}", session["id"])
        if "created_at" in session:
            session["created_at"] = draw(_timestamps())
    session_ids = [s["id"] for s in sessions]

    def session_of(record: dict[str, Any]) -> None:
        if "session" in record:
            if session_ids:
                record["session"] = draw(st.sampled_from(session_ids))
            else:
                del record["session"]

    variables = draw(st.lists(odd("variable"), min_size=1, max_size=6))
    for i, variable in enumerate(variables):
        variable["id"] = _unique_id(f"v{i}", variable["id"])
        variable["version"] = i + 1  # no two share class_name, name and version
        variable["created_at"] = draw(_timestamps())
        session_of(variable)
    var_ids = [v["id"] for v in variables]
    some_vars = st.lists(st.sampled_from(var_ids), unique=True, max_size=4)

    operations = draw(st.lists(odd("operation"), max_size=5))
    inline_edges = 0
    for i, op in enumerate(operations):
        op["id"] = _unique_id(f"o{i}", op["id"])
        op["created_at"] = draw(_timestamps())
        session_of(op)
        op["reads"] = draw(some_vars)
        op["writes"] = draw(some_vars)
        if version == 1:
            op.pop("edges", None)
        else:
            pairs = st.tuples(st.sampled_from(var_ids), st.sampled_from(var_ids)).map(list)
            op["edges"] = draw(st.lists(pairs, max_size=3))
            inline_edges += len(op["edges"])
    op_ids = [o["id"] for o in operations]

    edges = draw(st.lists(odd("edge"), max_size=4)) if op_ids else []
    for i, edge in enumerate(edges):
        edge["id"] = _unique_id(f"e{i}", edge["id"])
        edge["op"] = draw(st.sampled_from(op_ids))
        edge["source"] = draw(st.sampled_from(var_ids))
        edge["target"] = draw(st.sampled_from(var_ids))
        if "created_at" in edge:
            edge["created_at"] = draw(_timestamps())

    cases = draw(st.lists(odd("case"), max_size=3))
    labels = failed = 0
    for i, case in enumerate(cases):
        case["id"] = _unique_id(f"c{i}", case["id"])
        case["query"] = draw(st.sampled_from(var_ids))
        if "prediction" in case:
            case["prediction"] = draw(st.sampled_from(var_ids))
        case["evidence"] = draw(some_vars)
        if not op_ids:
            case.pop("labels", None)
        for label in case.get("labels", []):
            label["op_id"] = draw(st.sampled_from(op_ids))
        labels += len(case.get("labels", []))
        verdict = case.get("failed")
        score = case.get("judge_score")
        failed += verdict is True or (verdict is None and score is not None and score == 0)

    body: list[dict[str, Any]] = [*sessions, *variables, *operations, *edges, *cases]
    body = draw(st.permutations(body))  # records may come in any order
    counts = {
        "sessions": len(sessions),
        "operations": len(operations),
        "variables": len(variables),
        "edges": len(edges) + inline_edges,
        "cases": len(cases),
        "failed_cases": failed,
        "labels": labels,
    }
    return FuzzTrace([trace, *body], Expected(counts))


def _pick(draw: st.DrawFn, fuzz: FuzzTrace, *types: str) -> int | None:
    found = [i for i, r in enumerate(fuzz.records) if i > 0 and r["type"] in types]
    return draw(st.sampled_from(found)) if found else None


def _error(fuzz: FuzzTrace, index: int, words: str, note: str) -> FuzzTrace:
    return replace(fuzz, expected=Expected(None, fuzz.line_of(index), words), note=note)


@st.composite
def mutated_traces(draw: st.DrawFn) -> FuzzTrace:
    """A valid trace with one known change, and what the loader must answer to it."""
    fuzz = draw(valid_traces())
    records = fuzz.records = [dict(r) for r in fuzz.records]
    how = draw(
        st.sampled_from(
            [
                "drop_key",
                "wrong_type",
                "dangling",
                "duplicate_different",
                "duplicate_identical",
                "huge_value",
                "lone_surrogate",
                "deep_ok",
                "deep_too_deep",
                "int_too_big",
                "bad_date",
            ]
        )
    )
    i = _pick(draw, fuzz, "variable")
    assert i is not None  # every generated trace has a variable
    variable = records[i]
    if how == "drop_key":
        j = _pick(draw, fuzz, "session", "variable", "operation", "edge", "case")
        assert j is not None
        kind = records[j]["type"]
        required = [k for k in SCHEMA["$defs"][kind]["required"] if k != "type"]
        key = draw(st.sampled_from(required))
        del records[j][key]
        return _error(fuzz, j, f"{kind}.{key}: required field is missing", how)
    if how == "wrong_type":
        variable["name"] = draw(st.integers() | st.lists(st.text(), max_size=2) | st.none())
        return _error(fuzz, i, "variable.name: Input should be a valid string", how)
    if how == "dangling":
        j = _pick(draw, fuzz, "operation", "edge", "case")
        if j is None or records[j]["type"] == "operation":
            j = j if j is not None else i
            if records[j]["type"] == "variable":  # no operation, edge or case: dangle a session
                records[j]["session"] = "ghost-session"
                return _error(fuzz, j, "variable.session: unknown session 'ghost-session'", how)
            records[j]["reads"] = [*records[j]["reads"], "ghost-var"]
            at = len(records[j]["reads"]) - 1
            return _error(fuzz, j, f"operation.reads[{at}]: unknown variable 'ghost-var'", how)
        field_name = "target" if records[j]["type"] == "edge" else "query"
        records[j][field_name] = "ghost-var"
        kind = records[j]["type"]
        return _error(fuzz, j, f"{kind}.{field_name}: unknown variable 'ghost-var'", how)
    if how in ("duplicate_different", "duplicate_identical"):
        copy = dict(variable)
        if how == "duplicate_different":
            copy["value"] = f"{variable.get('value')}-changed"
        records.append(copy)
        if how == "duplicate_identical":  # written once: the same counts
            return replace(fuzz, note=how)
        return _error(fuzz, len(records) - 1, f"duplicate variable id {variable['id']!r}", how)
    if how == "huge_value":
        variable["value"] = draw(st.text(min_size=1, max_size=3)) * 400_000
        return replace(fuzz, note=how)
    if how == "lone_surrogate":
        fuzz.raw_lines[i] = json.dumps({**variable, "value": "x\udc88y"}, ensure_ascii=True)
        return _error(fuzz, i, "lone UTF-16 surrogate", how)
    if how in ("deep_ok", "deep_too_deep"):
        depth = 50 if how == "deep_ok" else draw(st.sampled_from([400, 5_000, 100_000]))
        nested = "[" * depth + "]" * depth
        text = json.dumps({**variable, "metadata": {"n": "PLACEHOLDER"}}, ensure_ascii=False)
        fuzz.raw_lines[i] = text.replace('"PLACEHOLDER"', nested)
        if how == "deep_ok":
            return replace(fuzz, note=how)
        return _error(fuzz, i, "nested too deeply", how)
    if how == "int_too_big":
        variable["lineno"] = draw(st.sampled_from([2**63, -(2**63) - 1, 10**30]))
        return _error(fuzz, i, "variable.lineno: Input should be", how)
    variable["created_at"] = draw(st.sampled_from(["2024-02-30T00:00:00Z", "2023-13-01"]))
    return _error(fuzz, i, "bad timestamp", how)


# -- smartcomment graphs ------------------------------------------------------------------------

_texts = st.text(max_size=20) | st.none()


@dataclass
class FuzzGraph:
    graph: dict[str, Any]
    expected: Expected
    note: str = "valid"
    cut: int | None = None  # keep only this many characters of the file

    def text(self) -> str:
        text = json.dumps(self.graph, ensure_ascii=False)
        return text if self.cut is None else text[: self.cut]


@st.composite
def valid_graphs(draw: st.DrawFn) -> FuzzGraph:
    """A smartcomment graph with odd texts, some queries, annotations and metadata."""
    stamp = _timestamps().map(lambda ts: ts[:19].replace("T", " ") + ".001")
    n_nodes = draw(st.integers(1, 6))
    nodes = [
        {
            "full_node_id": f"n{i}-{draw(st.text(min_size=1, max_size=8))}",
            "name": draw(st.text(min_size=1, max_size=10)),
            "version": i + 1,
            "value": draw(_texts),
            "class_name": draw(st.sampled_from(["query", "memory", None, "prediction"])),
            "created_at": draw(stamp),
            "lineno": draw(st.none() | st.integers(-(2**63), 2**63 - 1)),
            "metadata": draw(st.dictionaries(st.text(max_size=5), st.integers() | st.text())),
        }
        for i in range(n_nodes)
    ]
    node_ids = [n["full_node_id"] for n in nodes]
    operations = [
        {
            "op_id": f"op{i}",
            "op_name": draw(st.text(min_size=1, max_size=10)),
            "category": draw(_texts),
            "created_at": draw(stamp),
        }
        for i in range(draw(st.integers(0, 4)))
    ]
    op_ids = [o["op_id"] for o in operations]
    edges = [
        {
            "edge_id": f"e{i}",
            "op_id": draw(st.sampled_from(op_ids)),
            "source_full_node_id": draw(st.sampled_from(node_ids)),
            "target_full_node_id": draw(st.sampled_from(node_ids)),
        }
        for i in range(draw(st.integers(0, 5)) if op_ids else 0)
    ]
    queries = [n["full_node_id"] for n in nodes if n["class_name"] == "query"]
    annotations: list[dict[str, Any]] = []
    annotated: list[bool] = draw(st.lists(st.booleans(), min_size=len(queries)))
    for query, wanted in zip(queries, annotated, strict=False):
        if op_ids and wanted:
            annotations.append(
                {
                    "query_id": query,
                    "final_op_id": draw(st.sampled_from(op_ids)),
                    "final_error_type": draw(st.sampled_from(["RetrievalError", "ResponseError"])),
                    "source_evidence_ids": draw(st.lists(st.sampled_from(node_ids), max_size=2)),
                }
            )
    graph = {
        "graph_id": draw(st.text(min_size=1, max_size=12)),
        "project_id": draw(_texts),
        "metadata": draw(st.dictionaries(st.text(max_size=5), st.integers() | st.none())),
        "data": {
            "nodes": nodes,
            "operations": operations,
            "edges": edges,
            "annotations": annotations,
        },
    }
    counts = {
        "sessions": 0,
        "operations": len(operations),
        "variables": len(nodes),
        "edges": len(edges),
        "cases": len(queries),
        "failed_cases": 0,  # no judge operation, so no verdict
        "labels": len(annotations),
    }
    return FuzzGraph(graph, Expected(counts))


@st.composite
def mutated_graphs(draw: st.DrawFn) -> FuzzGraph:
    fuzz = draw(valid_graphs())
    data = fuzz.graph["data"]
    i = draw(st.integers(0, len(data["nodes"]) - 1))
    node = data["nodes"][i]
    where = f"data.nodes[{i}]"
    how = draw(
        st.sampled_from(
            ["drop_key", "wrong_type", "dangling", "int_too_big", "cut", "bad_date", "no_graph"]
        )
    )

    def error(location: str | None, words: str) -> FuzzGraph:
        return replace(fuzz, expected=Expected(None, location, words), note=how)

    if how == "drop_key":
        key = draw(st.sampled_from(["full_node_id", "name", "version", "created_at"]))
        del node[key]
        return error(where, f"{key}: required field is missing")
    if how == "wrong_type":
        node["version"] = draw(st.text(max_size=3) | st.floats(allow_nan=False) | st.none())
        return error(where, "version: Input should be")
    if how == "dangling":
        if data["edges"]:
            data["edges"][0]["target_full_node_id"] = "ghost"
            return error("data.edges[0]", "edge.target: unknown variable 'ghost'")
        node["class_name"] = "query"
        data["annotations"] = [
            {"query_id": "ghost", "final_op_id": "x", "final_error_type": "RetrievalError"}
        ]
        return error("data.annotations[0]", "query_id: unknown variable 'ghost'")
    if how == "int_too_big":
        node["lineno"] = 2**63
        return error(where, "lineno: Input should be less than or equal to")
    if how == "bad_date":
        node["created_at"] = "2024-02-30 10:00:00.000"
        return error(where, "bad timestamp")
    if how == "no_graph":
        del fuzz.graph["graph_id"]
        return error("$", "graph_id: required field is missing")
    full = len(fuzz.text())
    fuzz.cut = draw(st.integers(1, full - 1))
    return replace(error("1", "the file looks truncated"), cut=fuzz.cut)
