"""Database administration for the trace graph: schema, statistics, scoped deletion."""

from __future__ import annotations

from typing import Any

from memtrace.cypher import all_queries, get_query
from memtrace.db import Database
from memtrace.taxonomy import retired_trace_id, staged_trace_id

DELETE_BATCH = 10_000
INDEX_WAIT_SECONDS = 300


def init_schema(db: Database, *, together: bool = False) -> list[str]:
    """Create every constraint and index of docs/graph-model.md if missing; return their names.

    ``together``: all of them in one transaction, so that Neo4j populates them in one job: over
    a freshly imported 1M-element store 2.6-3.2 s instead of 3.6-4.8 s (docs/performance.md).
    A store that is being written to is better served one statement at a time (each takes the
    schema lock only for itself).
    """
    queries = [query for query in all_queries() if query.name.startswith("db/init/")]
    if together:
        db.write_together([(query, {}) for query in queries])
    else:
        for query in queries:
            db.run(query)
    db.run(get_query("db/await_indexes"), seconds=INDEX_WAIT_SECONDS)
    return [query.name.removeprefix("db/init/") for query in queries]


def node_count(db: Database) -> int:
    """Nodes of any label in the whole database (0: empty, as a bulk import needs)."""
    return int(db.run(get_query("db/node_count"))[0]["nodes"])


def graph_stats(db: Database) -> dict[str, Any]:
    """Counts of every label and relationship type, plus one row per trace."""
    counts = db.run(get_query("db/stats"))[0]
    return {"counts": counts, "traces": db.run(get_query("db/traces"))}


def delete_trace_nodes(db: Database, trace_id: str, batch: int = DELETE_BATCH) -> int:
    """Delete every node of one trace except the Trace node, in batches; return how many."""
    query = get_query("load/delete_trace_nodes")
    total = 0
    while True:
        deleted = int(db.run(query, trace_id=trace_id, limit=batch)[0]["deleted"])
        total += deleted
        if deleted < batch:
            return total


def delete_trace(db: Database, trace_id: str) -> int:
    """Delete one trace entirely, with any copy a re-load left (staged or retired); return the
    number of nodes deleted (0 if none of them existed)."""
    return sum(
        _delete_one(db, one)
        for one in (trace_id, staged_trace_id(trace_id), retired_trace_id(trace_id))
    )


def delete_reload_copies(db: Database, trace_id: str) -> int:
    """Delete what an interrupted re-load of ``trace_id`` left: its staged and retired copies."""
    return _delete_one(db, staged_trace_id(trace_id)) + _delete_one(db, retired_trace_id(trace_id))


def _delete_one(db: Database, trace_id: str) -> int:
    deleted = delete_trace_nodes(db, trace_id)
    return deleted + int(db.run(get_query("db/delete_trace"), trace_id=trace_id)[0]["deleted"])


def delete_everything(db: Database, batch: int = DELETE_BATCH) -> int:
    """Delete every node of the database (memtrace's and anything else), in batches."""
    query = get_query("db/delete_all_batch")
    total = 0
    while True:
        deleted = int(db.run(query, limit=batch)[0]["deleted"])
        total += deleted
        if deleted < batch:
            return total
