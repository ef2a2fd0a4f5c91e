"""Load trace files into Neo4j: expand paths, validate everything, then write.

Formats (their detection and readers) are in formats.py."""

from __future__ import annotations

import glob
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from memtrace.admin import delete_reload_copies, init_schema
from memtrace.db import Database
from memtrace.errors import InputError, MemtraceError, QueryError, TransactionTooLargeError
from memtrace.loaders.checks import Finding, TraceChecker
from memtrace.loaders.formats import Detection, Format, detect, explained, record_source
from memtrace.loaders.index import TraceIndex, build_index
from memtrace.loaders.otlp import UNKNOWN_KIND_SPANS, UNREAD_CONTENT_SPANS, Labels
from memtrace.loaders.otlp.timelines import Grouping
from memtrace.loaders.rows import (
    QueryRow,
    count_properties,
    next_version_rows,
    node_rows,
    relationship_rows,
    trace_properties,
)
from memtrace.loaders.writer import (
    BatchWriter,
    NewTrace,
    TraceState,
    begin_staged_copy,
    begin_trace,
    complete_trace,
    replace_in_batches,
    swap_in_staged_copy,
    trace_states,
    write_new_traces,
)
from memtrace.taxonomy import (
    RESERVED_PREFIXES,
    is_reserved_trace_id,
    retired_trace_id,
    staged_trace_id,
)

DEFAULT_BATCH_SIZE = 5_000
DEFAULT_REQUESTS_PER_APPEND = 50
ATOMIC_SWAP_NODES = 40_000
TRACE_SUFFIXES = (".jsonl", ".json")
# How far the write of one trace got: a first load (or one after an interrupted load) is
# "writing"; a re-load of a complete trace goes "staging" -> "swapping" (one transaction) or
# "replacing" (in batches, too big for one) -> "cleaning"; new small traces are written
# "together" in one transaction.
WritePhase = Literal["writing", "staging", "swapping", "replacing", "cleaning", "together"]


class Progress(Protocol):
    """What the loader reports while writing (the CLI draws a progress bar from it)."""

    def start(self, label: str, total: int) -> None: ...
    def advance(self, elements: int) -> None: ...
    def finish(self) -> None: ...


class _Silent:
    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, elements: int) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass(frozen=True)
class LoadOptions:
    batch_size: int = DEFAULT_BATCH_SIZE
    trace_id: str | None = None
    system: str | None = None
    dataset: str | None = None
    format: Format | None = None
    dry_run: bool = False
    labels: Labels | None = None  # questions joined into OTLP traces as cases
    # how a trace may spell a known memory system (casefolded) -> the name stored: the systems'
    # registry's SYSTEM_SPELLINGS, passed in (the loader imports no system)
    system_spellings: Mapping[str, str] = field(default_factory=dict)
    # A re-load swaps its new copy in with one transaction while each copy has at most this many
    # nodes (~3 KB of server transaction memory per node moved; docs/reliability.md), else in
    # batches while the trace reads as 'loading'.
    atomic_swap_nodes: int = ATOMIC_SWAP_NODES
    # OTLP requests appended to timelines (loaders/append.py): by these group ids; None loads
    # each file whole as today
    grouping: Grouping | None = None
    requests_per_append: int = DEFAULT_REQUESTS_PER_APPEND  # one transaction each
    # False when the caller made the schema already (the receiver, at each connection): it
    # costs two dozen statements, which would be most of a small trace's load
    ensure_schema: bool = True


@dataclass
class FileResult:
    path: str
    format: Format
    trace_id: str
    sessions: int
    operations: int
    variables: int
    edges: int
    cases: int
    failed_cases: int
    labels: int
    # OTLP: spans whose content no convention read, spans no convention recognised (with the
    # first few content keys and span names, to say what was missed)
    unread_content_spans: int = 0
    unknown_kind_spans: int = 0
    unread_content_keys: list[str] = field(default_factory=list)
    unknown_kind_names: list[str] = field(default_factory=list)
    nodes_written: int = 0
    relationships_written: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)  # what will degrade attribution
    # a timeline's: the requests appended, and those whose spans it held already
    requests: int | None = None
    already_there: int | None = None

    @property
    def elements_written(self) -> int:
        return self.nodes_written + self.relationships_written


