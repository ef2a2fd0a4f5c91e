"""`memtrace check PATH...`: what in a trace will degrade attribution, and how to fix it."""

from __future__ import annotations

from pathlib import Path

import click

from memtrace.cli.errors import json_errors
from memtrace.cli.load import format_option, labels_option, locomo_labels, print_findings
from memtrace.cli.options import choice
from memtrace.cli.output import make_console, strict_json
from memtrace.errors import MemtraceError
from memtrace.loaders.formats import FORMAT_NAMES
from memtrace.loaders.load import LoadOptions, LoadSummary, load_paths
from memtrace.systems.registry import SYSTEM_SPELLINGS


def error_count(summary: LoadSummary) -> int:
    return sum(f.level == "error" for result in summary.files for f in result.findings)


@click.command("check")
@click.argument("paths", nargs=-1, required=True)
@format_option
@labels_option
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON on stdout.")
def check_command(
    paths: tuple[str, ...], fmt: str | None, labels: Path | None, as_json: bool
) -> None:
    """Validate traces (nothing is written) and list what will degrade attribution, each with
    its fix. Exits 1 when a trace has a problem at error level."""
    with json_errors(as_json):  # a file that is no valid trace: its error as JSON too
        options = LoadOptions(
            format=choice(fmt, FORMAT_NAMES) if fmt is not None else None,
            dry_run=True,
            labels=locomo_labels(labels) if labels is not None else None,
            system_spellings=SYSTEM_SPELLINGS,
        )
        summary = load_paths(None, list(paths), options)
    if as_json:
        report = summary.as_dict()
        click.echo(
            strict_json(
                {
                    "traces": report["traces"],
                    "problems": report["problems"],
                    "files": [
                        {key: file[key] for key in ("path", "format", "trace_id", "findings")}
                        for file in report["files"]  # type: ignore[attr-defined]
                    ],
                }
            )
        )
    else:
        console = make_console()
        print_findings(summary, console)
        clean = sum(not result.findings for result in summary.files)
        console.print(f"{len(summary.files)} traces checked, {clean} without findings")
    errors = error_count(summary)
    if errors:
        raise MemtraceError(
            f"{errors} problems at error level: attribution of these traces would be wrong or "
            "impossible where they apply"
        )
