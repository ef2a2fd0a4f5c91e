"""The validation pass: checks a whole trace and keeps, on disk, the index the write passes need.

Memory stays flat however large the trace: nothing per id is kept in process memory. Records
are numbered in file order (``recno``, the trace record is 0) and every definition and every
mention of an id is appended to a temporary SQLite database (bounded page cache; a file that is
unlinked as soon as it is opened). Cross-record rules (duplicates, identities, unknown ids), seq
and the writers of each variable are then computed there by a few set-oriented queries, and the
write passes read the file again side by side with cursors sorted by ``recno``, so no id is ever
looked up one by one from Python. Values are never kept: the write passes take them from the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic_core import PydanticSerializationError

from memtrace.errors import InputError
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
    parse_timestamp,
)

# kinds of ids; the order of OPERATION and VARIABLE is the seq tie-break (operations first), and
# the SQL below relies on both being the lowest (``kind <= VARIABLE``: the nodes that get a seq)
OPERATION, VARIABLE, SESSION, EDGE, CASE = range(5)
KINDS: Final = ("operation", "variable", "session", "edge", "case")

# roles of a mention: (field, as named in errors, and the kind of id it names)
ROLES: Final = (
    ("variable.session", SESSION),
    ("operation.session", SESSION),
    ("operation.reads[{}]", VARIABLE),
    ("operation.writes[{}]", VARIABLE),
    ("edge.op", OPERATION),
    ("edge.source", VARIABLE),
    ("edge.target", VARIABLE),
    ("case.query", VARIABLE),
    ("case.prediction", VARIABLE),
    ("case.evidence[{}]", VARIABLE),
    ("case.labels[{}].op_id", OPERATION),
)
(
    VAR_SESSION,
    OP_SESSION,
    READS,
    WRITES,
    EDGE_OP,
    EDGE_SOURCE,
    EDGE_TARGET,
    CASE_QUERY,
    CASE_PREDICTION,
    CASE_EVIDENCE,
    CASE_LABEL,
) = range(len(ROLES))

_FLUSH_ROWS = 20_000  # staged rows per executemany
_CACHE_KIB = 8_192  # SQLite page cache: the only part of the index that lives in memory
_MAX_INT = 2**63 - 1

_SCHEMA = """
CREATE TABLE defs(
    recno INTEGER PRIMARY KEY, kind INTEGER NOT NULL, id TEXT NOT NULL, loc TEXT NOT NULL,
    digest INTEGER NOT NULL, ts INTEGER, hint INTEGER, flag INTEGER,
    class_name TEXT, name TEXT, version INTEGER, n1 INTEGER, n2 INTEGER);
CREATE TABLE refs(
    mention INTEGER PRIMARY KEY, recno INTEGER NOT NULL, role INTEGER NOT NULL,
    i INTEGER NOT NULL, kind INTEGER NOT NULL, id TEXT NOT NULL);
CREATE TABLE eid(recno INTEGER PRIMARY KEY, eid TEXT NOT NULL);
"""

# first definition of each id, with its seq (operations and variables) and number of copies
_SETTLE = f"""
CREATE INDEX defs_key ON defs(kind, id);
CREATE INDEX identity ON defs(class_name, name, version) WHERE kind = {VARIABLE};
CREATE TABLE node(
    recno INTEGER PRIMARY KEY, kind INTEGER NOT NULL, seq INTEGER, flag INTEGER,
    copies INTEGER NOT NULL);
INSERT INTO node
SELECT recno, kind,
    CASE WHEN kind <= {VARIABLE} THEN
        row_number() OVER (PARTITION BY kind <= {VARIABLE} ORDER BY ts, hint, kind, id) - 1 END,
    flag, copies
FROM (SELECT min(recno) AS recno, kind, id, ts, hint, flag, count(*) AS copies
      FROM defs GROUP BY kind, id);
