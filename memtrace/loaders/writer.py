"""The only loader module that talks to Neo4j: batched ``UNWIND $rows`` writes per trace.

Crash safety: the Trace node is marked ``load_state = 'loading'`` before anything else is
written and ``'complete'`` after the last batch. Any earlier data of the same trace id (a
complete older load or the remains of an interrupted one) is deleted first, so a re-run always
ends with exactly one complete copy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from memtrace.admin import delete_trace_nodes
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.loaders.rows import QueryRow, Row

Written = tuple[str, int, int, list[list[Any]]]  # query, nodes, relationships, returned ids


class BatchWriter:
    """Buffers rows per query and writes each full buffer in one transaction.

    Transactions run on a background thread (the driver releases the GIL while it waits for
    Neo4j), so the next batch is parsed and built while the server writes the previous one. At
    most ``in_flight`` batches are queued. Results (counters, and the element ids node queries
    return, handed to ``on_ids``) are processed on the calling thread, in submission order.
    """

    def __init__(
        self,
        db: Database,
        trace_id: str,
        batch_size: int,
        on_written: Callable[[int], None],
        on_ids: Callable[[str, list[list[Any]]], None] | None = None,
        in_flight: int = 2,
    ) -> None:
        self.db = db
        self.trace_id = trace_id
        self.batch_size = batch_size
        self.on_written = on_written
        self.on_ids = on_ids
        self.in_flight = in_flight
        self.buffers: dict[str, list[Row]] = {}
        self.nodes = 0
        self.relationships = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memtrace-load")
        self._pending: deque[Future[Written]] = deque()

    def add_all(self, rows: Iterable[QueryRow]) -> None:
        buffers = self.buffers
        size = self.batch_size
        for name, row in rows:
            buffer = buffers.get(name)
            if buffer is None:
                buffer = buffers[name] = []
            buffer.append(row)
            if len(buffer) >= size:
                self._flush(name)

    def flush_all(self) -> None:
        """Write every buffered row and wait until every transaction has committed."""
        for name in list(self.buffers):
            self._flush(name)
        while self._pending:
            self._collect()

    def close(self) -> None:
        """Wait for (or, after an error, abandon) queued batches and stop the thread."""
        try:
            while self._pending:
                self._collect()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _flush(self, name: str) -> None:
        rows = self.buffers.pop(name, [])
        if not rows:
            return
        self._pending.append(self._pool.submit(self._write, name, rows))
        while len(self._pending) > self.in_flight:
            self._collect()

    def _collect(self) -> None:
        name, nodes, relationships, ids = self._pending.popleft().result()
        if ids and self.on_ids is not None:
            self.on_ids(name, ids)
        self.nodes += nodes
        self.relationships += relationships
        self.on_written(nodes + relationships)

    def _write(self, name: str, rows: list[Row]) -> Written:
        query = get_query(name)
        params: dict[str, Any] = {"rows": rows}
        if "trace_id" in query.params:
            params["trace_id"] = self.trace_id
        result = self.db.write_batch(query, **params)
        ids: list[list[Any]] = []
        if "ids" in query.columns and result.records:
            ids = result.records[0]["ids"]
        return name, result.nodes_created, result.relationships_created, ids


def begin_trace(db: Database, trace_id: str, props: dict[str, Any]) -> int:
    """Mark the trace as loading and delete whatever an earlier load left; return nodes deleted."""
    db.run(get_query("load/begin_trace"), trace_id=trace_id, props=props)
    return delete_trace_nodes(db, trace_id)


def complete_trace(db: Database, trace_id: str, counts: dict[str, int]) -> None:
    db.run(get_query("load/complete_trace"), trace_id=trace_id, counts=counts)
