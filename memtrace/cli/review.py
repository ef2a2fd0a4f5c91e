"""`memtrace review`: the local review app, and its labels out, in and scored."""

from __future__ import annotations

import contextlib
import getpass
import json
import webbrowser
from pathlib import Path

import click
from rich.markup import escape

from memtrace import patterns
from memtrace.browser import target
from memtrace.cli.options import neo4j_options
from memtrace.cli.output import frame_table, make_console, strict_json
from memtrace.db import connect
from memtrace.errors import InputError
from memtrace.review.app import create_app
from memtrace.review.queues import LOW_CONFIDENCE
from memtrace.review.service import Review, agreement_figures, export_labels, import_annotations
from memtrace.serving import check_host, new_token, prepare, url_of
from memtrace.settings import Settings

console = make_console()
err = make_console(stderr=True)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container): ask for --reviewer
        return ""


@click.group("review", invoke_without_command=True)
@click.option("--run", "run_id", help="Attribution run to review [default: newest].")
@click.option("--reviewer", default=_user, show_default="your login name", help="Who is reviewing.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port (0: any free port).")  # fmt: skip
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host (the app then answers other machines; warns).",
)
@click.option(
    "--low-confidence",
    type=click.FloatRange(0, 1),
    default=LOW_CONFIDENCE,
    show_default=True,
    help="Verdicts below this confidence go to the 'low confidence' queue.",
)
@click.option(
    "--browser-url", help="Neo4j Browser URL for case links [default: the managed server's]."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in a web browser.")
@neo4j_options
@click.pass_context
def review_group(
    ctx: click.Context,
    settings: Settings,
    run_id: str | None,
    reviewer: str,
    host: str,
    port: int,
    allow_remote: bool,
    low_confidence: float,
    browser_url: str | None,
    open_browser: bool,
) -> None:
    """Serve the review app: confirm or correct a run's verdicts, one queue at a time.

    Prints a URL with a random token; serves until Ctrl-C. Subcommands export, import and
    score the human labels it writes.
    """
    if ctx.invoked_subcommand is not None:
        return
    warning = check_host(host, allow_remote)
    if warning:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    token = new_token()
    with connect(settings) as db:
        review = Review(db, run_id or patterns.latest_run(db), reviewer, low_confidence)
        app = create_app(review, token, target(settings, browser_url), allow_remote, host)
        running = prepare(app, host, port)
        url = url_of(running.sock, token)
        console.print(
            f"[bold]memtrace review[/] of run {escape(review.run_id)} as {escape(reviewer)}: "
            "open this URL (Ctrl-C stops the app)"
        )
        click.echo(url)
        if open_browser:
            webbrowser.open(url)
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn stopped cleanly, then re-raised
            running.serve()
        console.print("review app stopped")


@review_group.command("export")
@click.option("--trace", "trace_id", help="Only this trace.")
@click.option("--reviewer", help="Only this reviewer's labels.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file [default: standard output].")  # fmt: skip
@neo4j_options
def export_command(
    settings: Settings, trace_id: str | None, reviewer: str | None, out: Path | None
) -> None:
    """Human labels as MemTraceBench annotations, one JSON object per line."""
    with connect(settings) as db:
        records = export_labels(db, trace_id, reviewer)
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    if out is None:
        click.echo(text, nl=False)
        return
    out.write_text(text, encoding="utf-8")
    console.print(f"{len(records)} human label(s) written to {escape(str(out))}")


@review_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--reviewer",
    default="manual-annotation",
    show_default=True,
    help="Reviewer of lines that name none (MemTrace's manual annotations do not).",
)
@neo4j_options
def import_command(settings: Settings, file: Path, reviewer: str) -> None:
    """Import MemTrace manual-annotation JSON lines (or an export) as human labels.

    All or nothing: an id that does not resolve (graph, query, op, edge) is an error, and
    nothing is written.
    """
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(str(file), None, f"not UTF-8 text: {exc.reason}") from None
    with connect(settings) as db:
        result = import_annotations(db, str(file), lines, reviewer)
    console.print(f"imported {result.reviews} review(s), {result.labels} human label(s)")


@review_group.command("agreement")
@click.option("--trace", "trace_id", help="Only this trace.")
@click.option("--json", "as_json", is_flag=True)
@neo4j_options
def agreement_command(settings: Settings, trace_id: str | None, as_json: bool) -> None:
    """Each judge (run) against the human labels per label type; Cohen's kappa between
    reviewers on the cases both labelled."""
    with connect(settings) as db:
        figures = agreement_figures(db, trace_id)
    if as_json:
        click.echo(
            strict_json(
                {
                    "labels": figures.labels,
                    "judges": figures.judges.to_dict(orient="records"),
                    "reviewers": figures.reviewers.to_dict(orient="records"),
                }
            )
        )
        return
    console.print(
        frame_table(figures.judges, f"judges vs {figures.labels} human labels", console.width)
    )
    if figures.reviewers.empty:
        console.print("no case has labels of two reviewers yet: no kappa")
    else:
        console.print(
            frame_table(figures.reviewers, "reviewer vs reviewer (Cohen's kappa)", console.width)
        )
