"""What a re-load test checks on the real Neo4j: a trace's exact graph, its re-load copies."""

from __future__ import annotations

from typing import Any

from memtrace.db import Database
from memtrace.taxonomy import retired_trace_id, staged_trace_id

NODES_BY_LABEL = "MATCH (n {trace_id: $t}) RETURN labels(n)[0] AS key, count(*) AS n"
RELATIONSHIPS_BY_TYPE = "MATCH (a {trace_id: $t})-[r]->() RETURN type(r) AS key, count(*) AS n"
DUPLICATE_IDS = """
MATCH (n {trace_id: $t}) WHERE n.id IS NOT NULL
WITH labels(n)[0] AS label, n.id AS id, count(*) AS n WHERE n > 1
RETURN count(*) AS duplicates
"""
TRACE_NODE = "MATCH (t:Trace {id: $t}) RETURN t.load_state AS state, t.n_variables AS variables"


def graph_of(db: Database, trace_id: str) -> dict[str, Any]:
    """Every node label and relationship type of one trace id with its count, and its state."""
    nodes = {row["key"]: row["n"] for row in db.run(NODES_BY_LABEL, t=trace_id)}
    relationships = {row["key"]: row["n"] for row in db.run(RELATIONSHIPS_BY_TYPE, t=trace_id)}
    state = [row["state"] for row in db.run(TRACE_NODE, t=trace_id)]
    return {"nodes": nodes, "relationships": relationships, "state": state}


def duplicates(db: Database, trace_id: str) -> int:
    return int(db.run(DUPLICATE_IDS, t=trace_id)[0]["duplicates"])


def copies_left(db: Database, trace_id: str) -> dict[str, list[Any]]:
    """The staged and retired copies of a trace that are still in the database (trace nodes)."""
    return {
        copy: [row["state"] for row in db.run(TRACE_NODE, t=copy)]
        for copy in (staged_trace_id(trace_id), retired_trace_id(trace_id))
        if db.run(TRACE_NODE, t=copy) or db.run(NODES_BY_LABEL, t=copy)
    }


def assert_exact(db: Database, trace_id: str, expected: dict[str, int]) -> None:
    """The trace is complete with exactly the file's counts, no duplicate, no copy left."""
    graph = graph_of(db, trace_id)
    assert graph["state"] == ["complete"]
    assert graph["nodes"]["Operation"] == expected["operations"]
    assert graph["nodes"]["Variable"] == expected["variables"]
    assert graph["nodes"]["Case"] == expected["cases"]
    assert graph["relationships"]["FLOWS_TO"] == expected["edges"]
    assert graph["relationships"].get("LABELED", 0) == expected["labels"]
    assert duplicates(db, trace_id) == 0
    assert copies_left(db, trace_id) == {}