@dataclass(frozen=True)
class Stages:
    """A trace found in several files that are cumulative stages of it: only ``loaded`` is."""

    trace_id: str
    loaded: str
    earlier: list[str]  # the files it contains, smallest first


@dataclass
class LoadSummary:
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0
    dry_run: bool = False
    stages: list[Stages] = field(default_factory=list)
    mode: Literal["bolt", "bulk"] = "bolt"
    # bulk only: seconds per step, whether the files were imported, and the import command
    phases: dict[str, float] = field(default_factory=dict)
    imported: bool = False
    import_command: list[str] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(int(getattr(result, name)) for result in self.files)

    def as_dict(self) -> dict[str, object]:
        keys = (
            "operations",
            "variables",
            "edges",
            "cases",
            "failed_cases",
            "labels",
            "unread_content_spans",
            "unknown_kind_spans",
        )
        findings = [finding for result in self.files for finding in result.findings]
        bulk: dict[str, object] = {}
        if self.mode == "bulk":
            bulk = {
                "imported": self.imported,
                "phases": {name: round(seconds, 3) for name, seconds in self.phases.items()},
                "import_command": self.import_command,
            }
        return {
            "dry_run": self.dry_run,
            "mode": self.mode,
            "traces": len(self.files),
            **{key: self.total(key) for key in keys},
            "nodes_written": self.total("nodes_written"),
            "relationships_written": self.total("relationships_written"),
            "seconds": round(self.seconds, 3),
            "elements_per_second": round(self.total("elements_written") / self.seconds)
            if self.seconds > 0 and not self.dry_run
            else None,
            **bulk,
            "problems": {
                level: sum(finding.level == level for finding in findings)
                for level in ("error", "warning")
            },
            "files": [
                {
                    "path": r.path,
                    "format": r.format,
                    "trace_id": r.trace_id,
                    **{key: getattr(r, key) for key in keys},
                    "unread_content_keys": r.unread_content_keys,
                    "unknown_kind_names": r.unknown_kind_names,
                    **(
                        {"requests": r.requests, "already_there": r.already_there}
                        if r.requests is not None
                        else {}
                    ),
                    "seconds": round(r.seconds, 3),
                    "findings": [finding.as_dict() for finding in r.findings],
                }
                for r in self.files
            ],
            "cumulative_stages": [
                {"trace_id": s.trace_id, "loaded": s.loaded, "earlier": s.earlier}
                for s in self.stages
            ],
        }


