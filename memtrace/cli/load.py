"""`memtrace load` / `memtrace-load PATH...`: validate and write traces into Neo4j."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from memtrace.cli.errors import json_errors, reporting_errors
from memtrace.cli.options import choice, neo4j_options
from memtrace.cli.output import make_console, strict_json
from memtrace.db import connect
from memtrace.loaders.append import append_files
from memtrace.loaders.bulk import BulkTarget, bulk_load
from memtrace.loaders.formats import FORMAT_NAMES
from memtrace.loaders.load import (
    DEFAULT_BATCH_SIZE,
    LoadOptions,
    LoadSummary,
    load_paths,
    stages_line,
    unread_lines,
)
from memtrace.loaders.otlp import LabeledQuestion, Labels
from memtrace.loaders.otlp.timelines import DEFAULT_GROUPING
from memtrace.loaders.otlp.timelines import group_by as group_by_attribute
from memtrace.server.layout import ServerLayout
from memtrace.settings import Settings
from memtrace.systems.locomo import load_locomo
from memtrace.systems.registry import SYSTEM_SPELLINGS

console = make_console(stderr=True)


class ErrorReportingCommand(click.Command):
    """Prints memtrace errors as one message (exit 1); also used as the `memtrace-load` script."""

    def invoke(self, ctx: click.Context) -> Any:
        with reporting_errors():
            return super().invoke(ctx)


class RichProgress:
    """A progress bar in elements (nodes + relationships) per second."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.task: TaskID | None = None

    def start(self, label: str, total: int) -> None:
        self.task = self.bar.add_task(label, total=total)

    def advance(self, elements: int) -> None:
        if self.task is not None:
            self.bar.advance(self.task, elements)

    def finish(self) -> None:
        if self.task is not None:
            task = self.bar.tasks[self.task]
            self.bar.update(self.task, total=task.completed)


class ElementsPerSecond(TextColumn):
    def __init__(self) -> None:
        super().__init__("")

    def render(self, task: Any) -> Any:
        elapsed = task.finished_time if task.finished else task.elapsed
        speed = task.completed / elapsed if elapsed else 0.0
        return f"{speed:,.0f} elements/s"


def render_summary(summary: LoadSummary) -> Table:
    title = "Validated (dry run, nothing written)" if summary.dry_run else "Loaded"
    table = Table(title=title)
    for column in ("traces", "operations", "variables", "edges", "cases", "failed cases"):
        table.add_column(column, justify="right")
    table.add_column("labels", justify="right")
    table.add_column("seconds", justify="right")
    table.add_row(
        str(len(summary.files)),
        *(
            f"{summary.total(key):,}"
            for key in ("operations", "variables", "edges", "cases", "failed_cases", "labels")
        ),
        f"{summary.seconds:.2f}",
    )
    return table


LEVEL_STYLE = {"error": "bold red", "warning": "yellow"}


def print_findings(summary: LoadSummary, console: Console) -> None:
    """Each trace's findings: level, what it costs, the fix, a few ids. Nothing when clean."""
    for result in summary.files:
        if not result.findings:
            continue
        console.print(f"[bold]{escape(result.trace_id)}[/] ({escape(result.path)})")
        for finding in result.findings:
            style = LEVEL_STYLE[finding.level]
            examples = f" (e.g. {', '.join(finding.examples)})" if finding.examples else ""
            console.print(
                f"  [{style}]{finding.level}[/] {finding.code}: {escape(finding.problem)}"
                f"{escape(examples)}\n    fix: {escape(finding.fix)}",
                highlight=False,
                soft_wrap=True,
            )


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_NAMES),
    help="Input format (default: detected per file).",
)
labels_option = click.option(
    "--labels",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="OTLP files: LoCoMo-format questions to join as cases (by session.id and question).",
)


