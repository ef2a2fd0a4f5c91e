"""The `memtrace` command: thin click commands over the library."""

from __future__ import annotations

import logging
from typing import Any

import click

from memtrace import __version__
from memtrace.cli.attribute import attribute_command, eval_command, explain_command
from memtrace.cli.bench import bench_group
from memtrace.cli.db import db_group
from memtrace.cli.errors import reporting_errors
from memtrace.cli.load import load_command
from memtrace.cli.neo4j import neo4j_group
from memtrace.cli.run import run_command


class MemtraceGroup(click.Group):
    """Prints memtrace errors as one clear message (exit 1) instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        with reporting_errors():
            return super().invoke(ctx)


@click.group(cls=MemtraceGroup)
@click.version_option(__version__, prog_name="memtrace")
@click.option("-v", "--verbose", is_flag=True, help="Show the driver's retries and notifications.")
def cli(verbose: bool) -> None:
    """Find out why an LLM memory system gave a wrong answer, and fix it."""
    # The driver logs every retried connection and server notification as a warning; our own
    # errors already say what went wrong, so keep that noise for --verbose.
    logging.getLogger("neo4j").setLevel(logging.DEBUG if verbose else logging.ERROR)


cli.add_command(neo4j_group)
cli.add_command(db_group)
cli.add_command(load_command)
cli.add_command(run_command)
cli.add_command(bench_group)
cli.add_command(attribute_command)
cli.add_command(eval_command)
cli.add_command(explain_command)