def expand_paths(patterns: list[str]) -> list[Path]:
    """Files, folders (searched recursively for *.jsonl / *.json) and globs, in a stable order."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix in TRACE_SUFFIXES:
                    found[child] = None
        elif path.is_file():
            found[path] = None
        else:
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                raise InputError(pattern, None, "no such file, folder or matching glob")
            for match in matches:
                if Path(match).is_file():
                    found[Path(match)] = None
    if not found:
        raise InputError(", ".join(patterns), None, "no trace files (*.jsonl, *.json) found")
    return list(found)


class LoadInterrupted(MemtraceError):
    """Ctrl-C during a write: says what state the trace was left in and how it gets cleaned."""

    def __init__(self, trace_id: str, phase: WritePhase, done: int, total: int) -> None:
        self.trace_id = trace_id
        before = f"{done} of {total} files were loaded completely before it"
        staged, retired = staged_trace_id(trace_id), retired_trace_id(trace_id)
        if phase == "together":
            message = (
                f"the new traces written together in one transaction, {trace_id!r} among them, "
                f"were not written (the transaction was rolled back; {before}). Run the load again"
            )
        elif phase == "writing":
            message = (
                f"trace {trace_id!r} was left 'loading' (half-written; {before}). The next "
                f"`memtrace load` of that file replaces it, or `memtrace db delete --trace "
                f"{trace_id}` removes it"
            )
        elif phase == "staging":
            message = (
                f"the re-load of trace {trace_id!r} stopped before its new copy was complete "
                f"({before}); the earlier complete copy is untouched and still the one read. The "
                f"partial copy {staged!r} is removed by the next `memtrace load` of that file, or "
                f"by `memtrace db delete --trace {staged}`"
            )
        elif phase == "swapping":
            message = (
                f"the re-load of trace {trace_id!r} was stopped during its swap ({before}): the "
                "trace has one complete copy, the earlier or the new one (`memtrace db stats` "
                "shows loaded_at). The next `memtrace load` of that file removes the other"
            )
        elif phase == "replacing":
            message = (
                f"trace {trace_id!r} was left 'loading' while its re-load, too big for one swap "
                f"transaction, replaced the earlier copy in batches ({before}). The next "
                f"`memtrace load` of that file loads it again, or `memtrace db delete --trace "
                f"{trace_id}` removes it"
            )
        else:
            message = (
                f"trace {trace_id!r} was re-loaded completely, but deleting its replaced copy "
                f"{retired!r} was stopped ({before}); the next `memtrace load` of that file, or "
                f"`memtrace db delete --trace {retired}`, removes it"
            )
        super().__init__(f"interrupted: {message}")


@dataclass
class PlannedTrace:
    """A validated file: its format, its index (closed by ``validated``) and its trace id."""

    file: Path
    format: Format
    index: TraceIndex
    trace_id: str
    findings: list[Finding] = field(default_factory=list)


@contextmanager
def validated(
    patterns: list[str], options: LoadOptions
) -> Iterator[tuple[list[PlannedTrace], list[Stages]]]:
    """Validate every file (raising InputError on the first problem, before anything is
    written); yield the files to write, one per trace, and the traces that came in cumulative
    stages. The indexes of the write passes stay open until the block ends."""
    files = expand_paths(patterns)
    if options.trace_id and len(files) > 1:
        raise InputError(
            ", ".join(patterns), None, f"--trace-id needs exactly one file, got {len(files)}"
        )
    planned: list[PlannedTrace] = []
    try:
        for file in files:
            detection = Detection(options.format, "--format") if options.format else detect(file)
            fmt = detection.format
            checker = TraceChecker()  # sees the records of the validation pass
            try:
                records = checker.watch(record_source(file, fmt, options.labels)())
                index = build_index(str(file), records)
            except InputError as exc:
                raise explained(exc, detection) from None
            trace_id = options.trace_id or index.trace.id
            if is_reserved_trace_id(trace_id):
                raise InputError(
                    str(file),
                    None,
                    f"trace id {trace_id!r}: ids starting with "
                    f"{' or '.join(map(repr, RESERVED_PREFIXES))} are reserved for the copies a "
                    "re-load writes; give the trace another id (--trace-id)",
                )
            planned.append(PlannedTrace(file, fmt, index, trace_id, checker.findings()))
        plans, stages = _one_plan_per_trace(planned)
        if options.labels is not None and all(plan.format != "otlp" for plan in plans):
            raise InputError(
                ", ".join(patterns),
                None,
                "--labels joins LoCoMo questions into OTLP traces as cases, but no file here is "
                "OTLP (native and smartcomment traces carry their own cases): drop --labels",
            )
        yield plans, stages
    finally:
        for plan in planned:
            plan.index.close()


def load_paths(
    db: Database | None,
    patterns: list[str],
    options: LoadOptions,
    progress: Progress | None = None,
) -> LoadSummary:
    """Validate every file, then (unless ``dry_run``) write them: new small traces together
    in one transaction, the others one trace at a time.

    A file that fails validation raises InputError before anything at all is written.
    """
    started = time.perf_counter()
    with validated(patterns, options) as (plans, stages):
        summary = LoadSummary(dry_run=options.dry_run, stages=stages)
        results = {id(plan): file_result(plan) for plan in plans}
        if not options.dry_run:
            if db is None:
                raise ValueError("a database is needed unless dry_run is set")
            _write_all(db, plans, results, options, progress or _Silent())
        summary.files = [results[id(plan)] for plan in plans]
    summary.seconds = time.perf_counter() - started
    return summary


def _write_all(
    db: Database,
    plans: list[PlannedTrace],
    results: dict[int, FileResult],
    options: LoadOptions,
    progress: Progress,
) -> None:
    """Write every plan: the new small ones together (``_write_together``), the others (and
    a group the graph refused, e.g. for nodes an interrupted delete left) one by one."""
    if options.ensure_schema:
        init_schema(db)
    states = trace_states(db, [plan.trace_id for plan in plans])
    done = 0
    together = [
        plan
        for plan in plans
        if states[plan.trace_id].new and plan.index.counts.nodes <= options.batch_size
    ]
    one_by_one = {id(plan) for plan in plans} - {id(plan) for plan in together}
    for group in _groups(together, options.batch_size):
        try:
            _write_together(db, group, options, progress, [results[id(plan)] for plan in group])
        except KeyboardInterrupt:
            raise LoadInterrupted(group[0].trace_id, "together", done, len(plans)) from None
        except QueryError:
            one_by_one |= {id(plan) for plan in group}  # which deletes what is in the way first
            continue
        done += len(group)
    for plan in (plan for plan in plans if id(plan) in one_by_one):
        started = time.perf_counter()
        phase: list[WritePhase] = ["writing"]
        try:
            _write(db, plan, states[plan.trace_id], options, progress, results[id(plan)], phase)
        except KeyboardInterrupt:
            raise LoadInterrupted(plan.trace_id, phase[0], done, len(plans)) from None
        results[id(plan)].seconds = time.perf_counter() - started
        done += 1


def _groups(plans: list[PlannedTrace], most_nodes: int) -> Iterator[list[PlannedTrace]]:
    """The plans in runs of at most ``most_nodes`` nodes together (each plan fits alone)."""
    group: list[PlannedTrace] = []
    nodes = 0
    for plan in plans:
        if group and nodes + plan.index.counts.nodes > most_nodes:
            yield group
            group, nodes = [], 0
        group.append(plan)
        nodes += plan.index.counts.nodes
    if group:
        yield group


def _write_together(
    db: Database,
    plans: list[PlannedTrace],
    options: LoadOptions,
    progress: Progress,
    results: list[FileResult],
) -> None:
    """Write new traces (the graph holds nothing of them) in one transaction; each file's
    result has its nodes, and the group's first file the relationships of them all (one
    statement writes every trace's relationships of a kind: they are counted together)."""
    started = time.perf_counter()
    traces = [_new_trace(plan, options) for plan in plans]
    progress.start(f"{len(plans)} new traces", sum(plan.index.counts.nodes for plan in plans))
    nodes_written, relationships_written = write_new_traces(db, traces)
    progress.advance(sum(nodes_written) - len(plans))
    progress.finish()
    seconds = time.perf_counter() - started
    for result, nodes in zip(results, nodes_written, strict=True):
        result.nodes_written = nodes
        result.seconds = seconds  # the one transaction they were written in
    results[0].relationships_written = relationships_written


