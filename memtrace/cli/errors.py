"""How every command reports memtrace errors: one clear line on stderr, exit status 1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.markup import escape

from memtrace.cli.output import make_console, strict_json
from memtrace.errors import InputError, MemtraceError


@contextmanager
def reporting_errors() -> Iterator[None]:
    try:
        yield
    except MemtraceError as exc:
        # escape(): messages quote user data such as "[neo4j]", which rich would eat as markup.
        # soft_wrap: one line however long, so a pipe or a log gets the message whole.
        make_console(stderr=True).print(
            f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True
        )
        raise SystemExit(1) from exc


def error_object(exc: MemtraceError) -> dict[str, Any]:
    """A memtrace error as the JSON object a ``--json`` command prints instead of its result."""
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, InputError):
        error.update(path=exc.path, location=exc.location, problem=exc.problem)
    return {"error": error}


@contextmanager
def json_errors(enabled: bool) -> Iterator[None]:
    """Under ``--json``, a memtrace error is also printed on stdout as a JSON error object (a
    script reading stdout gets JSON either way); it still exits 1 with the message on stderr."""
    try:
        yield
    except MemtraceError as exc:
        if enabled:
            click.echo(strict_json(error_object(exc)))
        raise