"""

_DUPLICATE = """
SELECT d.recno, d.loc, d.kind, d.id, f.loc
FROM node n JOIN defs f ON f.recno = n.recno
JOIN defs d ON d.kind = f.kind AND d.id = f.id AND d.recno > f.recno AND d.digest != f.digest
WHERE n.copies > 1 ORDER BY d.recno LIMIT 1
"""

_IDENTITY = f"""
SELECT recno, loc, id, first_id FROM (
    SELECT d.recno, d.loc, d.id, first_value(d.id) OVER w AS first_id, row_number() OVER w AS rn
    FROM defs d INDEXED BY identity JOIN node n ON n.recno = d.recno WHERE d.kind = {VARIABLE}
    WINDOW w AS (PARTITION BY d.class_name, d.name, d.version ORDER BY d.recno))
WHERE rn = 2 ORDER BY recno LIMIT 1
"""

# each mention of a first definition -> the record defining the id it names (NULL: unknown)
_TARGETS = f"""
CREATE TABLE target(
    mention INTEGER PRIMARY KEY, recno INTEGER NOT NULL, role INTEGER NOT NULL, node INTEGER);
INSERT INTO target
SELECT r.mention, r.recno, r.role,
    (SELECT x.recno FROM defs x WHERE x.kind = r.kind AND x.id = r.id ORDER BY x.recno LIMIT 1)
FROM refs r JOIN node n ON n.recno = r.recno;
CREATE INDEX writers ON target(node, mention) WHERE role = {WRITES};
"""

_UNKNOWN = """
SELECT r.role, r.i, r.id, d.loc FROM target t
JOIN refs r ON r.mention = t.mention JOIN defs d ON d.recno = t.recno
WHERE t.node IS NULL ORDER BY t.mention LIMIT 1
"""

_COUNTS = """
SELECT n.kind, count(*), sum(d.n1), sum(d.n2), sum(n.flag)
FROM node n JOIN defs d ON d.recno = n.recno GROUP BY n.kind
"""

_VERSIONS = f"""
SELECT older, newer FROM (
    SELECT lag(n.recno) OVER (PARTITION BY d.class_name, d.name ORDER BY d.version) AS older,
        n.recno AS newer, min(n.recno) OVER (PARTITION BY d.class_name, d.name) AS first
    FROM defs d INDEXED BY identity JOIN node n ON n.recno = d.recno WHERE d.kind = {VARIABLE})
WHERE older IS NOT NULL ORDER BY first, newer
"""

# identities (class_name, name) with more than one version: all their variables but the first
_VERSION_COUNT = f"""
SELECT count(*) - count(DISTINCT identity) FROM (
    SELECT d.recno, d.class_name, d.name, dense_rank() OVER (ORDER BY d.class_name, d.name)
        AS identity
    FROM defs d INDEXED BY identity JOIN node n ON n.recno = d.recno WHERE d.kind = {VARIABLE})
"""

_NODES = f"""
SELECT n.recno, d.ts, n.seq FROM node n JOIN defs d ON d.recno = n.recno
WHERE n.kind != {EDGE} ORDER BY n.recno
"""

_LINKED = f"""
SELECT n.recno, e.eid FROM node n LEFT JOIN eid e ON e.recno = n.recno
WHERE n.kind IN ({OPERATION}, {EDGE}, {CASE}) ORDER BY n.recno
"""

_ENDPOINTS = f"""
SELECT t.recno, t.role, e.eid, n.flag FROM target t
JOIN node n ON n.recno = t.node JOIN eid e ON e.recno = t.node
WHERE t.role != {VAR_SESSION} ORDER BY t.mention
"""

# for each read of an operation: the operations writing that variable earlier in seq order
_DEPENDS_ON = f"""
SELECT r.recno, e.eid, v.id FROM target r
JOIN node o ON o.recno = r.recno
JOIN target w ON w.node = r.node AND w.role = {WRITES}
JOIN node a ON a.recno = w.recno
JOIN eid e ON e.recno = w.recno
JOIN defs v ON v.recno = r.node
WHERE r.role = {READS} AND a.seq < o.seq
ORDER BY r.mention, w.mention
"""

_VERSION_IDS = f"""
SELECT eo.eid, en.eid FROM (
    SELECT lag(n.recno) OVER (PARTITION BY d.class_name, d.name ORDER BY d.version) AS older,
        n.recno AS newer
    FROM defs d INDEXED BY identity JOIN node n ON n.recno = d.recno WHERE d.kind = {VARIABLE})