def _one_plan_per_trace(planned: list[PlannedTrace]) -> tuple[list[PlannedTrace], list[Stages]]:
    """The files to write, one per trace id, and the traces that came in cumulative stages.

    Files sharing a trace id are stages of one graph when each is contained in the most
    complete one (MemBase exports a user's graph after construction, search and evaluation,
    each extending the last); that one is loaded. Any other shared id is refused, naming the
    first record where the two files differ.
    """
    by_trace: dict[str, list[PlannedTrace]] = {}
    for plan in planned:
        by_trace.setdefault(plan.trace_id, []).append(plan)
    kept: list[PlannedTrace] = []
    stages: list[Stages] = []
    for trace_id, group in by_trace.items():
        # on a tie (identical files) the first in path order is kept
        complete = max(group, key=lambda plan: (plan.index.records, -group.index(plan)))
        kept.append(complete)
        earlier = [plan for plan in group if plan is not complete]
        for plan in earlier:
            difference = plan.index.first_difference(complete.index)
            if difference is not None:
                location, problem = difference
                raise InputError(
                    str(plan.file),
                    location,
                    f"trace id {trace_id!r} is also the trace of {complete.file}, and this file "
                    f"is not an earlier stage of it: {problem}",
                )
        if earlier:
            earlier.sort(key=lambda plan: plan.index.records)
            stages.append(Stages(trace_id, str(complete.file), [str(p.file) for p in earlier]))
    order = {id(plan): n for n, plan in enumerate(planned)}
    return sorted(kept, key=lambda plan: order[id(plan)]), stages


