"""Where replayers come from: one per trace, built on first use and kept for the run, from the
traces loaded in Neo4j (``LoadedTraces``, through the caller's ``Database``) or from native trace
files (``TraceFiles``). What the replay judge, ``patterns --what-if`` and the optimizer's
headroom get passed in. Safe to share between threads (``attribute --workers``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memtrace.db import Database
from memtrace.errors import MemtraceError, NotReplayableError
from memtrace.replay.engine import TraceReplayer, make_replayer
from memtrace.replay.hook import ReplayTrace, SystemReplayer, read_records
from memtrace.replay.inputs import inputs_from_records
from memtrace.replay.plugins import load_factory, registered_factory, replay_refusal
from memtrace.replay.store import ReplayStore
from memtrace.settings import Settings
from memtrace.systems.registry import SYSTEMS


class _Replayers:
    """One replayer per trace id, built once from the trace's native records; a refusal is kept
    too. The engine replays the systems memtrace runs; any other system needs a replayer
    factory (``replayer``: ``module:attr``, else one registered for the system's name)."""

    def __init__(self, settings: Settings | None, replayer: str | None = None) -> None:
        self.settings = settings
        self.factory = load_factory(replayer) if replayer else None  # a bad spec fails now
        self._built: dict[str, TraceReplayer | SystemReplayer] = {}
        self._refused: dict[str, NotReplayableError] = {}
        self._lock = threading.Lock()

    def for_trace(self, trace_id: str) -> TraceReplayer | SystemReplayer:
        with self._lock:
            replayer = self._built.get(trace_id)
            if replayer is not None:
                return replayer
            refused = self._refused.get(trace_id)
            if refused is not None:
                raise NotReplayableError(str(refused))
            try:
                replayer = self._make(trace_id)
            except NotReplayableError as exc:
                self._refused[trace_id] = exc
                raise
            self._built[trace_id] = replayer
            return replayer

    def refusal(self, trace_id: str) -> str | None:
        """Why ``trace_id`` cannot be replayed; None when it can. The one question
        ``attribute --judge auto`` asks the replay side (engine or plugin alike): it builds the
        trace's replayer as a replay would, and keeps it for the run."""
        try:
            self.for_trace(trace_id)
        except MemtraceError as exc:
            return str(exc)
        return None

    def _make(self, trace_id: str) -> TraceReplayer | SystemReplayer:
        records, where = self._records(trace_id)
        head = records[0] if records else {}
        system = head.get("system")
        if head.get("type") != "trace" or system in SYSTEMS:
            return make_replayer(inputs_from_records(records, where), self.settings)
        factory = self.factory or registered_factory(str(system))
        if factory is None:
            raise NotReplayableError(f"{where}: {replay_refusal(system)}")
        trace = ReplayTrace(trace_id, str(system), records, self.settings)
        try:
            return SystemReplayer(records, factory(trace))
        except NotReplayableError:
            raise
        except Exception as exc:  # the user's factory: its failure is this trace's refusal
            name = getattr(factory, "__qualname__", repr(factory))
            raise NotReplayableError(f"{where}: replayer {name} failed: {exc!r}") from exc

    def _records(self, trace_id: str) -> tuple[list[dict[str, Any]], str]:
        raise NotImplementedError


class LoadedTraces(_Replayers):
    """Replayers of traces loaded in Neo4j, their records read through the caller's ``db``."""

    def __init__(
        self, db: Database, settings: Settings | None = None, replayer: str | None = None
    ) -> None:
        super().__init__(settings, replayer)
        self.store = ReplayStore(db)

    def _records(self, trace_id: str) -> tuple[list[dict[str, Any]], str]:
        return self.store.trace_records(trace_id), f"trace {trace_id!r}"


class TraceFiles(_Replayers):
    """Replayers of native trace files by trace id (offline backends need no settings)."""

    def __init__(
        self,
        paths: Mapping[str, Path],
        settings: Settings | None = None,
        replayer: str | None = None,
    ) -> None:
        super().__init__(settings, replayer)
        self.paths = dict(paths)

    def _records(self, trace_id: str) -> tuple[list[dict[str, Any]], str]:
        path = self.paths.get(trace_id)
        if path is None:
            raise NotReplayableError(f"no trace file of trace {trace_id!r}")
        return read_records(path), str(path)
