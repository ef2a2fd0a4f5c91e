"""The only loader module that talks to Neo4j: batched ``UNWIND $rows`` writes per trace.

Crash safety: the Trace node is marked ``load_state = 'loading'`` before anything else is
written and ``'complete'`` after the last batch; the remains of an interrupted load of the same
trace id are deleted first, so a re-run always ends with exactly one complete copy. Small traces
the graph holds nothing of are instead written together in ONE transaction (``write_new_traces``),
complete from the start: all of them commit or none, and their per-trace fixed cost (a dozen
transactions each) becomes a handful of statements for the lot.

A re-load of a *complete* trace keeps that copy readable until the new one is complete: the new
copy is written under the reserved staged id (``load_state = 'staging'``), then ONE transaction
drops the old copy's attributions and re-keys both copies (old -> retired id, staged -> trace id);
the retired copy is deleted afterwards in batches. Readers only read ``complete`` traces, so they
see the old copy, then the new one (a query overlapping the swap's commit may see part of it:
Neo4j reads are read-committed; docs/reliability.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from memtrace.admin import DELETE_BATCH, delete_reload_copies, delete_trace_nodes
from memtrace.cypher import Query, get_query
from memtrace.db import Database, StepRunner
from memtrace.errors import MemtraceError
from memtrace.loaders.otlp.prior import PriorVariable, text_key
from memtrace.loaders.rows import QueryRow, Row
from memtrace.taxonomy import retired_trace_id, staged_trace_id

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
        """Wait for queued batches and stop the thread."""
        try:
            while self._pending:
                self._collect()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def abandon(self) -> None:
        """After an error: drop the queued batches unwritten and wait only for the one being
        written. Collecting them would retry each against a dead server for 30 s."""
        self._pending.clear()
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


@dataclass(frozen=True)
class TraceState:
    """What the graph holds of a trace before a load."""

    load_state: str | None  # None: no such trace; 'loading' (interrupted) or 'complete'
    nodes: int
    copies: bool  # a re-load left a staged or retired copy of it

    @property
    def new(self) -> bool:
        """Nothing of it in the graph: it may be written with other new traces at once."""
        return self.load_state is None and not self.copies


def trace_states(db: Database, trace_ids: Sequence[str]) -> dict[str, TraceState]:
    """Per trace id: its state before this load (one query for all of them)."""
    rows = db.run(
        get_query("load/traces_state"),
        rows=[
            {
                "id": trace_id,
                "staged": staged_trace_id(trace_id),
                "retired": retired_trace_id(trace_id),
            }
            for trace_id in trace_ids
        ],
    )
    return {
        row["trace_id"]: TraceState(row["load_state"], int(row["nodes"]), bool(row["copies"]))
        for row in rows
    }


# each node query of a whole load (rows.py's node_rows) -> its form for several new traces,
# whose rows name their trace
NEW_TRACE_NODES = {
    "load/create_sessions": "load/create_new_sessions",
    "load/create_variables": "load/create_new_variables",
    "load/create_operations": "load/create_new_operations",
    "load/create_cases": "load/create_new_cases",
}


@dataclass(frozen=True)
class NewTrace:
    """A trace the graph holds nothing of, to be written with others in one transaction: its
    node rows, where the element ids they get go, and its relationship rows (made from those
    ids, so asked for once they are stored). Both row sources may be read twice (a retried
    transaction)."""

    trace_id: str
    props: dict[str, Any]
    counts: dict[str, int]
    node_rows: Callable[[], Iterable[QueryRow]]
    store_ids: Callable[[list[list[Any]]], None]
    relationship_rows: Callable[[], Iterable[QueryRow]]


def write_new_traces(db: Database, traces: Sequence[NewTrace]) -> tuple[list[int], int]:
    """Write new traces in ONE transaction, complete from the start: a handful of statements
    (one per query, every trace's rows together) however many traces there are, instead of a
    dozen transactions per trace. Returns the nodes written per trace (its Trace node
    included) and the relationships written in all."""

    def work(run: StepRunner) -> tuple[list[int], int]:
        run(
            get_query("load/create_new_traces"),
            {
                "traces": [
                    {"id": trace.trace_id, "props": trace.props, "counts": trace.counts}
                    for trace in traces
                ]
            },
        )
        nodes: dict[str, list[Row]] = {}
        for number, trace in enumerate(traces):
            for name, row in trace.node_rows():
                rows = nodes.setdefault(NEW_TRACE_NODES[name], [])
                rows.append({"trace": number, "trace_id": trace.trace_id, **row})
        ids: list[list[list[Any]]] = [[] for _ in traces]
        relationships = 0  # HAS_SESSION, HAS_CASE first
        for name, rows in nodes.items():
            created = run(get_query(name), {"rows": rows})
            relationships += created.relationships_created
            for number, n, element_id in created.records[0]["ids"]:
                ids[number].append([n, element_id])
        for trace, pairs in zip(traces, ids, strict=True):
            trace.store_ids(pairs)
        by_query: dict[str, list[Row]] = {}
        for trace in traces:
            for name, row in trace.relationship_rows():
                by_query.setdefault(name, []).append(row)
        for name, query_rows in by_query.items():
            relationships += run(get_query(name), {"rows": query_rows}).relationships_created
        return [1 + len(pairs) for pairs in ids], relationships

    return db.write_in_one(work)


def begin_trace(db: Database, trace_id: str, props: dict[str, Any]) -> int:
    """Mark the trace as loading and delete whatever an earlier load left; return nodes deleted."""
    db.run(get_query("load/begin_trace"), trace_id=trace_id, props=props, state="loading")
    return delete_trace_nodes(db, trace_id)


def begin_staged_copy(db: Database, trace_id: str, props: dict[str, Any]) -> int:
    """Start the new copy of a complete trace beside it, after deleting the leftovers of an
    interrupted re-load; return the leftover nodes deleted."""
    deleted = delete_reload_copies(db, trace_id)
    staged = {**props, "copy_of": trace_id}
    db.run(
        get_query("load/begin_trace"),
        trace_id=staged_trace_id(trace_id),
        props=staged,
        state="staging",
    )
    return deleted


def complete_trace(db: Database, trace_id: str, counts: dict[str, int]) -> None:
    db.run(get_query("load/complete_trace"), trace_id=trace_id, counts=counts)


def swap_in_staged_copy(
    db: Database, trace_id: str, counts: dict[str, int], max_nodes: int
) -> None:
    """In one transaction: the old copy becomes the retired copy (its attributions deleted) and
    the staged copy becomes the complete trace. Nothing changes unless the staged copy is there.

    ``max_nodes`` bounds what one re-key moves (each copy has at most that many nodes, which
    the caller checked); a server that still refuses the transaction for its memory raises
    ``TransactionTooLargeError`` and nothing changed."""
    staged, retired = staged_trace_id(trace_id), retired_trace_id(trace_id)
    rekey = get_query("load/rekey_copy")
    limit = max_nodes + 1  # one more than a copy can have: the re-key moves the whole copy
    _swap_trace_nodes(
        db,
        trace_id,
        counts,
        [
            (get_query("load/drop_attributions"), {"trace_id": trace_id}),
            (rekey, {"from_id": trace_id, "to_id": retired, "limit": limit}),
            (rekey, {"from_id": staged, "to_id": trace_id, "limit": limit}),
            _relink_reviews(trace_id),
        ],
    )


def replace_in_batches(db: Database, trace_id: str, counts: dict[str, int]) -> None:
    """The swap of a trace too big for one transaction: the trace reads as 'loading' (readers
    refuse it) while its old copy is re-keyed to the retired id and the staged copy to the trace
    id, batch by batch (re-keying is ~3x faster than deleting; the retired copy is deleted
    afterwards, with the trace already complete)."""
    db.run(get_query("load/mark_loading"), trace_id=trace_id)
    db.run(get_query("load/drop_attributions"), trace_id=trace_id)
    rekey = get_query("load/rekey_copy")
    for from_id, to_id in (
        (trace_id, retired_trace_id(trace_id)),
        (staged_trace_id(trace_id), trace_id),
    ):
        while True:
            moved = db.run(rekey, from_id=from_id, to_id=to_id, limit=DELETE_BATCH)[0]["moved"]
            if int(moved) < DELETE_BATCH:
                break
    _swap_trace_nodes(db, trace_id, counts, [_relink_reviews(trace_id)])


def _relink_reviews(trace_id: str) -> tuple[Query, dict[str, Any]]:
    """The swap's last step: people's reviews and labels move to the new copy."""
    return get_query("load/relink_reviews"), {"trace_id": trace_id}


def _swap_trace_nodes(
    db: Database, trace_id: str, counts: dict[str, int], more: list[tuple[Query, dict[str, Any]]]
) -> None:
    """Swap the two trace nodes (the staged one becomes complete) and run ``more`` steps, all
    in one transaction, which rolls back when the staged copy is not there."""

    def staged_copy_found(step: int, records: list[dict[str, Any]]) -> None:
        if step == 0 and records[0]["swapped"] != 1:
            # e.g. `db delete` removed it meanwhile: re-keying now would leave no copy at all
            raise MemtraceError(f"trace {trace_id!r}: its staged copy vanished before the swap")

    params = {
        "trace_id": trace_id,
        "staged_id": staged_trace_id(trace_id),
        "retired_id": retired_trace_id(trace_id),
        "counts": counts,
    }
    db.write_together([(get_query("load/swap_trace"), params), *more], check=staged_copy_found)


def fill_case_texts(db: Database) -> int:
    """After a bulk import (every case in the database is new): the case properties
    ``create_case_links`` sets from the variables (query and prediction texts) and the empty
    lists CSV cannot carry; returns the number of cases."""
    return int(db.run(get_query("load/bulk_case_texts"))[0]["cases"])


# -- appends to a timeline (loaders/append.py) --------------------------------------------------


class GraphPrior:
    """A timeline's state as an append asks for it: indexed lookups, each answer kept for the
    rest of the append (``Prior`` of otlp/prior.py). ``seen`` holds every earlier variable it
    handed out (the checks of the append read their categories)."""

    def __init__(self, db: Database, trace_id: str) -> None:
        self.db = db
        self.trace_id = trace_id
        self.seen: dict[str, PriorVariable] = {}
        self._by_text: dict[str, PriorVariable | None] = {}
        self._live: dict[str, PriorVariable | None] = {}
        self._messages: dict[str, PriorVariable | None] = {}
        self._documents: dict[str, tuple[PriorVariable | None, bool]] = {}

    def prefetch(self, texts: Sequence[str]) -> None:
        """Look up the latest holders of many texts at once (a request's inputs and outputs):
        one query instead of one per text."""
        self._lookup("load/prior_by_text", self._by_text, texts)

    def latest_with_text(self, text: str) -> PriorVariable | None:
        return self._lookup("load/prior_by_text", self._by_text, [text]).get(text)

    def live_document_with_text(self, text: str) -> PriorVariable | None:
        return self._lookup("load/prior_live_document", self._live, [text]).get(text)

    def message_with_text(self, text: str) -> PriorVariable | None:
        return self._lookup("load/prior_message", self._messages, [text]).get(text)

    def document(self, name: str) -> tuple[PriorVariable | None, bool]:
        if name not in self._documents:
            rows = self.db.run(
                get_query("load/prior_documents"), trace_id=self.trace_id, names=[name]
            )
            self._documents[name] = (
                (self._variable(rows[0]), bool(rows[0]["deleted"])) if rows else (None, False)
            )
        return self._documents[name]

    def documents_in_store(self, prefix: str) -> list[str]:
        rows = self.db.run(get_query("load/prior_store"), trace_id=self.trace_id, prefix=prefix)
        return [str(row["name"]) for row in rows]

    def variable(self, var_id: str) -> PriorVariable | None:
        rows = self.db.run(get_query("load/prior_variables"), trace_id=self.trace_id, ids=[var_id])
        return self._variable(rows[0]) if rows else None

    def _lookup(
        self, query: str, cache: dict[str, PriorVariable | None], texts: Sequence[str]
    ) -> dict[str, PriorVariable | None]:
        """The answers for ``texts`` (by their digests), asking only for those not yet known;
        a digest whose variable holds another text (a collision) is no answer."""
        keys = {text_key(text): text for text in texts}
        missing = [key for key in keys if key not in cache]
        if missing:
            found = {
                row["key"]: self._variable(row)
                for row in self.db.run(get_query(query), trace_id=self.trace_id, keys=missing)
            }
            for key in missing:
                cache[key] = found.get(key)
        answers = {}
        for key, text in keys.items():
            var = cache[key]
            answers[text] = var if var is not None and var.value == text else None
        return answers

    def _variable(self, row: dict[str, Any]) -> PriorVariable:
        var = PriorVariable(
            id=str(row["id"]),
            name=str(row["name"]),
            version=int(row["version"] or 1),
            value=row["value"],
            category=row["category"],
            class_name=row["class_name"],
        )
        self.seen[var.id] = var
        return var


@dataclass(frozen=True)
class AppendState:
    """What an append to a trace starts from (``load/append_state``)."""

    exists: bool
    next_seq: int | None
    known: frozenset[str]


def append_state(db: Database, trace_id: str, span_ids: Sequence[str]) -> AppendState:
    """Whether the trace exists, its next free seq (None: it was not made by appends), and
    which of ``span_ids`` it holds already."""
    row = db.run(get_query("load/append_state"), trace_id=trace_id, ids=list(span_ids))[0]
    next_seq = None if row["next_seq"] is None else int(row["next_seq"])
    return AppendState(bool(row["exists"]), next_seq, frozenset(row["known"]))


def known_cases(db: Database, trace_id: str, ids: Sequence[str]) -> set[str]:
    """Which of these case ids the timeline holds."""
    rows = db.run(get_query("load/known_cases"), trace_id=trace_id, ids=list(ids))
    return {str(row["id"]) for row in rows}


@dataclass(frozen=True)
class AppendWrite:
    """What one append writes: the trace node's properties (if the append creates it), its
    counts and next free seq, and each step's rows (query name -> rows)."""

    trace_id: str
    props: dict[str, Any]
    counts: dict[str, int]
    next_seq: int
    steps: dict[str, list[dict[str, Any]]]


def write_appends(db: Database, appends: Sequence[AppendWrite]) -> None:
    """Appends to different traces in ONE transaction (one commit for the lot): per append
    the trace node first (writing it locks it), then each step's rows."""
    steps: list[tuple[Query | str, dict[str, Any]]] = []
    for append in appends:
        steps.append(
            (
                get_query("load/append_trace"),
                {
                    "trace_id": append.trace_id,
                    "props": append.props,
                    "counts": append.counts,
                    "next_seq": append.next_seq,
                },
            )
        )
        steps += [
            (get_query(name), {"trace_id": append.trace_id, "rows": rows})
            for name, rows in append.steps.items()
        ]
    db.write_together(steps)
