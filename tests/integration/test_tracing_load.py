"""A trace written by the SDK becomes the documented graph in Neo4j (versions, deletion)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtrace.admin import delete_trace
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.tracing import (
    SimClock,
    case,
    delete,
    edge,
    mutation,
    operation,
    read,
    session,
    trace,
    variable,
    write,
)

pytestmark = pytest.mark.integration

GRAPH = """
MATCH (t:Trace {id: $trace_id}) WHERE t.load_state = 'complete'
MATCH (:Variable {trace_id: $trace_id, id: 'mem-1@1'})-[:NEXT_VERSION]->(v2:Variable)
MATCH (d:Operation {trace_id: $trace_id})-[:DELETES]->(deleted:Variable)
MATCH (qa:Operation {trace_id: $trace_id, name: 'question-answering'})-[dep:DEPENDS_ON]->(up)
MATCH (c:Case {trace_id: $trace_id})-[:EVIDENCE]->(m:Variable)
RETURN v2.id AS next, d.name AS deleter, d.kind AS deleter_kind, deleted.id AS deleted,
       up.name AS upstream, dep.via AS via, c.failed AS failed, m.id AS evidence
"""


def test_sdk_trace_loads_as_the_documented_graph(db: Database, run_id: str, tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    with trace(path, run_id, system="toy", clock=SimClock()):
        with session("memory_construction"):
            with operation("memory_system.add_to_vector_store"):
                msg = variable("msg-1", "Ana lives in Porto.", category="message")
                mem = variable("mem-1", "Ana lives in Porto", category="memory_entry")
                edge(msg, mem)
            with operation("memory_system.update_memory_decision"):
                mem2 = mutation(mem, "Ana lives in Lisbon")
            with operation("memory_system.delete_memory"):
                delete(mem2)
        with session("memory_search"), operation("question-answering"):
            query = variable("q-1", "Where does Ana live?", class_name="query")
            read(query, mem2)
            prediction = variable("q-1", "Lisbon", class_name="prediction")
            write(prediction)
        case(
            id="q-1",
            query=query.id,
            prediction=prediction.id,
            golden_answers=["Porto"],
            judge_score=0.0,
            evidence=[msg.id],
        )
    try:
        load_paths(db, [str(path)], LoadOptions())
        (row,) = db.run(GRAPH, trace_id=run_id)
        assert row == {
            "next": "mem-1@2",
            "deleter": "memory_system.delete_memory",
            "deleter_kind": "deletion",
            "deleted": "mem-1@2",
            "upstream": "memory_system.update_memory_decision",
            "via": ["mem-1@2"],
            "failed": True,
            "evidence": "msg-1@1",
        }
    finally:
        delete_trace(db, run_id)
