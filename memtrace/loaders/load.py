"""Load trace files into Neo4j: expand paths, detect formats, validate everything, then write."""

from __future__ import annotations

import glob
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from memtrace.admin import init_schema
from memtrace.db import Database
from memtrace.errors import InputError
from memtrace.loaders.index import TraceIndex, build_index
from memtrace.loaders.models import AnyRecord
from memtrace.loaders.native import read_native
from memtrace.loaders.otlp import Labels, looks_like_otlp, read_otlp
from memtrace.loaders.rows import (
    count_properties,
    next_version_rows,
    node_rows,
    relationship_rows,
    trace_properties,
)
from memtrace.loaders.smartcomment import read_smartcomment
from memtrace.loaders.writer import BatchWriter, begin_trace, complete_trace

Format = Literal["native", "smartcomment", "otlp"]
FORMATS: tuple[Format, ...] = ("native", "smartcomment", "otlp")
DEFAULT_BATCH_SIZE = 5_000
TRACE_SUFFIXES = (".jsonl", ".json")


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
    nodes_written: int = 0
    relationships_written: int = 0
    seconds: float = 0.0

    @property
    def elements_written(self) -> int:
        return self.nodes_written + self.relationships_written


@dataclass
class LoadSummary:
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0
    dry_run: bool = False

    def total(self, name: str) -> int:
        return sum(int(getattr(result, name)) for result in self.files)

    def as_dict(self) -> dict[str, object]:
        keys = ("operations", "variables", "edges", "cases", "failed_cases", "labels")
        return {
            "dry_run": self.dry_run,
            "traces": len(self.files),
            **{key: self.total(key) for key in keys},
            "nodes_written": self.total("nodes_written"),
            "relationships_written": self.total("relationships_written"),
            "seconds": round(self.seconds, 3),
            "elements_per_second": round(self.total("elements_written") / self.seconds)
            if self.seconds > 0 and not self.dry_run
            else None,
            "files": [
                {
                    "path": r.path,
                    "format": r.format,
                    "trace_id": r.trace_id,
                    **{key: getattr(r, key) for key in keys},
                    "seconds": round(r.seconds, 3),
                }
                for r in self.files
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


def detect_format(file: Path) -> Format:
    """OTLP when the first key is ``resourceSpans``; native when the first non-blank line is a
    JSON object with a ``type``; else smartcomment."""
    try:
        with file.open("rb") as handle:
            if looks_like_otlp(handle.read(4096)):
                return "otlp"
            handle.seek(0)
            for raw in handle:
                if not raw.strip():
                    continue
                try:
                    first = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    first = None
                if isinstance(first, dict) and "type" in first:
                    return "native"
                if raw.lstrip().startswith(b"{"):
                    return "smartcomment"
                return "native"
    except OSError as exc:
        raise InputError(str(file), None, f"cannot read file: {exc.strerror or exc}") from None
    return "native"


def record_source(
    file: Path, fmt: Format, labels: Labels | None = None
) -> Callable[[], Iterator[tuple[str, AnyRecord]]]:
    """A function that reads the file's records again each time it is called."""
    if fmt == "native":
        return lambda: read_native(file)
    if fmt == "otlp":
        return lambda: iter(read_otlp(file, labels))
    return lambda: iter(read_smartcomment(file))


@dataclass
class _Planned:
    file: Path
    format: Format
    index: TraceIndex
    trace_id: str


def load_paths(
    db: Database | None,
    patterns: list[str],
    options: LoadOptions,
    progress: Progress | None = None,
) -> LoadSummary:
    """Validate every file, then (unless ``dry_run``) write them one trace at a time.

    A file that fails validation raises InputError before anything at all is written.
    """
    started = time.perf_counter()
    files = expand_paths(patterns)
    if options.trace_id and len(files) > 1:
        raise InputError(
            ", ".join(patterns), None, f"--trace-id needs exactly one file, got {len(files)}"
        )
    planned: list[_Planned] = []
    try:
        owners: dict[str, Path] = {}
        for file in files:
            fmt = options.format or detect_format(file)
            index = build_index(str(file), record_source(file, fmt, options.labels)())
            trace_id = options.trace_id or index.trace.id
            planned.append(_Planned(file, fmt, index, trace_id))
            if trace_id in owners:
                raise InputError(
                    str(file),
                    None,
                    f"trace id {trace_id!r} is also the trace of {owners[trace_id]}",
                )
            owners[trace_id] = file
        summary = LoadSummary(dry_run=options.dry_run)
        if not options.dry_run:
            if db is None:
                raise ValueError("a database is needed unless dry_run is set")
            init_schema(db)
        for plan in planned:
            file_started = time.perf_counter()
            result = _result(plan)
            if db is not None and not options.dry_run:
                _write(db, plan, options, progress or _Silent(), result)
            result.seconds = time.perf_counter() - file_started
            summary.files.append(result)
    finally:
        for plan in planned:
            plan.index.close()
    summary.seconds = time.perf_counter() - started
    return summary


def _result(plan: _Planned) -> FileResult:
    counts = plan.index.counts
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
    )


def _write(
    db: Database, plan: _Planned, options: LoadOptions, progress: Progress, result: FileResult
) -> None:
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
    overrides = {"system": options.system, "dataset": options.dataset}
    props = trace_properties(index.trace, plan.format, str(plan.file.resolve()), overrides)
    begin_trace(db, plan.trace_id, props)
    progress.advance(1)
    writer = BatchWriter(
        db,
        plan.trace_id,
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
    finally:
        writer.close()
    complete_trace(db, plan.trace_id, count_properties(counts))
    progress.finish()
    result.nodes_written = writer.nodes + 1
    result.relationships_written = writer.relationships
