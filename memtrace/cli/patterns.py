"""`memtrace patterns`: failure classes and breakdowns of a run, or two runs compared."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import click
import pandas as pd
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from memtrace import patterns
from memtrace.cli.options import neo4j_options, replayer_option
from memtrace.cli.output import make_console
from memtrace.db import Database, connect
from memtrace.errors import NotReplayableError
from memtrace.patterns import WhatIf, export
from memtrace.settings import Settings
from memtrace.taxonomy import ERROR_TYPES

console = make_console()


@dataclass(frozen=True)
class Filters:
    system: str | None
    error_type: str | None
    min_count: int


@dataclass(frozen=True)
class View:
    """One table `memtrace patterns` can show: how to compute it and which columns to print."""

    compute: Callable[[Database, str, Filters], pd.DataFrame]
    columns: tuple[str, ...]
    help: str


def _classes(db: Database, run_id: str, f: Filters) -> pd.DataFrame:
    return patterns.failure_classes(
        db, run_id, system=f.system, error_type=f.error_type, min_count=f.min_count
    )


VIEWS: dict[str, View] = {
    "classes": View(
        _classes,
        (
            "system",
            "op_name",
            "stage",
            "error_type",
            "failure_mode",
            "inputs",
            "cases",
            "share_of_failures",
            "share_of_executions",
            "median_confidence",
            "example_cases",
        ),
        "failure classes (default)",
    ),
    "categories": View(
        lambda db, run, f: patterns.by_category(db, run, system=f.system),
        ("system", "category", "error_type", "cases", "share_of_category"),
        "cases by question category and error type",
    ),
    "sessions": View(
        lambda db, run, f: patterns.by_session(db, run, system=f.system),
        ("system", "session_index", "error_type", "cases", "evidence"),
        "evidence by the session it sits in",
    ),
    "ages": View(
        lambda db, run, f: patterns.by_age(db, run, system=f.system),
        ("system", "age", "error_type", "cases", "evidence"),
        "evidence by its age at question time (messages in between)",
    ),
    "funnel": View(
        lambda db, run, f: patterns.evidence_funnel(db, run, system=f.system),
        ("system", "stage", "evidence", "share"),
        "evidence-loss funnel",
    ),
    "failed": View(
        lambda db, run, f: patterns.failed_attributions(db, run, system=f.system),
        ("system", "trace_id", "case_id", "error", "question"),
        "cases whose attribution failed",
    ),
}

COMPARE_COLUMNS = ("status", "system", "op_name", "error_type", "cases_a", "cases_b", "change")
WHAT_IF_COLUMNS = (
    "system",
    "op_name",
    "error_type",
    "inputs",
    "cases",
    "rescued",
    "also_rescued",
    "broken",
    "net",
    "accuracy_delta",
    "fix_alone_share",
    "replays",
    "why",
)


def _cell(column: str, value: object) -> str:
    if column == "inputs" and isinstance(value, list) and not value:
        return "[yellow]no optimizable input[/]"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, float):
        if value != value:  # NaN: unknown
            return "-"
        if column == "accuracy_delta":
            return f"{value:+.1%}"
        if column.startswith("share") or column.endswith("share"):
            return f"{value:.0%}"
        if column in ("rescued", "also_rescued", "broken", "net", "replays"):
            return f"{value:.0f}"
        return f"{value:.2f}"
    return str(value)


def _table(frame: pd.DataFrame, columns: tuple[str, ...], title: str) -> Table:
    table = Table(title=title)
    numeric = {"cases", "evidence", "cases_a", "cases_b", "change", "session_index"}
    numeric |= {"rescued", "also_rescued", "broken", "net", "replays"}
    for column in columns:
        right = column in numeric or column.startswith(("share", "median"))
        table.add_column(column.replace("_", " "), justify="right" if right else "left")
    for row in frame.to_dict(orient="records"):
        table.add_row(*(_cell(column, row[column]) for column in columns))
    return table


def _emit(frame: pd.DataFrame, fmt: str, columns: tuple[str, ...], title: str) -> None:
    if fmt == "json":
        click.echo(export.to_json(frame))
    elif fmt == "csv":
        click.echo(export.to_csv(frame), nl=False)
    else:
        console.print(_table(frame, columns, title))


@click.command("patterns")
@click.option("--run", "run_id", help="Attribution run [default: the newest].")
@click.option("--system", help="Only this memory system (e.g. mem0, rag, long-context).")
@click.option("--error-type", type=click.Choice(ERROR_TYPES), help="Only this error type.")
@click.option("--min-count", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--view",
    type=click.Choice(sorted(VIEWS)),
    default="classes",
    show_default=True,
    help="; ".join(f"{name}: {view.help}" for name, view in sorted(VIEWS.items())),
)
@click.option(
    "--compare",
    nargs=2,
    metavar="RUN_A RUN_B",
    help="Classes that appeared, grew, shrank or vanished from run A to run B.",
)
@click.option(
    "--what-if",
    "what_if",
    is_flag=True,
    help="Also execute each class's what-if: replay the affected conversations with every "
    "blamed operation of the class repaired and count the answers rescued and broken "
    "(stored on the run for the report and Neo4j Browser; replays take time).",
)
@click.option(
    "--joint",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="With --what-if: also repair the top N classes together.",
)
@replayer_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@neo4j_options
def patterns_command(
    settings: Settings,
    run_id: str | None,
    system: str | None,
    error_type: str | None,
    min_count: int,
    view: str,
    compare: tuple[str, str] | None,
    what_if: bool,
    joint: int,
    replayer: str | None,
    fmt: str,
) -> None:
    """Failure classes of an attribution run: which operation, error type and inputs fail most.

    Lists are JSON arrays in CSV cells; JSON output is strict (unknown numbers are null). With
    --what-if, JSON is an object: the classes with their headroom, and the joint headroom.
    """
    if view != "classes" and (error_type or min_count > 1):
        raise click.UsageError("--error-type and --min-count filter the classes view only")
    if what_if and (view != "classes" or compare or error_type or min_count > 1):
        raise click.UsageError("--what-if measures every class of the classes view (no filter)")
    filters = Filters(system, error_type, min_count)
    with connect(settings) as db:
        if compare:
            run_a, run_b = compare
            table = patterns.compare_runs(db, run_a, run_b, system=system, error_type=error_type)
            _emit(table, fmt, COMPARE_COLUMNS, f"failure classes: {run_a} -> {run_b}")
            return
        if run_id is None:
            run_id = patterns.latest_run(db)
        else:
            patterns.require_run(db, run_id)
        if what_if:
            _what_if(settings, db, run_id, system, joint, fmt, replayer)
            return
        chosen = VIEWS[view]
        frame = chosen.compute(db, run_id, filters)
        # only the table has room for the note; CSV and JSON readers ask `--view failed`
        footnote = fmt == "table" and view == "classes"
        failed = patterns.failed_attributions(db, run_id, system=system) if footnote else None
    _emit(frame, fmt, chosen.columns, f"{chosen.help} - attribution run {run_id}")
    if failed is not None and not failed.empty:
        console.print(
            f"{len(failed)} case(s) whose attribution failed are not in any class: "
            f"`memtrace patterns --run {run_id} --view failed`"
        )


def _what_if(
    settings: Settings,
    db: Database,
    run_id: str,
    system: str | None,
    joint: int,
    fmt: str,
    replayer: str | None,
) -> None:
    from memtrace.replay.graph import LoadedTraces  # the engine: only when asked
    from memtrace.replay.what_if import WhatIfReplayer

    classes = patterns.failure_classes(db, run_id, system=system)
    with Progress(
        TextColumn("[bold]what-if"), BarColumn(), TextColumn("{task.description}"),
        console=console, transient=True,
    ) as progress:  # fmt: skip
        task = progress.add_task("", total=len(classes))

        def measured(key: str) -> None:
            progress.update(task, advance=1, description=key)

        result = patterns.what_if(
            db, run_id, WhatIfReplayer(LoadedTraces(db, settings, replayer).for_trace),
            system=system, joint_top=joint,
            progress=measured,
        )  # fmt: skip
    if not classes.empty and not result.classes["replayable"].astype(bool).any():
        # one line, once: the table would only repeat the reason for every class and trace
        reasons = sorted(set(result.not_replayable.values()))
        more = f" (and {len(reasons) - 1} other reasons)" if len(reasons) > 1 else ""
        raise NotReplayableError(
            f"no class of run {run_id!r} could be replayed: {reasons[0]}{more}"
        )
    _emit_what_if(result, classes, run_id, fmt)


def _emit_what_if(result: WhatIf, classes: pd.DataFrame, run_id: str, fmt: str) -> None:
    frame = patterns.with_headroom(classes, result.classes)
    frame = frame.sort_values(["net", "cases"], ascending=False, na_position="last", kind="stable")
    joint_row = result.run_properties()
    if fmt == "json":
        document = {"run_id": run_id, "classes": export.records(frame), "joint": joint_row}
        click.echo(json.dumps(document, ensure_ascii=False, allow_nan=False, indent=2))
        return
    if fmt == "csv":
        click.echo(export.to_csv(frame), nl=False)
        return
    console.print(
        _table(frame, WHAT_IF_COLUMNS, f"what fixing each class would buy - run {run_id}")
    )
    if result.joint_keys:
        console.print(
            f"the top {len(result.joint_keys)} classes repaired together: "
            f"{result.joint_rescued} rescued, {result.joint_broken} broken, "
            f"net {result.joint_net:+d} ({result.joint_accuracy_delta:+.1%} of "
            f"{result.total_cases} cases)"
        )
    for trace_id, why in sorted(result.not_replayable.items()):
        console.print(f"[yellow]not replayed[/] {trace_id}: {why}")
    console.print(
        f"{result.replays} system runs replayed; stored for `memtrace report` and Browser"
    )