def unread_lines(summary: LoadSummary) -> list[str]:
    """What the OTLP conventions could not read, per file, for the person loading."""
    lines = []
    for r in summary.files:
        if r.unread_content_spans:
            spans = _spans(r.unread_content_spans, "carries", "carry")
            lines.append(
                f"{r.path}: {spans} content no convention read "
                f"(attributes {', '.join(r.unread_content_keys)}); docs/trace-format.md lists "
                "the conventions read"
            )
        if r.unknown_kind_spans:
            lines.append(
                f"{r.path}: {_spans(r.unknown_kind_spans)} of unknown kind, loaded as 'other' "
                f"(named {', '.join(r.unknown_kind_names)})"
            )
    return lines


def _spans(count: int, *verb: str) -> str:
    """``1 span carries`` / ``2 spans carry``: a count of spans with its verb agreeing."""
    said = f"{count} span" if count == 1 else f"{count} spans"
    return f"{said} {verb[0] if count == 1 else verb[1]}" if verb else said


def stages_line(stages: list[Stages]) -> str | None:
    """One line saying which traces came in cumulative stage files and which file was loaded."""
    if not stages:
        return None
    if len(stages) == 1:
        only = stages[0]
        paths = [Path(path) for path in [*only.earlier, only.loaded]]
        folders = {path.parent for path in paths}
        named = [path.name if len(folders) == 1 else str(path) for path in paths]
        where = f" of {folders.pop()}" if len(folders) == 1 else ""
        return (
            f"{only.trace_id} is in {len(paths)} cumulative stage files ({', '.join(named)})"
            f"{where}: loaded once, from the most complete, {named[-1]}"
        )
    names = Counter(Path(stage.loaded).name for stage in stages)
    count = sum(1 + len(stage.earlier) for stage in stages)
    loaded = ", ".join(f"{name} x{n}" for name, n in names.items())
    return (
        f"{len(stages)} traces are each in several cumulative stage files ({count} files): "
        f"each loaded once, from its most complete stage ({loaded})"
    )


def file_result(plan: PlannedTrace) -> FileResult:
    counts = plan.index.counts
    metadata = plan.index.trace.metadata
    return FileResult(
        path=str(plan.file),
        format=plan.format,
        trace_id=plan.trace_id,
        sessions=counts.sessions,
        operations=counts.operations,
        variables=counts.variables,
        edges=counts.edges,
        cases=counts.cases,
        failed_cases=counts.failed_cases,
        labels=counts.labels,
        findings=plan.findings,
        unread_content_spans=int(metadata.get(UNREAD_CONTENT_SPANS, 0)),
        unknown_kind_spans=int(metadata.get(UNKNOWN_KIND_SPANS, 0)),
        unread_content_keys=list(metadata.get("unread_content_keys", [])),
        unknown_kind_names=list(metadata.get("unknown_kind_names", [])),
    )


