"""Replayers for loaded traces: what the replay judge gets passed in (one per trace, built on
first use from the graph, kept for the run)."""

from __future__ import annotations

from memtrace.db import Database, connect
from memtrace.errors import MemtraceError
from memtrace.replay.engine import Replayer, make_replayer
from memtrace.replay.inputs import inputs_from_records
from memtrace.replay.store import ReplayStore
from memtrace.settings import Settings


def replay_refusal(db: Database, trace_id: str, settings: Settings) -> str | None:
    """Why the replay judge cannot re-run the loaded trace ``trace_id``; None when it can.

    The one question ``attribute --judge auto`` asks the replay side, so a new way to replay a
    system (a plugin) is picked up by answering it here. It reads the trace's records as a
    replay would, without re-running anything.
    """
    try:
        inputs = inputs_from_records(ReplayStore(db).trace_records(trace_id), f"trace {trace_id!r}")
    except MemtraceError as exc:
        return str(exc)
    if inputs.backend != "offline" and not settings.llm.base_url:
        return (
            f"trace {trace_id!r} ran the {inputs.backend} backend: replaying it needs an LLM "
            "endpoint (OPENAI_BASE_URL)"
        )
    return None


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
