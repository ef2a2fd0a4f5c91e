"""The validation pass: checks a whole trace and keeps the compact index the write passes need.

Values are never kept: the write passes read the file again. Per id the index keeps an interned
slot (``dict[str, int]``) and a few machine integers in ``array`` columns (first location,
content digest, timestamp, seq, first writer), so memory per element is a few dozen bytes instead
of Python objects per id, reference and writer. References to ids not defined yet are kept only
until the definition arrives (in a well-ordered trace that is a handful at any time).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

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

RecordSource = Callable[[], Iterator[tuple[str, AnyRecord]]]

UNDEFINED = -(2**63)  # location key of an id that was referenced but is not defined (yet)


class Locations:
    """Locations as integers: line numbers as themselves, other locations (JSON paths) as -n."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.keys: dict[str, int] = {}

    def key(self, location: str) -> int:
        if location.isdecimal():
            return int(location)
        found = self.keys.get(location)
        if found is None:
            self.texts.append(location)
            found = self.keys[location] = -len(self.texts)
        return found

    def text(self, key: int) -> str:
        return str(key) if key >= 0 else self.texts[-key - 1]


class Table:
    """The ids of one record type: id -> slot, and per slot its first location and digest."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.loc = array("q")
        self.digest = array("q")
        self._names: list[str] | None = None

    def slot(self, key: str) -> int:
        """The slot of an id, interning it (as undefined) on first mention."""
        slot = self.ids.get(key)
        if slot is None:
            slot = self.ids[key] = len(self.loc)
            self._grow()
        return slot

    def _grow(self) -> None:
        self.loc.append(UNDEFINED)
        self.digest.append(0)

    def __contains__(self, key: str) -> bool:
        slot = self.ids.get(key)
        return slot is not None and self.loc[slot] != UNDEFINED

    def name(self, slot: int) -> str:
        """The id of a slot (slots are assigned in insertion order)."""
        if self._names is None or len(self._names) != len(self.ids):
            self._names = list(self.ids)
        return self._names[slot]


class NodeTable(Table):
    """Operations or variables: also timestamp, tie-break hint, seq, marker flag, first writer."""

    def __init__(self) -> None:
        super().__init__()
        self.ts = array("q")
        self.hint = array("q")
        self.seq = array("q")
        self.marker = bytearray()
        self.writer = array("q")  # variables: the first operation writing it (-1: none)
        self.version = array("q")  # variables: the version

    def _grow(self) -> None:
        super()._grow()
        self.ts.append(0)
        self.hint.append(0)
        self.seq.append(-1)
        self.marker.append(0)
        self.writer.append(-1)
        self.version.append(0)


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


@dataclass
class TraceIndex:
    path: str
    trace: TraceRecord
    locations: Locations = field(default_factory=Locations)
    sessions: Table = field(default_factory=Table)
    operations: NodeTable = field(default_factory=NodeTable)
    variables: NodeTable = field(default_factory=NodeTable)
    edges: Table = field(default_factory=Table)
    cases: Table = field(default_factory=Table)
    more_writers: dict[int, list[int]] = field(default_factory=dict)  # variable -> 2nd.. writers
    next_version_slots: list[tuple[int, int]] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)

    def table(self, record: AnyRecord) -> Table | None:
        match record:
            case OperationRecord():
                return self.operations
            case VariableRecord():
                return self.variables
            case SessionRecord():
                return self.sessions
            case EdgeRecord():
                return self.edges
            case CaseRecord():
                return self.cases
        return None

    def is_first(self, location: str, record: AnyRecord) -> bool:
        """False for a repeated identical record (it was validated and is written once)."""
        table = self.table(record)
        if table is None:
            return True
        return table.loc[table.ids[record.id]] == self.locations.key(location)

    def seq(self, record: OperationRecord | VariableRecord) -> int:
        table = self.operations if isinstance(record, OperationRecord) else self.variables
        return table.seq[table.ids[record.id]]

    def writers(self, var: int) -> list[int]:
        first = self.variables.writer[var]
        if first < 0:
            return []
        return [first, *self.more_writers.get(var, ())]

    def depends_on_slots(self, op: OperationRecord) -> dict[int, list[int]]:
        """Earlier operations (slots) that wrote a variable ``op`` reads, with the variables."""
        ops = self.operations
        mine = ops.seq[ops.ids[op.id]]
        found: dict[int, list[int]] = {}
        for var_id in dict.fromkeys(op.reads):
            var = self.variables.ids[var_id]
            for writer in self.writers(var):
                if ops.seq[writer] < mine:
                    found.setdefault(writer, []).append(var)
        return found

    def depends_on(self, op: OperationRecord) -> dict[str, list[str]]:
        """``depends_on_slots`` with ids (for tests and diagnostics)."""
        return {
            self.operations.name(op_slot): [self.variables.name(var) for var in via]
            for op_slot, via in self.depends_on_slots(op).items()
        }

    @property
    def next_versions(self) -> list[tuple[str, str]]:
        name = self.variables.name
        return [(name(older), name(newer)) for older, newer in self.next_version_slots]


class _References:
    """Mentions of ids that are not defined yet, forgotten as soon as the definition arrives."""

    def __init__(self, index: TraceIndex) -> None:
        self.index = index
        # (kind, slot) -> (mention number, location key, field) of the first unresolved mention
        self.open: dict[tuple[str, int], tuple[int, int, str]] = {}
        self.mentions = 0

    def mention(self, kind: str, table: Table, ref: str, loc: int, field_name: str) -> int:
        slot = table.slot(ref)
        self.mentions += 1
        if table.loc[slot] == UNDEFINED:
            self.open.setdefault((kind, slot), (self.mentions, loc, field_name))
        return slot

    def define(self, kind: str, slot: int) -> None:
        if self.open:
            self.open.pop((kind, slot), None)

    def check(self) -> None:
        if not self.open:
            return
        (kind, slot), (_, loc, field_name) = min(self.open.items(), key=lambda item: item[1][0])
        index = self.index
        table = {"variable": index.variables, "operation": index.operations}.get(
            kind, index.sessions
        )
        raise InputError(
            index.path,
            index.locations.text(loc),
            f"{field_name}: unknown {kind} {table.name(slot)!r}",
        )


def build_index(path: str, source: Iterable[tuple[str, AnyRecord]]) -> TraceIndex:
    """Validate every record and cross-record rule; raise InputError on the first problem."""
    records = iter(source)
    _, trace = next(records)
    if not isinstance(trace, TraceRecord):
        raise InputError(path, None, "the first record must be the trace record")
    index = TraceIndex(path, trace)
    refs = _References(index)
    # (class_name, name) -> the slot of its only version, or {version: slot} once there are more
    identities: dict[tuple[str | None, str], int | dict[int, int]] = {}
    counts = index.counts
    ops, variables, sessions = index.operations, index.variables, index.sessions
    key = index.locations.key
    for location, record in records:
        digest = hash(record.model_dump_json())
        loc = key(location)
        match record:
            case VariableRecord():
                slot = variables.slot(record.id)
                if _duplicate(index, variables, slot, digest, location, record):
                    continue
                variables.loc[slot] = loc
                variables.digest[slot] = digest
                variables.ts[slot] = _ts(path, location, record.created_at)
                variables.hint[slot] = record.seq or 0
                variables.marker[slot] = record.is_marker
                refs.define("variable", slot)
                variables.version[slot] = record.version
                _add_identity(index, identities, slot, record, location)
                if record.session is not None:
                    refs.mention("session", sessions, record.session, loc, "variable.session")
                counts.variables += 1
            case OperationRecord():
                slot = ops.slot(record.id)
                if _duplicate(index, ops, slot, digest, location, record):
                    continue
                ops.loc[slot] = loc
                ops.digest[slot] = digest
                ops.ts[slot] = _ts(path, location, record.created_at)
                ops.hint[slot] = record.seq or 0
                refs.define("operation", slot)
                if record.session is not None:
                    refs.mention("session", sessions, record.session, loc, "operation.session")
                for i, var in enumerate(record.reads):
                    refs.mention("variable", variables, var, loc, f"operation.reads[{i}]")
                written = [
                    refs.mention("variable", variables, var, loc, f"operation.writes[{i}]")
                    for i, var in enumerate(record.writes)
                ]
                for written_slot in dict.fromkeys(written):
                    if variables.writer[written_slot] < 0:
                        variables.writer[written_slot] = slot
                    else:
                        index.more_writers.setdefault(written_slot, []).append(slot)
                counts.operations += 1
                counts.reads += len(dict.fromkeys(record.reads))
                counts.writes += len(dict.fromkeys(record.writes))
            case SessionRecord():
                slot = sessions.slot(record.id)
                if _duplicate(index, sessions, slot, digest, location, record):
                    continue
                sessions.loc[slot] = loc
                sessions.digest[slot] = digest
                refs.define("session", slot)
                if record.created_at is not None:
                    _ts(path, location, record.created_at)
                counts.sessions += 1
            case EdgeRecord():
                slot = index.edges.slot(record.id)
                if _duplicate(index, index.edges, slot, digest, location, record):
                    continue
                index.edges.loc[slot] = loc
                index.edges.digest[slot] = digest
                refs.mention("operation", ops, record.op, loc, "edge.op")
                refs.mention("variable", variables, record.source, loc, "edge.source")
                refs.mention("variable", variables, record.target, loc, "edge.target")
                counts.edges += 1
            case CaseRecord():
                slot = index.cases.slot(record.id)
                if _duplicate(index, index.cases, slot, digest, location, record):
                    continue
                index.cases.loc[slot] = loc
                index.cases.digest[slot] = digest
                refs.mention("variable", variables, record.query, loc, "case.query")
                if record.prediction is not None:
                    refs.mention("variable", variables, record.prediction, loc, "case.prediction")
                for i, var in enumerate(record.evidence):
                    refs.mention("variable", variables, var, loc, f"case.evidence[{i}]")
                for i, label in enumerate(record.labels):
                    refs.mention("operation", ops, label.op_id, loc, f"case.labels[{i}].op_id")
                counts.cases += 1
                counts.failed_cases += record.is_failed is True
                counts.labels += len(record.labels)
                counts.evidence += len(dict.fromkeys(record.evidence))
            case TraceRecord():
                raise InputError(path, location, "a second trace record: one trace per file")
    refs.check()
    _assign_seq(index)
    _link_versions(index, identities)
    return index


def _ts(path: str, location: str, text: str) -> int:
    try:
        return parse_timestamp(text)
    except (ValueError, OverflowError) as exc:
        raise InputError(path, location, str(exc)) from None


def _duplicate(
    index: TraceIndex, table: Table, slot: int, digest: int, location: str, record: AnyRecord
) -> bool:
    """True for a repeat of an identical record; InputError if the content differs."""
    first = table.loc[slot]
    if first == UNDEFINED:
        return False
    if table.digest[slot] != digest:
        raise InputError(
            index.path,
            location,
            f"duplicate {record.type} id {record.id!r} with different content "
            f"(first defined at {index.locations.text(first)})",
        )
    return True


def _add_identity(
    index: TraceIndex,
    identities: dict[tuple[str | None, str], int | dict[int, int]],
    slot: int,
    record: VariableRecord,
    location: str,
) -> None:
    """Register a variable's (class_name, name, version); two ids for one identity is an error."""
    key = (record.class_name, record.name)
    found = identities.get(key)
    if found is None:
        identities[key] = slot
        return
    variables = index.variables
    versions = found if isinstance(found, dict) else {variables.version[found]: found}
    other = versions.setdefault(record.version, slot)
    if other != slot:
        raise InputError(
            index.path,
            location,
            f"variable {record.id!r} has the same class_name, name and version as "
            f"{variables.name(other)!r}",
        )
    identities[key] = versions


