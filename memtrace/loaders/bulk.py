"""`memtrace load --bulk`: the same validated rows as CSV files, one offline neo4j-admin import.

For an empty database of the managed server only: memtrace stops it, imports the files into
its database, starts it again and creates the schema. An external server is refused (memtrace
cannot stop it or reach its store; the Bolt loader is the way to load it). Nothing is imported
while any file fails validation, and a database holding any node is refused, checked before the
files are written and again just before the server stops.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memtrace.admin import init_schema, node_count
from memtrace.db import Database
from memtrace.errors import DatabaseNotEmptyError, InputError, MemtraceError
from memtrace.loaders.bulk_files import (
    ARRAY_DELIMITER_OPTION,
    BulkFiles,
    FileGroup,
    UnrepresentableValue,
)
from memtrace.loaders.formats import record_source
from memtrace.loaders.load import (
    LoadOptions,
    LoadSummary,
    PlannedTrace,
    file_result,
    validated,
)
from memtrace.loaders.rows import (
    count_properties,
    next_version_rows,
    node_rows,
    relationship_rows,
    trace_properties,
)
from memtrace.loaders.writer import fill_case_texts
from memtrace.server import manager
from memtrace.server.layout import ServerLayout

Connect = Callable[[], AbstractContextManager[Database]]


def import_arguments(groups: list[FileGroup]) -> list[str]:
    """The options of ``neo4j-admin database import full DATABASE`` for these files."""
    multiline = [str(group.data) for group in groups if group.multiline]
    arguments = [
        "--id-type=integer",
        f"--array-delimiter={ARRAY_DELIMITER_OPTION}",
    ]
    if multiline:
        # only the files with a line break in a value pay for the slower multi-line parser
        arguments += ["--multiline-fields-format=v2", f"--multiline-fields={','.join(multiline)}"]
    return arguments + [group.argument() for group in groups]


def write_files(
    planned: list[PlannedTrace], options: LoadOptions, folder: Path, summary: LoadSummary
) -> list[FileGroup]:
    """The import files of every trace, with the rows the Bolt loader would write; the file
    groups the import command names."""
    folder.mkdir(parents=True, exist_ok=True)
    files = BulkFiles(folder)
    offset = 0
    loaded_at = datetime.now(UTC)
    try:
        for plan in planned:
            started = time.perf_counter()
            nodes, relationships = files.nodes, files.relationships
            try:
                offset = _write_trace(files, plan, options, offset, loaded_at)
            except UnrepresentableValue as exc:
                raise InputError(
                    str(plan.file),
                    None,
                    f"{exc}: a CSV import cannot carry this value exactly; load this file "
                    "with `memtrace load` (without --bulk)",
                ) from None
            result = file_result(plan)
            result.nodes_written = files.nodes - nodes
            result.relationships_written = files.relationships - relationships
            result.seconds = time.perf_counter() - started
            summary.files.append(result)
    finally:
        groups = files.close()
    return groups


def _write_trace(
    files: BulkFiles, plan: PlannedTrace, options: LoadOptions, offset: int, loaded_at: datetime
) -> int:
    """Write one trace's nodes and relationships; return the next free node id."""
    index = plan.index
    overrides = {"system": options.system, "dataset": options.dataset}
    props = trace_properties(
        index.trace, plan.format, str(plan.file.resolve()), overrides, options.system_spellings
    )
    files.node(
        "Trace",
        offset,
        {
            **props,
            "id": plan.trace_id,
            "load_state": "complete",
            "loaded_at": loaded_at,
            **count_properties(index.counts),
        },
    )
    next_free = index.number_nodes(offset)
    source = record_source(plan.file, plan.format, options.labels)
    # one read of the file for both write passes: node ids are known before any node is written
    for nodes, linked in index.nodes_and_linked(source()):
        for node in nodes:
            files.node_rows(plan.trace_id, offset, node_rows(node))
        for record in linked:
            files.relationship_rows(relationship_rows(record))
    files.relationship_rows(next_version_rows(index.next_versions()))
    return next_free


def _refuse_unless_empty(db: Database, where: str) -> None:
    nodes = node_count(db)
    if nodes:
        raise DatabaseNotEmptyError(
            f"the database at {where} holds {nodes:,} nodes; `memtrace load --bulk` replaces "
            "the whole database, so it only imports into an empty one. Use `memtrace load` "
            "(without --bulk) to add to it"
        )


@dataclass(frozen=True)
class BulkTarget:
    """Where the import goes: the managed server's layout, or None for an external server."""

    connect: Connect
    database: str
    uri: str
    layout: ServerLayout | None


def bulk_load(target: BulkTarget, patterns: list[str], options: LoadOptions) -> LoadSummary:
    """Validate every file, write the import files into the server's import directory, import
    them, and remove them; ``summary.phases`` has the seconds of each step."""
    started = time.perf_counter()
    layout = target.layout
    if layout is None:
        raise MemtraceError(
            f"{target.uri} is not the managed server: `memtrace load --bulk` stops the managed "
            "server and imports into its store, which it cannot do for another server. Load "
            "without --bulk, or run neo4j-admin database import on that server yourself"
        )
    if manager.running_pid(layout) is None:
        raise MemtraceError(
            "the managed server is not running; start it with `memtrace neo4j start` (the "
            "bulk load checks through it that the database is empty)"
        )
    with target.connect() as db:
        _refuse_unless_empty(db, target.uri)
    summary = LoadSummary(mode="bulk")
    phases = summary.phases
    folder = layout.import_dir / "memtrace-bulk"
    mark = time.perf_counter()
    try:
        with validated(patterns, options) as (planned, stages):
            summary.stages = stages
            phases["validate"] = time.perf_counter() - mark
            mark = time.perf_counter()
            shutil.rmtree(folder, ignore_errors=True)
            groups = write_files(planned, options, folder, summary)
            phases["write_files"] = time.perf_counter() - mark
        arguments = import_arguments(groups)
        summary.import_command = [
            *("neo4j-admin", "database", "import", "full", target.database),
            *("--overwrite-destination", *arguments),
        ]
        _import_managed(target, layout, arguments, phases)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    summary.imported = True
    summary.seconds = time.perf_counter() - started
    return summary


def _import_managed(
    target: BulkTarget,
    layout: ServerLayout,
    arguments: list[str],
    phases: dict[str, float],
) -> None:
    with target.connect() as db:
        _refuse_unless_empty(db, target.uri)  # again: the files took a while to write
    mark = time.perf_counter()
    options = manager.restart_options(layout)
    # the import needs only the store: it runs while the server process ends its shutdown
    pid = manager.release_store(layout)
    phases["stop"] = time.perf_counter() - mark
    try:
        phases["import"] = manager.import_full(layout, target.database, arguments).seconds
    finally:
        mark = time.perf_counter()
        if pid is not None:
            manager.wait_for_exit(layout, pid)
        manager.start(layout, options)
        phases["start"] = time.perf_counter() - mark
    mark = time.perf_counter()
    with target.connect() as db:
        init_schema(db, together=True)  # one population job over the imported store
        phases["schema"] = time.perf_counter() - mark
        mark = time.perf_counter()
        fill_case_texts(db)
        phases["case_texts"] = time.perf_counter() - mark
