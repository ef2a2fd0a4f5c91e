"""How every command reports memtrace errors: one clear line on stderr, exit status 1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.markup import escape

from memtrace.cli.output import make_console
from memtrace.errors import MemtraceError


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