JOIN eid eo ON eo.recno = older JOIN eid en ON en.recno = newer
"""


# Comparing two stages of one trace: the first definitions of one index (all but cases), copied
# into the other's database, against that one's first definitions.
_FIRSTS = f"""
SELECT d.recno, d.kind, d.id, d.loc, d.digest FROM node n JOIN defs d ON d.recno = n.recno
WHERE n.kind != {CASE} ORDER BY d.recno
"""
_EARLIER_SCHEMA = """
CREATE TEMP TABLE earlier(
    recno INTEGER PRIMARY KEY, kind INTEGER NOT NULL, id TEXT NOT NULL, loc TEXT NOT NULL,
    digest INTEGER NOT NULL)
"""
_NOT_IN_LATER = """
SELECT e.loc, e.kind, e.id, d.loc FROM earlier e
LEFT JOIN defs d
    ON d.recno = (SELECT min(x.recno) FROM defs x WHERE x.kind = e.kind AND x.id = e.id)
WHERE d.recno IS NULL OR d.digest != e.digest ORDER BY e.recno LIMIT 1
"""


@dataclass(slots=True)
class Counts:
    sessions: int = 0
    operations: int = 0
    variables: int = 0
    edges: int = 0
    cases: int = 0
    failed_cases: int = 0
    labels: int = 0
    reads: int = 0
    writes: int = 0
    evidence: int = 0
    next_versions: int = 0

    @property
    def nodes(self) -> int:
        return 1 + self.sessions + self.operations + self.variables + self.cases


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """A record that creates a node (its first definition), for write pass 1."""

    record: AnyRecord
    n: int  # the recno, returned with the element id of the node
    ts: int | None
    seq: int | None


@dataclass(frozen=True, slots=True)
class LinkedRecord:
    """A record that creates relationships, with the element ids of everything it names."""

    record: AnyRecord
    own: str | None  # the element id of its own node (operations, cases)
    endpoints: list[tuple[int, str, bool]]  # (role, element id, is a marker) in mention order
    depends_on: dict[str, list[str]] = field(default_factory=dict)  # writer -> variable ids


class TraceIndex:
    """The validated index of one trace file, in a temporary database ``close`` releases."""

    def __init__(self, path: str, trace: TraceRecord) -> None:
        self.path = path
        self.trace = trace
        self.counts = Counts()
        # "": a private on-disk database in SQLite's temp directory, unlinked as soon as it is
        # opened, so nothing is left behind even when the process is killed
        self.db = sqlite3.connect("", isolation_level=None)
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "temp_store = FILE"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        self.db.executescript(_SCHEMA)
        self._defs: list[tuple[object, ...]] = []
        self._refs: list[tuple[int, int, int, int, str]] = []

    def close(self) -> None:
        self.db.close()

    # -- the validation pass ---------------------------------------------------------------

    def define(
        self,
        recno: int,
        kind: int,
        key: str,
        location: str,
        digest: int,
        *,
        ts: int | None = None,
        hint: int | None = None,
        flag: bool | None = None,
        identity: tuple[str | None, str, int] | None = None,  # class_name, name, version
        n1: int | None = None,
        n2: int | None = None,
    ) -> None:
        """Stage a definition; ``n1``/``n2`` are the per-record counts summed into Counts."""
        class_name, name, version = identity or (None, None, None)
        self._defs.append(
            (recno, kind, key, location, digest, ts, hint, flag, class_name, name, version, n1, n2)
        )
        if len(self._defs) >= _FLUSH_ROWS:
            self._flush()

    def mention(self, recno: int, role: int, i: int, ref: str) -> None:
        self._refs.append((recno, role, i, ROLES[role][1], ref))
        if len(self._refs) >= _FLUSH_ROWS:
            self._flush()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction per batch (in autocommit mode each row would be its own)."""
        self.db.execute("BEGIN")
        yield
        self.db.execute("COMMIT")

    def _flush(self) -> None:
        with self._transaction():
            self.db.executemany(
                "INSERT INTO defs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self._defs
            )
            self.db.executemany(
                "INSERT INTO refs(recno, role, i, kind, id) VALUES (?, ?, ?, ?, ?)", self._refs
            )
        self._defs.clear()
        self._refs.clear()

    def settle(self, failed_at: int | None = None) -> None:
        """Check the cross-record rules on everything staged; raise InputError on the first.

        ``failed_at`` is the recno of a record that already failed on its own: a duplicate at
        or before it, or an identity clash before it, came first in file order and is raised
        instead (the same order as checking each record as it is read).
        """
        self._flush()
        self.db.executescript(_SETTLE)
        limit = _MAX_INT if failed_at is None else failed_at
        problems: list[tuple[int, InputError]] = []
        found = self.db.execute(_DUPLICATE).fetchone()
        if found is not None and found[0] <= limit:
            recno, loc, kind, key, first = found
            problem = (
                f"duplicate {KINDS[kind]} id {key!r} with different content "
                f"(first defined at {first})"
            )
            problems.append((recno, InputError(self.path, loc, problem)))
        found = self.db.execute(_IDENTITY).fetchone()
        if found is not None and found[0] < limit:
            recno, loc, key, other = found
            problem = f"variable {key!r} has the same class_name, name and version as {other!r}"
            problems.append((recno, InputError(self.path, loc, problem)))
        if problems:
            raise min(problems, key=lambda item: item[0])[1]
        if failed_at is not None:
            return
        self.db.executescript(_TARGETS)
        found = self.db.execute(_UNKNOWN).fetchone()
        if found is not None:
            role, i, key, loc = found
            name, kind = ROLES[role]
            raise InputError(self.path, loc, f"{name.format(i)}: unknown {KINDS[kind]} {key!r}")
        self._count()

    def _count(self) -> None:
        counts = self.counts
        for kind, n, n1, n2, flags in self.db.execute(_COUNTS):
            setattr(counts, KINDS[kind] + "s", n)
            if kind == OPERATION:
                counts.reads, counts.writes = n1, n2
            elif kind == CASE:
                counts.evidence, counts.labels, counts.failed_cases = n1, n2, flags
        counts.next_versions = self.db.execute(_VERSION_COUNT).fetchone()[0]

    # -- the write passes --------------------------------------------------------------------

    def nodes(self, records: Iterable[tuple[str, AnyRecord]]) -> Iterator[NodeRecord]:
        """The records that create nodes (repeats of an identical record are skipped)."""
        take = self._node_taker()
        for recno, (_, record) in enumerate(records):
            yield from take(recno, record)

    def _node_taker(self) -> Callable[[int, AnyRecord], list[NodeRecord]]:
        firsts = _Cursor(self.db.execute(_NODES))

        def take(recno: int, record: AnyRecord) -> list[NodeRecord]:
            return [NodeRecord(record, recno, ts, seq) for _, ts, seq in firsts.take(recno)]

        return take

    def store_element_ids(self, pairs: list[list[Any]]) -> None:
        """``[n, elementId]`` pairs returned by the node queries (a retried transaction's
        replace those of its first try)."""
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO eid VALUES (?, ?)", pairs)

    def number_nodes(self, offset: int) -> int:
        """For a bulk import: node ids ``offset + recno`` (the trace node is ``offset``), kept
        where the Bolt load keeps the element ids its node batches return; returns the next
        free id."""
        with self._transaction():
            self.db.execute(
                f"INSERT INTO eid SELECT recno, CAST(? + recno AS TEXT) FROM node "
                f"WHERE kind != {EDGE}",
                (offset,),
            )
        top = self.db.execute("SELECT max(recno) FROM node").fetchone()[0]
        return offset + int(top or 0) + 1

    def linked(self, records: Iterable[tuple[str, AnyRecord]]) -> Iterator[LinkedRecord]:
        """Operations, edges and cases (first definitions) with the element ids they need."""
        take = self._linked_taker()
        for recno, (_, record) in enumerate(records):
            yield from take(recno, record)

    def nodes_and_linked(
        self, records: Iterable[tuple[str, AnyRecord]]
    ) -> Iterator[tuple[list[NodeRecord], list[LinkedRecord]]]:
        """``nodes`` and ``linked`` in one read of the file, record by record: for a bulk
        import, whose node ids are known before any node is written (``number_nodes``)."""
        nodes, linked = self._node_taker(), self._linked_taker()
        for recno, (_, record) in enumerate(records):
            yield nodes(recno, record), linked(recno, record)

    def _linked_taker(self) -> Callable[[int, AnyRecord], list[LinkedRecord]]:
        firsts = _Cursor(self.db.execute(_LINKED))
        endpoints = _Cursor(self.db.execute(_ENDPOINTS))
        depends = _Cursor(self.db.execute(_DEPENDS_ON))

        def take(recno: int, record: AnyRecord) -> list[LinkedRecord]:
            found = []
            for _, own in firsts.take(recno):
                deps: dict[str, list[str]] = {}
                for _, writer, var in depends.take(recno):
                    via = deps.setdefault(writer, [])
                    if var not in via:
                        via.append(var)
                ends = [(role, eid, bool(flag)) for _, role, eid, flag in endpoints.take(recno)]
                found.append(LinkedRecord(record, own, ends, deps))
            return found

        return take

    def next_versions(self) -> Iterator[tuple[str, str]]:
        """(older, newer) element ids of consecutive versions of one variable."""
        yield from self.db.execute(_VERSION_IDS)

    # -- cumulative stages of one trace ---------------------------------------------------------

    @property
    def records(self) -> int:
        """Sessions, operations, variables and edges: what a later stage of the trace extends."""
        counts = self.counts
        return counts.sessions + counts.operations + counts.variables + counts.edges

    def first_difference(self, later: TraceIndex) -> tuple[str | None, str] | None:
        """Where this trace stops being an earlier stage of ``later`` (the location in this
        file, what differs); None when it is one.

        An earlier stage is a file whose trace record and every record (cases aside: they are
        derived from the whole graph, and a later stage adds the predictions and scores they
        read) occur unchanged in ``later``. Both indexes are settled.
        """
        if self.trace != later.trace:
            mine, theirs = self.trace.model_dump(), later.trace.model_dump()
            fields = ", ".join(key for key in mine if mine[key] != theirs[key])
            return None, f"its trace record differs from {later.path}'s in {fields}"
        later.db.execute(_EARLIER_SCHEMA)
        try:
            with later._transaction():
                later.db.executemany(
                    "INSERT INTO earlier VALUES (?, ?, ?, ?, ?)", self.db.execute(_FIRSTS)
                )
            found = later.db.execute(_NOT_IN_LATER).fetchone()
        finally:
            later.db.execute("DROP TABLE earlier")
        if found is None:
            return None
        loc, kind, key, later_loc = found
        if later_loc is None:
            return loc, f"{KINDS[kind]} {key!r} is not in {later.path}"
        return loc, f"{KINDS[kind]} {key!r} differs from {_place(later_loc)} of {later.path}"

    # -- for tests and diagnostics -------------------------------------------------------------

    def seq_order(self) -> list[str]:
        """Operation and variable ids in seq order."""
        rows = self.db.execute(
            "SELECT d.id FROM node n JOIN defs d ON d.recno = n.recno "
            f"WHERE n.kind <= {VARIABLE} ORDER BY n.seq"
        )
        return [key for (key,) in rows]

    def version_ids(self) -> list[tuple[str, str]]:
        """(older, newer) variable ids of consecutive versions."""
        rows = self.db.execute(
            f"SELECT o.id, n.id FROM ({_VERSIONS}) "
            "JOIN defs o ON o.recno = older JOIN defs n ON n.recno = newer"
        )
        return [(older, newer) for older, newer in rows]


