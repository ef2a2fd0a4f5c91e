"""The validation pass: checks a whole trace and keeps the small index the write pass needs.

Memory is proportional to the number of ids (not to values), so files far larger than memory
stream through: values are read again in the write pass.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
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


@dataclass(slots=True)
class Entry:
    """What the write pass needs to know about one operation or variable."""

    location: str
    digest: int
    ts: int
    hint: int
    seq: int = -1
    is_marker: bool = False


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
    sessions: dict[str, tuple[str, int]] = field(default_factory=dict)
    operations: dict[str, Entry] = field(default_factory=dict)
    variables: dict[str, Entry] = field(default_factory=dict)
    edges: dict[str, tuple[str, int]] = field(default_factory=dict)
    cases: dict[str, tuple[str, int]] = field(default_factory=dict)
    writers: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    next_versions: list[tuple[str, str]] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)

    def is_first(self, location: str, record: AnyRecord) -> bool:
        """False for a repeated identical record (it was validated and is written once)."""
        match record:
            case OperationRecord():
                return self.operations[record.id].location == location
            case VariableRecord():
                return self.variables[record.id].location == location
            case SessionRecord():
                return self.sessions[record.id][0] == location
            case EdgeRecord():
                return self.edges[record.id][0] == location
            case CaseRecord():
                return self.cases[record.id][0] == location
        return True

    def depends_on(self, op: OperationRecord) -> dict[str, list[str]]:
        """Earlier operations that wrote a variable ``op`` reads, with the variables."""
        mine = self.operations[op.id].seq
        found: dict[str, list[str]] = {}
        for var in dict.fromkeys(op.reads):
            for writer in self.writers.get(var, ()):
                if self.operations[writer].seq < mine:
                    found.setdefault(writer, []).append(var)
        return found


def build_index(path: str, source: Iterable[tuple[str, AnyRecord]]) -> TraceIndex:
    """Validate every record and cross-record rule; raise InputError on the first problem."""
    records = iter(source)
    _, trace = next(records)
    if not isinstance(trace, TraceRecord):
        raise InputError(path, None, "the first record must be the trace record")
    index = TraceIndex(path, trace)
    pending: list[tuple[str, str, str, str]] = []  # location, field, target kind, id
    identities: dict[tuple[str | None, str, int], str] = {}
    counts = index.counts
    for location, record in records:
        digest = hash(record.model_dump_json())
        match record:
            case VariableRecord():
                if _duplicate(index.variables.get(record.id), digest, path, location, record):
                    continue
                index.variables[record.id] = Entry(
                    location,
                    digest,
                    _ts(path, location, record.created_at),
                    record.seq or 0,
                    is_marker=record.is_marker,
                )
                key = (record.class_name, record.name, record.version)
                other = identities.setdefault(key, record.id)
                if other != record.id:
                    raise InputError(
                        path,
                        location,
                        f"variable {record.id!r} has the same class_name, name and version as "
                        f"{other!r}",
                    )
                if record.session is not None:
                    pending.append((location, "variable.session", "session", record.session))
                counts.variables += 1
            case OperationRecord():
                if _duplicate(index.operations.get(record.id), digest, path, location, record):
                    continue
                index.operations[record.id] = Entry(
                    location, digest, _ts(path, location, record.created_at), record.seq or 0
                )
                if record.session is not None:
                    pending.append((location, "operation.session", "session", record.session))
                reads = dict.fromkeys(record.reads)
                writes = dict.fromkeys(record.writes)
                for i, var in enumerate(record.reads):
                    pending.append((location, f"operation.reads[{i}]", "variable", var))
                for i, var in enumerate(record.writes):
                    pending.append((location, f"operation.writes[{i}]", "variable", var))
                for var in writes:
                    index.writers[var].append(record.id)
                counts.operations += 1
                counts.reads += len(reads)
                counts.writes += len(writes)
            case SessionRecord():
                if _duplicate_pair(index.sessions.get(record.id), digest, path, location, record):
                    continue
                index.sessions[record.id] = (location, digest)
                if record.created_at is not None:
                    _ts(path, location, record.created_at)
                counts.sessions += 1
            case EdgeRecord():
                if _duplicate_pair(index.edges.get(record.id), digest, path, location, record):
                    continue
                index.edges[record.id] = (location, digest)
                pending.append((location, "edge.op", "operation", record.op))
                pending.append((location, "edge.source", "variable", record.source))
                pending.append((location, "edge.target", "variable", record.target))
                counts.edges += 1
            case CaseRecord():
                if _duplicate_pair(index.cases.get(record.id), digest, path, location, record):
                    continue
                index.cases[record.id] = (location, digest)
                pending.append((location, "case.query", "variable", record.query))
                if record.prediction is not None:
                    pending.append((location, "case.prediction", "variable", record.prediction))
                for i, var in enumerate(record.evidence):
                    pending.append((location, f"case.evidence[{i}]", "variable", var))
                for i, label in enumerate(record.labels):
                    pending.append((location, f"case.labels[{i}].op_id", "operation", label.op_id))
                counts.cases += 1
                counts.failed_cases += record.is_failed is True
                counts.labels += len(record.labels)
                counts.evidence += len(dict.fromkeys(record.evidence))
            case TraceRecord():
                raise InputError(path, location, "a second trace record: one trace per file")
    targets: dict[str, dict[str, object]] = {
        "variable": index.variables,  # type: ignore[dict-item]
        "operation": index.operations,  # type: ignore[dict-item]
        "session": index.sessions,  # type: ignore[dict-item]
    }
    for location, field_name, kind, ref in pending:
        if ref not in targets[kind]:
            raise InputError(path, location, f"{field_name}: unknown {kind} {ref!r}")
    _assign_seq(index)
    _link_versions(index, identities)
    return index


def _ts(path: str, location: str, text: str) -> int:
    try:
        return parse_timestamp(text)
    except (ValueError, OverflowError) as exc:
        raise InputError(path, location, str(exc)) from None


def _conflict(path: str, location: str, record: AnyRecord, first_location: str) -> InputError:
    return InputError(
        path,
        location,
        f"duplicate {record.type} id {record.id!r} with different content "
        f"(first defined at {first_location})",
    )


def _duplicate(
    entry: Entry | None, digest: int, path: str, location: str, record: AnyRecord
) -> bool:
    if entry is None:
        return False
    if entry.digest != digest:
        raise _conflict(path, location, record, entry.location)
    return True


def _duplicate_pair(
    entry: tuple[str, int] | None, digest: int, path: str, location: str, record: AnyRecord
) -> bool:
    if entry is None:
        return False
    if entry[1] != digest:
        raise _conflict(path, location, record, entry[0])
    return True


def _assign_seq(index: TraceIndex) -> None:
    order = [(e.ts, e.hint, 0, key, e) for key, e in index.operations.items()]
    order += [(e.ts, e.hint, 1, key, e) for key, e in index.variables.items()]
    order.sort(key=lambda item: item[:4])
    for seq, item in enumerate(order):
        item[4].seq = seq


def _link_versions(index: TraceIndex, identities: dict[tuple[str | None, str, int], str]) -> None:
    by_identity: dict[tuple[str | None, str], list[tuple[int, str]]] = defaultdict(list)
    for (class_name, name, version), var in identities.items():
        by_identity[(class_name, name)].append((version, var))
    for versions in by_identity.values():
        if len(versions) > 1:
            versions.sort()
            index.next_versions.extend(
                (older, newer) for (_, older), (_, newer) in itertools.pairwise(versions)
            )
    index.counts.next_versions = len(index.next_versions)
