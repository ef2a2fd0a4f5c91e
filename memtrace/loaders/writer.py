"""The only loader module that talks to Neo4j: batched ``UNWIND $rows`` writes per trace.

Crash safety: the Trace node is marked ``load_state = 'loading'`` before anything else is
written and ``'complete'`` after the last batch. Any earlier data of the same trace id (a
complete older load or the remains of an interrupted one) is deleted first, so a re-run always
ends with exactly one complete copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from neo4j import ManagedTransaction

from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.loaders.rows import QueryRow, Row
from memtrace.loaders.schema import delete_trace_nodes


class BatchWriter:
    """Buffers rows per query and writes each full buffer in one transaction."""

    def __init__(
        self,
        db: Database,
        trace_id: str,
        batch_size: int,
        on_written: Callable[[int], None],
    ) -> None:
        self.db = db
        self.trace_id = trace_id
        self.batch_size = batch_size
        self.on_written = on_written
        self.buffers: dict[str, list[Row]] = {}
        self.nodes = 0
        self.relationships = 0

    def add_all(self, rows: Iterable[QueryRow]) -> None:
        for name, row in rows:
            buffer = self.buffers.setdefault(name, [])
            buffer.append(row)
            if len(buffer) >= self.batch_size:
                self._flush(name)

    def flush_all(self) -> None:
        for name in list(self.buffers):
            self._flush(name)

    def _flush(self, name: str) -> None:
        rows = self.buffers.pop(name, [])
        if not rows:
            return
        text = get_query(name).text
        trace_id = self.trace_id

        def work(tx: ManagedTransaction) -> tuple[int, int]:
            counters = tx.run(text, trace_id=trace_id, rows=rows).consume().counters
            return counters.nodes_created, counters.relationships_created

        nodes, relationships = self.db.write_transaction(work)
        self.nodes += nodes
        self.relationships += relationships
        self.on_written(nodes + relationships)


def begin_trace(db: Database, trace_id: str, props: dict[str, Any]) -> int:
    """Mark the trace as loading and delete whatever an earlier load left; return nodes deleted."""
    db.run(get_query("load/begin_trace"), trace_id=trace_id, props=props)
    return delete_trace_nodes(db, trace_id)


def complete_trace(db: Database, trace_id: str, counts: dict[str, int]) -> None:
    db.run(get_query("load/complete_trace"), trace_id=trace_id, counts=counts)
