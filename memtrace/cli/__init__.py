"""The `memtrace` command: thin click commands over the library."""

from __future__ import annotations

import importlib
import logging
from typing import Any

import click

from memtrace import __version__
from memtrace.cli.errors import reporting_errors

# Subcommands are imported when used: the attribution and LLM commands pull in pandas and openai
# (about a second), which `memtrace neo4j status` or `memtrace load` should not pay for.
COMMANDS = {
    "neo4j": "memtrace.cli.neo4j:neo4j_group",
    "db": "memtrace.cli.db:db_group",
    "load": "memtrace.cli.load:load_command",
    "check": "memtrace.cli.check:check_command",
    "run": "memtrace.cli.run:run_command",
    "bench": "memtrace.cli.bench:bench_group",
    "attribute": "memtrace.cli.attribute:attribute_command",
    "eval": "memtrace.cli.attribute:eval_command",
    "explain": "memtrace.cli.attribute:explain_command",
    "optimize": "memtrace.cli.optimize:optimize_command",
    "patterns": "memtrace.cli.patterns:patterns_command",
    "report": "memtrace.cli.report:report_command",
    "browser": "memtrace.cli.browser:browser_command",
    "review": "memtrace.cli.review:review_group",
    "collect": "memtrace.cli.collect:collect_command",
}


class MemtraceGroup(click.Group):
    """Loads subcommands lazily and prints memtrace errors as one clear message (exit 1)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command), target  # a bug in COMMANDS, not user input
        return command

    def invoke(self, ctx: click.Context) -> Any:
        with reporting_errors():
            return super().invoke(ctx)


@click.group(cls=MemtraceGroup)
@click.version_option(__version__, prog_name="memtrace")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show the driver's retries and notifications, and how the LLM endpoint is asked for JSON.",
)
def cli(verbose: bool) -> None:
    """Find out why an LLM memory system gave a wrong answer, and fix it."""
    # The driver logs every retried connection and server notification as a warning; our own
    # errors already say what went wrong, so keep that noise for --verbose.
    logging.getLogger("neo4j").setLevel(logging.DEBUG if verbose else logging.ERROR)
    if verbose:
        ours = logging.getLogger("memtrace")
        if not ours.handlers:
            ours.addHandler(logging.StreamHandler())
        ours.setLevel(logging.INFO)
