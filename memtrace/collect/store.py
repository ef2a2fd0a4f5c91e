"""Every query of the receiver (``cypher/collect/``): the per-trace leases that let several
receivers share one database without two of them writing the same trace at once."""

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
            seconds=int(seconds),
        )
        return [row["trace_id"] for row in rows]

    def release(self, trace_ids: Sequence[str]) -> None:
        self.db.run(
            get_query("collect/release_leases"), trace_ids=list(trace_ids), owner=self.owner
        )