class _Cursor:
    """Rows of a query sorted by recno (first column), taken record by record in file order."""

    def __init__(self, rows: Iterator[tuple[Any, ...]]) -> None:
        self.rows = rows
        self.head = next(rows, None)

    def take(self, recno: int) -> list[tuple[Any, ...]]:
        found = []
        while self.head is not None and self.head[0] <= recno:
            if self.head[0] == recno:
                found.append(self.head)
            self.head = next(self.rows, None)
        return found


def _place(location: str) -> str:
    """A record's location as a message names it: native files count lines."""
    return f"line {location}" if location.isdigit() else location


def build_index(path: str, source: Iterable[tuple[str, AnyRecord]]) -> TraceIndex:
    """Validate every record and cross-record rule; raise InputError on the first problem.

    The caller closes the index it gets back; on an error it is closed here.
    """
    records = iter(source)
    _, trace = next(records)
    if not isinstance(trace, TraceRecord):
        raise InputError(path, None, "the first record must be the trace record")
    index = TraceIndex(path, trace)
    try:
        _stage_all(index, records)
    except BaseException:
        index.close()
        raise
    return index


def _stage_all(index: TraceIndex, records: Iterator[tuple[str, AnyRecord]]) -> None:
    recno = 0
    while True:
        try:
            location, record = next(records)
        except StopIteration:
            break
        except InputError:
            index.settle(failed_at=recno + 1)  # an earlier cross-record problem comes first
            raise
        recno += 1
        try:
            _stage(index, recno, location, record)
        except InputError:
            index.settle(failed_at=recno)
            raise
    index.settle()


