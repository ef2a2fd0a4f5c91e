"""`memtrace report`: write the diagnostic report of an attribution run."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click

from memtrace import patterns
from memtrace.browser import target
from memtrace.cli.options import neo4j_options
from memtrace.cli.output import make_console
from memtrace.db import connect
from memtrace.errors import LLMError
from memtrace.llm import LLMClient
from memtrace.report.build import make_report
from memtrace.report.narrative import write_narrative
from memtrace.settings import Settings

console = make_console()


@click.command("report")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for report.html, report.md and charts/.",
)
@click.option("--run", "run_id", help="Attribution run [default: the newest].")
@click.option("--compare-with", metavar="RUN", help="An earlier run to compare the classes with.")
@click.option(
    "--classes",
    "max_classes",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Failure classes that get a section with example cases.",
)
@click.option(
    "--narrative/--no-narrative",
    default=False,
    show_default=True,
    help="Ask the configured LLM (OPENAI_BASE_URL) for a short written analysis.",
)
@neo4j_options
def report_command(
    settings: Settings,
    out: Path,
    run_id: str | None,
    compare_with: str | None,
    max_classes: int,
    narrative: bool,
) -> None:
    """A self-contained HTML report (and its Markdown twin) of an attribution run."""
    narrator = None
    if narrative:
        client = LLMClient.from_settings(settings)
        narrator = partial(write_narrative, client)
    where = target(settings)
    with connect(settings) as db:
        run_id = run_id or patterns.latest_run(db)
        if compare_with is not None:
            patterns.require_run(db, compare_with)
        with console.status(f"writing the report of run {run_id}"):
            result = make_report(
                db,
                run_id,
                out,
                compare_run=compare_with,
                max_classes=max_classes,
                browser_url=where.url if where else None,
                narrator=narrator,
                model=settings.llm.model,
            )
    console.print(f"report of run {run_id} ({result.classes} failure classes):")
    for path in result.files:
        if path.suffix in (".html", ".md"):
            console.print(f"  {path}")
    if result.narrative_error is not None:
        raise LLMError(f"the report was written without its analysis: {result.narrative_error}")
