"""The recording core: turns registered variables and finished operations into native records.

Write order keeps every prefix of the file valid: a variable is written when it is registered,
an operation (with its reads, writes and edges) when it finishes, a case when it is recorded.
Everything a record references is therefore already in the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from memtrace.taxonomy import FORMAT_VERSION
from memtrace.tracing.clock import Clock, WallClock
from memtrace.tracing.writer import JsonlWriter

MARKER_NAME = "deleted"

_dumps = orjson.dumps
_LINE = orjson.OPT_APPEND_NEWLINE
_SORT_KEYS = orjson.OPT_SORT_KEYS
_SCALARS = frozenset({int, float, bool})  # immutable: the same object always has the same text
_new_tuple = tuple.__new__  # builds a Var without NamedTuple's Python-level __new__


class Var(NamedTuple):
    """A handle on one recorded version of a variable (a tuple: cheap to create)."""

    id: str
    name: str
    version: int
    class_name: str | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Var:
        return self  # immutable all through: a replay's snapshot shares it, without the walk


OFF = Var(id="", name="", version=0)  # what the API hands out while tracing is off

# The tracer's entry for the latest version of an identity: id, version, value text, the value if
# an immutable scalar, category.
Latest = tuple[str, int, str | None, Any, str | None]

# The fields of a ``case`` record (docs/trace-format.md), checked by ``case()`` while tracing;
# tests/unit/test_tracing_sdk.py keeps them equal to the loader's CaseRecord.
CASE_FIELDS = (
    "id",
    "query",
    "query_text",
    "prediction",
    "prediction_text",
    "golden_answers",
    "judge_score",
    "failed",
    "category",
    "evidence",
    "missing_evidence",
    "labels",
    "metadata",
)
CASE_REQUIRED = ("id", "query")


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
        reads, writes = self.reads, self.writes
        for var in variables:
            var_id = var[0]
            if var_id and var_id not in writes:
                reads[var_id] = None

    def write(self, *variables: Var) -> None:
        writes = self.writes
        for var in variables:
            if var[0]:
                writes[var[0]] = None

    def edge(self, source: Var, target: Var) -> None:
        """Exact flow ``source -> target`` inside this operation (both become endpoints)."""
        self.edges_to((source,), target)

    def edges_to(self, sources: Iterable[Var], target: Var) -> None:
        """``edge(source, target)`` for each source in order."""
        target_id = target[0]
        if not target_id:
            return
        reads, writes, append = self.reads, self.writes, self.edges.append
        for source in sources:
            source_id = source[0]
            if source_id:
                if source_id not in writes:
                    reads[source_id] = None
                writes[target_id] = None
                append((source_id, target_id))


class Tracer:
    """One trace file. Thread-safe: counters, version table and the buffer share one lock.

    Per record this is the hot path of a traced run, so records are built directly as dicts
    holding only their non-null fields, in the documented field order, and serialized once.
    """

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
        self._now = self._clock.now
        self._writer = JsonlWriter(path)
        self._append = self._writer.append
        self._lock = self._writer.lock  # one lock: ids, versions and the buffer stay in order
        self._seq = 0
        self._ops = 0
        self._session_count = 0
        # (class_name, name) -> (id, version, value text, the value if an immutable scalar,
        # category) of the latest version. Only atomic fields in a plain tuple: the garbage
        # collector stops tracking such a tuple, so a long trace does not make full collections
        # ever costlier (a Var is a tuple subclass and would stay tracked for the whole run).
        self._latest: dict[tuple[str | None, str], Latest] = {}
        self._sessions: dict[str, str] = {}  # name -> id of sessions opened without an id
        self._session_ids: set[str] = set()
        with self._lock:
            self._emit(
                {
                    "type": "trace",
                    "format_version": FORMAT_VERSION,
                    "id": trace_id,
                    "system": system,
                    "dataset": dataset,
                    "created_at": self._now(),
                    "metadata": metadata or None,
                }
            )

    def _emit(self, record: dict[str, Any]) -> None:
        """Queue one record as a line, leaving out null fields (the caller holds the lock)."""
        self._append(_dumps({k: v for k, v in record.items() if v is not None}, option=_LINE))

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
            sid = session_id or self._sessions.get(name)
            if sid is None:
                self._session_count += 1
                sid = "session-%06d" % self._session_count  # noqa: UP031 - faster than f"{:06d}"
            if sid not in self._session_ids:
                self._session_ids.add(sid)
                self._sessions[session_id or name] = sid
                self._emit(
                    {
                        "type": "session",
                        "id": sid,
                        "name": name,
                        "category": category,
                        "created_at": self._now(),
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
        key = (class_name, name)
        latest = self._latest.get(key)
        cls = value.__class__
        if cls is str or value is None:
            value_text = value
        elif latest is not None and latest[3] is value and cls in _SCALARS:
            # the very same immutable scalar: its text cannot have changed
            return _new_tuple(Var, (latest[0], name, latest[1], class_name))
        else:
            value_text = _dumps(value, option=_SORT_KEYS).decode()
        if latest is not None and latest[2] == value_text:
            # unchanged (checked again under the lock before a new version is made)
            return _new_tuple(Var, (latest[0], name, latest[1], class_name))
        with self._lock:
            latest = self._latest.get(key)
            if latest is None:
                version = 1
            elif latest[2] == value_text:
                return _new_tuple(Var, (latest[0], name, latest[1], class_name))
            else:
                version = latest[1] + 1
            var_id = f"{class_name}:{name}@{version}" if class_name else f"{name}@{version}"
            scalar = value if cls in _SCALARS else None
            self._latest[key] = (var_id, version, value_text, scalar, category)
            self._seq += 1
            record: dict[str, Any] = {
                "type": "variable",
                "id": var_id,
                "name": name,
                "version": version,
            }
            if category is not None:
                record["category"] = category
            if class_name is not None:
                record["class_name"] = class_name
            if value_text is not None:
                record["value"] = value_text
            record["created_at"] = self._now()
            record["seq"] = self._seq
            if session is not None:
                record["session"] = session
            if metadata:
                record["metadata"] = metadata
            self._append(_dumps(record, option=_LINE))
        return _new_tuple(Var, (var_id, name, version, class_name))

    def latest(self, key: tuple[str | None, str]) -> Latest | None:
        """The entry ``(id, version, value text, scalar, category)`` of the latest version of
        ``key`` (``(class_name, name)``); a new version replaces the entry with a new tuple."""
        return self._latest.get(key)

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
            self._ops += 1
            return OpState(
                "op-%06d" % self._ops,  # noqa: UP031
                name,
                self._now(),
                self._seq,
                session,
                category,
                kind,
                metadata,
            )

    def finish_operation(self, op: OpState) -> None:
        """The operation record, its edges inline (one line instead of one per edge)."""
        record: dict[str, Any] = {"type": "operation", "id": op.id, "name": op.name}
        if op.kind is not None:
            record["kind"] = op.kind
        if op.category is not None:
            record["category"] = op.category
        if op.session is not None:
            record["session"] = op.session
        record["created_at"] = op.created_at
        record["seq"] = op.seq
        record["reads"] = list(op.reads)
        record["writes"] = list(op.writes)
        if op.edges:
            record["edges"] = op.edges
        if op.metadata:
            record["metadata"] = op.metadata
        line = _dumps(record, option=_LINE)
        with self._lock:
            self._append(line)

    def case(self, record: dict[str, Any]) -> None:
        """A native ``case`` record (fields as in docs/trace-format.md, without ``type``)."""
        with self._lock:
            self._emit({"type": "case", **record})

    def flush(self) -> None:
        """Hand the buffered records to the OS now (they are also flushed within ~0.1 s)."""
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