def _stage(index: TraceIndex, recno: int, location: str, record: AnyRecord) -> None:
    """Stage one record; its own problems (timestamps) are raised after it is staged."""
    path = index.path
    try:
        digest = hash(record.model_dump_json())
    except PydanticSerializationError as exc:
        raise InputError(path, location, _unserializable(record, exc)) from None
    mention = index.mention
    match record:
        case VariableRecord():
            ts, bad = _ts(path, location, record.created_at)
            index.define(
                recno,
                VARIABLE,
                record.id,
                location,
                digest,
                ts=ts,
                hint=_hint(path, location, record),
                flag=record.is_marker,
                identity=(record.class_name, record.name, record.version),
            )
            if bad is not None:
                raise bad
            if record.session is not None:
                mention(recno, VAR_SESSION, 0, record.session)
        case OperationRecord():
            ts, bad = _ts(path, location, record.created_at)
            index.define(
                recno,
                OPERATION,
                record.id,
                location,
                digest,
                ts=ts,
                hint=_hint(path, location, record),
                n1=len(set(record.reads)),
                n2=len(set(record.writes)),
            )
            if bad is not None:
                raise bad
            if record.session is not None:
                mention(recno, OP_SESSION, 0, record.session)
            for i, var in enumerate(record.reads):
                mention(recno, READS, i, var)
            for i, var in enumerate(record.writes):
                mention(recno, WRITES, i, var)
        case SessionRecord():
            index.define(recno, SESSION, record.id, location, digest)
            if record.created_at is not None:
                bad = _ts(path, location, record.created_at)[1]
                if bad is not None:
                    raise bad
        case EdgeRecord():
            index.define(recno, EDGE, record.id, location, digest)
            mention(recno, EDGE_OP, 0, record.op)
            mention(recno, EDGE_SOURCE, 0, record.source)
            mention(recno, EDGE_TARGET, 0, record.target)
        case CaseRecord():
            index.define(
                recno,
                CASE,
                record.id,
                location,
                digest,
                flag=record.is_failed is True,
                n1=len(set(record.evidence)),
                n2=len(record.labels),
            )
            mention(recno, CASE_QUERY, 0, record.query)
            if record.prediction is not None:
                mention(recno, CASE_PREDICTION, 0, record.prediction)
            for i, var in enumerate(record.evidence):
                mention(recno, CASE_EVIDENCE, i, var)
            for i, label in enumerate(record.labels):
                mention(recno, CASE_LABEL, i, label.op_id)
        case TraceRecord():
            raise InputError(path, location, "a second trace record: one trace per file")


def _ts(path: str, location: str, text: str) -> tuple[int | None, InputError | None]:
    try:
        return parse_timestamp(text), None
    except (ValueError, OverflowError) as exc:
        return None, InputError(path, location, str(exc))


def _hint(path: str, location: str, record: OperationRecord | VariableRecord) -> int:
    hint = record.seq or 0
    if hint > _MAX_INT:
        raise InputError(path, location, f"{record.type}.seq: larger than {_MAX_INT}")
    return hint


def _unserializable(record: AnyRecord, exc: PydanticSerializationError) -> str:
    """JSON parsers accept what Neo4j and UTF-8 cannot hold; say which of those it is."""
    text = str(exc)
    if "surrogates not allowed" in text:
        return (
            f"{record.type}: text with a lone UTF-16 surrogate escape (e.g. \\udc88 without its "
            "pair) is not valid Unicode"
        )
    if "depth" in text:
        return f"{record.type}: nested too deeply (metadata hundreds of levels deep)"
    return f"{record.type}: cannot be stored ({text})"
