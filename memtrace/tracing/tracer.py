"""The recording core: turns registered variables and finished operations into native records.

Write order keeps every prefix of the file valid: a variable is written when it is registered,
an operation (with its reads and writes) when it finishes, its edges right after it, a case
when it is recorded. Everything a record references is therefore already in the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import orjson

from memtrace.tracing.clock import Clock, WallClock
from memtrace.tracing.writer import JsonlWriter

FORMAT_VERSION = 1
MARKER_NAME = "deleted"


class Var(NamedTuple):
    """A handle on one recorded version of a variable (a tuple: cheap to create)."""

    id: str
    name: str
    version: int
    class_name: str | None = None


OFF = Var(id="", name="", version=0)  # what the API hands out while tracing is off


def text(value: Any) -> str | None:
    """Variable values are text; structured values become canonical JSON."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class OpState:
    """An open operation. Reads and writes are dicts used as ordered sets."""

    __slots__ = (
        "category",
        "created_at",
        "edges",
        "id",
        "kind",
        "metadata",
        "name",
        "reads",
        "seq",
        "session",
        "writes",
    )

    def __init__(
        self,
        op_id: str,
        name: str,
        created_at: str,
        seq: int,
        session: str | None,
        category: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.id = op_id
        self.name = name
        self.created_at = created_at
        self.seq = seq
        self.session = session
        self.category = category
        self.kind = kind
        self.metadata: dict[str, Any] = dict(metadata) if metadata else {}
        self.reads: dict[str, None] = {}
        self.writes: dict[str, None] = {}
        self.edges: list[tuple[str, str]] = []

    def read(self, *variables: Var) -> None:
        for var in variables:
            if var.id and var.id not in self.writes:
                self.reads[var.id] = None

    def write(self, *variables: Var) -> None:
        for var in variables:
            if var.id:
                self.writes[var.id] = None

    def edge(self, source: Var, target: Var) -> None:
        """Exact flow ``source -> target`` inside this operation (both become endpoints)."""
        if source.id and target.id:
            self.read(source)
            self.writes[target.id] = None
            self.edges.append((source.id, target.id))


class Tracer:
    """One trace file. Thread-safe: counters, version table and the file share one lock."""

    def __init__(
        self,
        path: Path,
        trace_id: str,
        *,
        system: str | None = None,
        dataset: str | None = None,
        clock: Clock | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.path = path
        self._clock = clock or WallClock()
        self._writer = JsonlWriter(path)
        self._lock = self._writer.lock  # one lock: ids, versions and the buffer stay in order
        self._seq = 0
        self._counters: dict[str, int] = {}
        self._latest: dict[tuple[str | None, str], tuple[Var, str | None]] = {}
        self._sessions: dict[str, str] = {}  # name -> id of sessions opened without an id
        with self._lock:
            self._emit(
                {
                    "type": "trace",
                    "format_version": FORMAT_VERSION,
                    "id": trace_id,
                    "system": system,
                    "dataset": dataset,
                    "created_at": self._clock.now(),
                    "metadata": metadata or None,
                }
            )

    def _emit(self, record: dict[str, Any]) -> None:
        """Queue one record as a line (the caller holds the lock, so lines keep their order)."""
        line = orjson.dumps(
            {k: v for k, v in record.items() if v is not None}, option=orjson.OPT_APPEND_NEWLINE
        )
        self._writer.append(line)

    def _next(self, prefix: str) -> str:
        count = self._counters.get(prefix, 0) + 1
        self._counters[prefix] = count
        return f"{prefix}-{count:06d}"

    def session(
        self,
        name: str,
        *,
        session_id: str | None = None,
        category: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """The session's id; a name opened again without an explicit id is the same session."""
        with self._lock:
            sid = session_id or self._sessions.get(name) or self._next("session")
            if sid not in self._sessions.values():
                self._sessions[session_id or name] = sid
                self._emit(
                    {
                        "type": "session",
                        "id": sid,
                        "name": name,
                        "category": category,
                        "created_at": self._clock.now(),
                        "metadata": metadata or None,
                    }
                )
            return sid

    def variable(
        self,
        name: str,
        value: Any,
        *,
        category: str | None = None,
        class_name: str | None = None,
        session: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Var:
        """The variable ``(class_name, name)`` holding ``value``: a new version if it changed."""
        value_text = text(value)
        key = (class_name, name)
        with self._lock:
            latest = self._latest.get(key)
            if latest is not None and latest[1] == value_text:
                return latest[0]
            version = latest[0].version + 1 if latest else 1
            prefix = f"{class_name}:{name}" if class_name else name
            var = Var(id=f"{prefix}@{version}", name=name, version=version, class_name=class_name)
            self._latest[key] = (var, value_text)
            self._seq += 1
            self._emit(
                {
                    "type": "variable",
                    "id": var.id,
                    "name": name,
                    "version": version,
                    "category": category,
                    "class_name": class_name,
                    "value": value_text,
                    "created_at": self._clock.now(),
                    "seq": self._seq,
                    "session": session,
                    "metadata": metadata or None,
                }
            )
            return var

    def marker(self) -> Var:
        """The one deletion marker variable of this trace."""
        return self.variable(MARKER_NAME, "DELETED", category="marker", class_name="delete_marker")

    def start_operation(
        self,
        name: str,
        *,
        session: str | None,
        category: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> OpState:
        with self._lock:
            self._seq += 1
            op_id = self._next("op")
            return OpState(
                op_id, name, self._clock.now(), self._seq, session, category, kind, metadata
            )

    def finish_operation(self, op: OpState) -> None:
        with self._lock:
            self._emit(
                {
                    "type": "operation",
                    "id": op.id,
                    "name": op.name,
                    "kind": op.kind,
                    "category": op.category,
                    "session": op.session,
                    "created_at": op.created_at,
                    "seq": op.seq,
                    "reads": list(op.reads),
                    "writes": list(op.writes),
                    "metadata": op.metadata or None,
                }
            )
            for source, target in op.edges:
                self._emit(
                    {
                        "type": "edge",
                        "id": self._next("edge"),
                        "op": op.id,
                        "source": source,
                        "target": target,
                    }
                )

    def case(self, record: dict[str, Any]) -> None:
        """A native ``case`` record (fields as in docs/trace-format.md, without ``type``)."""
        with self._lock:
            self._emit({"type": "case", **record})

    def flush(self) -> None:
        """Hand the buffered records to the OS now (they are also flushed within ~0.1 s)."""
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