def _assign_seq(index: TraceIndex) -> None:
    """seq = rank of (created_at, the record's own seq hint, operations first, id).

    The first three are packed into one integer per node (no tuple per node); runs of equal
    keys, rare, are then ordered by id.
    """
    ops, variables = index.operations, index.variables
    tables = (ops, variables)
    n_ops = len(ops.ts)
    stamps = [*ops.ts, *variables.ts]
    if not stamps:
        return
    low = min(stamps)
    shift = max(max(ops.hint, default=0), max(variables.hint, default=0)).bit_length()
    keys = [
        (((ts - low) << shift | hint) << 1) | kind
        for kind, table in enumerate(tables)
        for ts, hint in zip(table.ts, table.hint, strict=True)
    ]
    del stamps
    order = sorted(range(len(keys)), key=keys.__getitem__)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and keys[order[end]] == keys[order[start]]:
            end += 1
        if end - start > 1:
            order[start:end] = sorted(order[start:end], key=lambda i: _name(tables, n_ops, i))
        start = end
    for seq, i in enumerate(order):
        if i < n_ops:
            ops.seq[i] = seq
        else:
            variables.seq[i - n_ops] = seq


def _name(tables: tuple[NodeTable, NodeTable], n_ops: int, i: int) -> str:
    return tables[0].name(i) if i < n_ops else tables[1].name(i - n_ops)


def _link_versions(
    index: TraceIndex, identities: dict[tuple[str | None, str], int | dict[int, int]]
) -> None:
    for versions in identities.values():
        if isinstance(versions, dict):
            ordered = [versions[version] for version in sorted(versions)]
            index.next_version_slots.extend(itertools.pairwise(ordered))
    index.counts.next_versions = len(index.next_version_slots)
