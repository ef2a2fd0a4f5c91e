"""Every query of the receiver (``cypher/collect/``): the per-trace leases that let several
receivers share one database without two of them writing the same trace at once, and the spans
the graph already holds for a trace before it is loaded again.

A lease is a ``:CollectorLease`` node that exists only while its trace is being loaded: short
(``IngestOptions.lease_seconds``), renewed by a heartbeat while the load runs, deleted when it
is done, and owned by a spool rather than a process (spool.py's ``claim_spool``)."""

from __future__ import annotations

from collections.abc import Sequence

from memtrace.cypher import get_query
from memtrace.db import Database


class CollectStore:
    def __init__(self, db: Database, owner: str) -> None:
        self.db = db
        self.owner = owner

    def acquire(self, trace_ids: Sequence[str], seconds: float) -> list[str]:
        """The traces of ``trace_ids`` this receiver now holds (others are another's, for now)."""
        rows = self.db.run(
            get_query("collect/acquire_leases"),
            trace_ids=list(trace_ids),
            owner=self.owner,
            seconds=seconds,
        )
        return [row["trace_id"] for row in rows]

    def renew(self, trace_ids: Sequence[str], seconds: float) -> None:
        self.db.run(
            get_query("collect/renew_leases"),
            trace_ids=list(trace_ids),
            owner=self.owner,
            seconds=seconds,
        )

    def clear(self) -> int:
        """Delete this owner's leases and every expired one; return how many went."""
        rows = self.db.run(get_query("collect/clear_leases"), owner=self.owner)
        return int(rows[0]["cleared"]) if rows else 0

    def release(self, trace_ids: Sequence[str]) -> None:
        self.db.run(
            get_query("collect/release_leases"), trace_ids=list(trace_ids), owner=self.owner
        )

    def graph_spans(self, trace_ids: Sequence[str]) -> dict[str, set[str]]:
        """Per memtrace trace id of ``trace_ids``: the span ids of its operations in the graph
        (absent: none)."""
        rows = self.db.run(get_query("collect/graph_spans"), trace_ids=list(trace_ids))
        return {row["trace_id"]: set(row["span_ids"]) for row in rows}


def failed_cases(db: Database, trace_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(trace id, case id) of the failed cases of these complete traces, in one query."""
    rows = db.run(get_query("collect/failed_cases"), trace_ids=list(trace_ids))
    return [(row["trace_id"], row["case_id"]) for row in rows]