def locomo_labels(path: Path) -> Labels:
    """The questions of a LoCoMo-format file, as the OTLP importer joins them."""
    questions = []
    for conv in load_locomo(path):
        turns = conv.turns()
        for q in conv.questions:
            questions.append(
                LabeledQuestion(
                    conversation=conv.sample_id,
                    case_id=f"{conv.sample_id}-qa-{q.number}",
                    question=q.text,
                    answer=q.answer,
                    category=q.category,
                    evidence=tuple(turns[d].text for d in q.evidence if d in turns),
                    missing_evidence=tuple(d for d in q.evidence if d not in turns),
                )
            )
    return Labels(str(path), tuple(questions))


@click.command("load", cls=ErrorReportingCommand)
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    help="Rows per write transaction.",
)
@click.option("--trace-id", help="Override the trace id (only with a single file).")
@click.option("--system", help="Override the memory system name (e.g. mem0).")
@click.option("--dataset", help="Override the dataset name (e.g. locomo).")
@format_option
@labels_option
@click.option("--dry-run", is_flag=True, help="Validate only; write nothing.")
@click.option(
    "--bulk",
    is_flag=True,
    help="Empty database only: write CSV files and import them offline with neo4j-admin "
    "(the managed server is stopped and started again).",
)
@click.option(
    "--timelines",
    is_flag=True,
    help="OTLP requests (one OTel trace each) of one user, conversation or session become one "
    "trace each (its timeline), appended request by request; requests with no such id are "
    "traces of their own (docs/trace-format.md, Timelines).",
)
@click.option(
    "--group-by",
    metavar="ATTRIBUTE",
    help="With --timelines: this span attribute (e.g. tenant.id) ties requests together "
    "instead of the conventions' user, conversation and session ids.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@neo4j_options
def load_command(
    paths: tuple[str, ...],
    batch_size: int,
    trace_id: str | None,
    system: str | None,
    dataset: str | None,
    fmt: str | None,
    labels: Path | None,
    dry_run: bool,
    bulk: bool,
    timelines: bool,
    group_by: str | None,
    as_json: bool,
    settings: Settings,
) -> None:
    """Load trace files (native *.jsonl, smartcomment *.json or OTLP JSON), folders or globs.

    Every file is validated completely before anything is written; re-loading a trace replaces
    it (identical counts); an interrupted load is cleaned up by the next load of that trace.
    """
    if group_by is not None and not timelines:
        raise click.UsageError("--group-by needs --timelines")
    if timelines and bulk:
        raise click.UsageError("--timelines appends to timelines; --bulk imports whole traces")
    with json_errors(as_json):
        grouping = (
            (group_by_attribute(group_by) if group_by else DEFAULT_GROUPING) if timelines else None
        )
        options = LoadOptions(
            batch_size=batch_size,
            trace_id=trace_id,
            system=system,
            dataset=dataset,
            format=choice(fmt, FORMAT_NAMES) if fmt is not None else None,
            dry_run=dry_run,
            labels=locomo_labels(labels) if labels is not None else None,
            system_spellings=SYSTEM_SPELLINGS,
            grouping=grouping,
        )
        if grouping is not None:
            if dry_run:
                summary = append_files(None, list(paths), options)
            else:
                with connect(settings) as db, console.status("Appending requests to timelines..."):
                    summary = append_files(db, list(paths), options)
        elif dry_run:
            summary = load_paths(None, list(paths), options)
        elif bulk:
            target = BulkTarget(
                connect=lambda: connect(settings),
                database=settings.neo4j.database,
                uri=settings.neo4j.uri,
                layout=ServerLayout(settings.home) if settings.neo4j.managed else None,
            )
            with console.status("Bulk load: validating, writing CSV files, importing..."):
                summary = bulk_load(target, list(paths), options)
        else:
            bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                ElementsPerSecond(),
                TimeElapsedColumn(),
                console=console,
                disable=as_json,
            )
            with connect(settings) as db, bar:
                summary = load_paths(db, list(paths), options, RichProgress(bar))
        line = stages_line(summary.stages)
        for said in ([line] if line is not None else []) + unread_lines(summary):
            console.print(said, markup=False, highlight=False, soft_wrap=True)
        if as_json:
            click.echo(strict_json(summary.as_dict()))
        else:
            make_console().print(render_summary(summary))
        print_findings(summary, console)  # stderr: what will degrade attribution, with its fix
