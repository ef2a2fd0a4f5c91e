"""`memtrace patterns`: failure classes and breakdowns of a run, or two runs compared."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

import click
import pandas as pd
from rich.console import Group
from rich.progress import BarColumn, Progress, TextColumn

from memtrace import patterns
from memtrace.cli.options import neo4j_options, replayer_option
from memtrace.cli.output import Column, fit_table, make_console
from memtrace.db import Database, connect
from memtrace.errors import NotReplayableError
from memtrace.patterns import export
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
        "evidence by its age at question time (messages in between, buckets from the run's ages)",
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
        return "no optimizable input"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if column == "net" and isinstance(value, int | float) and value == value:
        return f"{value:+.0f}"  # a change: always signed
    if isinstance(value, float):
        if value != value:  # NaN: unknown
            return "-"
        if column == "accuracy_delta":
            return f"{value:+.1%}"
        if column.startswith("share") or column.endswith("share"):
            return f"{value:.0%}"
        if column in ("rescued", "also_rescued", "broken", "replays"):
            return f"{value:.0f}"
        return f"{value:.2f}"
    return str(value)


# Operation names and the words a class is told apart by are never cut; lists and free text go
# under their row; numbers align right (cli/output.py: fit_table).
WHOLE = {"op_name", "error_type", "failure_mode", "category", "stage", "trace_id", "case_id"}
LONG = {"inputs", "example_cases", "why", "error", "question"}
NUMERIC = {"cases", "evidence", "cases_a", "cases_b", "change", "session_index", "rescued"}
NUMERIC |= {"also_rescued", "broken", "net", "replays", "accuracy_delta", "fix_alone_share"}
HEADERS = {
    "share_of_failures": "of failures",
    "share_of_executions": "of executions",
    "median_confidence": "confidence",
    "accuracy_delta": "Δ accuracy",
    "fix_alone_share": "fix alone",
}


def _table(
    frame: pd.DataFrame, columns: tuple[str, ...], title: str, width: int | None = None
) -> Group:
    spec = [
        Column(
            column,
            HEADERS.get(column, column.replace("_", " ")),
            numeric=column in NUMERIC or column.startswith(("share", "median")),
            whole=column in WHOLE,
            long=column in LONG,
        )
        for column in columns
    ]
    rows = [{c: _cell(c, row[c]) for c in columns} for row in frame.to_dict(orient="records")]
    return fit_table(rows, spec, title, width or console.width)


NO_INPUT_NOTE = (
    "no optimizable input: the blamed operation reads no prompt and no parameter, so no prompt "
    "or threshold change (memtrace optimize) can fix the class; its code or model must change"
)


def _emit(frame: pd.DataFrame, fmt: str, columns: tuple[str, ...], title: str) -> None:
    if fmt == "json":
        click.echo(export.to_json(frame))
    elif fmt == "csv":
        click.echo(export.to_csv(frame), nl=False)
    else:
        console.print(_table(frame, columns, title))
        _input_note(frame, columns)


def _input_note(frame: pd.DataFrame, columns: tuple[str, ...]) -> None:
    """What "no optimizable input" means, under a table that shows it."""
    if "inputs" in columns and "inputs" in frame and any(not v for v in frame["inputs"]):
        console.print(NO_INPUT_NOTE, style="dim")


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
    help="What fixing each class would buy: the stored what-if of the run, or (the first time) "
    "execute it: replay the affected conversations with every blamed operation of the class "
    "repaired and count the answers rescued and broken (stored on the run for the report and "
    "Neo4j Browser; replays take time).",
)
@click.option(
    "--rerun",
    is_flag=True,
    help="With --what-if: replay again even if the run has a stored what-if (after a "
    "re-attribution or a changed system).",
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
    rerun: bool,
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
    if rerun and not what_if:
        raise click.UsageError("--rerun replays the what-if: use it with --what-if")
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
        stored = patterns.what_if_summary(db, run_id) if what_if and not rerun else None
        if stored is not None and system is None:
            classes = patterns.failure_classes(db, run_id)
            frame = patterns.with_headroom(classes, patterns.headroom(db, run_id))
            if not classes.empty and not frame["replayable"].fillna(False).astype(bool).any():
                refused = stored.get("not_replayable")
                lines = map(str, refused if isinstance(refused, list) else ["no reason stored"])
                _nothing_replayed(run_id, (line.split(": ", 1)[-1] for line in lines))
            _emit_what_if(frame, stored, run_id, fmt, stored_at=str(stored.get("computed_at")))
            return
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
        # a trace's refusal once; else each class's own reason (an op no repair addresses)
        _nothing_replayed(run_id, result.not_replayable.values() or result.classes["why"])
    frame = patterns.with_headroom(classes, result.classes)
    _emit_what_if(frame, result.run_properties(), run_id, fmt)


def _nothing_replayed(run_id: str, why: Iterable[str]) -> NoReturn:
    # one line, once: the table would only repeat the reason for every class and trace
    reasons = sorted(set(why))
    more = f" (and {len(reasons) - 1} other reasons)" if len(reasons) > 1 else ""
    raise NotReplayableError(f"no class of run {run_id!r} could be replayed: {reasons[0]}{more}")


def _emit_what_if(
    frame: pd.DataFrame,
    joint: dict[str, Any],
    run_id: str,
    fmt: str,
    stored_at: str | None = None,
) -> None:
    """The classes with their headroom and the joint line; ``joint``: ``WhatIf.run_properties``
    (or the run's stored copy, written ``stored_at``)."""
    frame = frame.sort_values(["net", "cases"], ascending=False, na_position="last", kind="stable")
    if fmt == "json":
        document: dict[str, Any] = {"run_id": run_id, "classes": export.records(frame)}
        document |= {"joint": joint, "stored_at": stored_at}
        click.echo(json.dumps(document, ensure_ascii=False, allow_nan=False, indent=2, default=str))
        return
    if fmt == "csv":
        click.echo(export.to_csv(frame), nl=False)
        return
    console.print(
        _table(frame, WHAT_IF_COLUMNS, f"what fixing each class would buy - run {run_id}")
    )
    _input_note(frame, WHAT_IF_COLUMNS)
    if joint.get("joint_keys"):
        console.print(
            f"the top {len(joint['joint_keys'])} classes repaired together: "
            f"{joint['joint_rescued']} rescued, {joint['joint_broken']} broken, "
            f"net {joint['joint_net']:+d} ({joint['joint_accuracy_delta']:+.1%} of "
            f"{joint['total_cases']} cases)"
        )
    for line in joint.get("not_replayable") or []:
        console.print(f"[yellow]not replayed[/] {line}")
    if stored_at is None:
        console.print(
            f"{joint['replays']} system runs replayed; stored for `memtrace report` and Browser"
        )
    else:
        console.print(
            f"stored what-if of {stored_at[:16].replace('T', ' ')} UTC ({joint['replays']} "
            "replays); --rerun replays again"
        )