def _new_trace(plan: PlannedTrace, options: LoadOptions) -> NewTrace:
    """A validated file as a trace for ``write_new_traces`` (its rows read from the file)."""
    source = record_source(plan.file, plan.format, options.labels)
    index = plan.index

    def nodes() -> Iterator[QueryRow]:
        return (row for node in index.nodes(source()) for row in node_rows(node))

    def relationships() -> Iterator[QueryRow]:
        yield from (row for linked in index.linked(source()) for row in relationship_rows(linked))
        yield from next_version_rows(index.next_versions())

    return NewTrace(
        plan.trace_id,
        _trace_props(plan, options),
        count_properties(index.counts),
        nodes,
        index.store_element_ids,
        relationships,
    )


def _trace_props(plan: PlannedTrace, options: LoadOptions) -> dict[str, Any]:
    overrides = {"system": options.system, "dataset": options.dataset}
    return trace_properties(
        plan.index.trace,
        plan.format,
        str(plan.file.resolve()),
        overrides,
        options.system_spellings,
    )


def _write(
    db: Database,
    plan: PlannedTrace,
    state: TraceState,
    options: LoadOptions,
    progress: Progress,
    result: FileResult,
    phase: list[WritePhase],
) -> None:
    """Write one trace; ``phase[0]`` says how far it got (for the message after a Ctrl-C).

    A complete earlier copy stays readable until the new copy is complete (writer.py)."""
    index = plan.index
    counts = index.counts
    expected = (
        counts.nodes
        + counts.sessions  # HAS_SESSION
        + counts.reads
        + counts.writes
        + counts.edges
        + counts.next_versions
        + 2 * counts.cases  # HAS_CASE, QUERY
        + counts.evidence
        + counts.labels
    )
    progress.start(plan.file.name, expected)
    props = _trace_props(plan, options)
    replacing = state.load_state == "complete"
    if replacing:
        phase[0] = "staging"
        begin_staged_copy(db, plan.trace_id, props)
        written_as = staged_trace_id(plan.trace_id)
    else:
        phase[0] = "writing"
        begin_trace(db, plan.trace_id, props)
        delete_reload_copies(db, plan.trace_id)
        written_as = plan.trace_id
    progress.advance(1)
    writer = BatchWriter(
        db,
        written_as,
        options.batch_size,
        progress.advance,
        on_ids=lambda _, pairs: index.store_element_ids(pairs),
    )
    source = record_source(plan.file, plan.format, options.labels)
    try:
        writer.add_all(row for node in index.nodes(source()) for row in node_rows(node))
        writer.flush_all()  # every node and its element id exists before any relationship
        writer.add_all(
            row for linked in index.linked(source()) for row in relationship_rows(linked)
        )
        writer.add_all(next_version_rows(index.next_versions()))
        writer.flush_all()
    except BaseException:
        writer.abandon()
        raise
    writer.close()
    if replacing:
        _swap(
            db, plan.trace_id, count_properties(counts), (state.nodes, counts.nodes), options, phase
        )
    else:
        complete_trace(db, plan.trace_id, count_properties(counts))
    progress.finish()
    result.nodes_written = writer.nodes + 1
    result.relationships_written = writer.relationships


def _swap(
    db: Database,
    trace_id: str,
    counts: dict[str, int],
    nodes: tuple[int, int],
    options: LoadOptions,
    phase: list[WritePhase],
) -> None:
    """Put the complete staged copy in the old one's place: in one transaction when both copies
    fit ``atomic_swap_nodes`` (and the server's transaction memory), else in batches."""
    if max(nodes) <= options.atomic_swap_nodes:
        phase[0] = "swapping"
        try:
            swap_in_staged_copy(db, trace_id, counts, max_nodes=options.atomic_swap_nodes)
        except TransactionTooLargeError:
            phase[0] = "replacing"
            replace_in_batches(db, trace_id, counts)
    else:
        phase[0] = "replacing"
        replace_in_batches(db, trace_id, counts)
    phase[0] = "cleaning"
    delete_reload_copies(db, trace_id)
