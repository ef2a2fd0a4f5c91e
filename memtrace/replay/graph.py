"""Replayers for loaded traces: what the replay judge gets passed in (one per trace, built on
first use from the graph, kept for the run)."""

from __future__ import annotations

from memtrace.db import connect
from memtrace.replay.engine import Replayer, make_replayer
from memtrace.replay.inputs import inputs_from_records
from memtrace.replay.store import ReplayStore
from memtrace.settings import Settings


class GraphReplayers:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._replayers: dict[str, Replayer] = {}

    def for_trace(self, trace_id: str) -> Replayer:
        replayer = self._replayers.get(trace_id)
        if replayer is None:
            with connect(self.settings) as db:
                records = ReplayStore(db).trace_records(trace_id)
            inputs = inputs_from_records(records, f"trace {trace_id!r}")
            replayer = self._replayers[trace_id] = make_replayer(inputs, self.settings)
        return replayer
