"""Options shared by commands that talk to Neo4j."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from memtrace.settings import Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T", bound=str)


def choice(value: str, allowed: Sequence[T]) -> T:
    """``value`` as one of ``allowed`` (a click.Choice already checked it; this types it)."""
    for item in allowed:
        if item == value:
            return item
    raise click.BadParameter(f"{value!r} is not one of {', '.join(allowed)}")


def neo4j_options(command: F) -> F:
    """Add --uri/--user/--password/--database and pass a resolved ``settings`` argument."""

    @click.option("--uri", envvar="NEO4J_URI", help="Bolt URI (default: the managed server).")
    @click.option("--user", envvar="NEO4J_USER", help="Neo4j user [default: neo4j].")
    @click.option(
        "--password",
        envvar="NEO4J_PASSWORD",
        help="Neo4j password (default: the managed server's).",
        show_envvar=True,
    )
    @click.option("--database", envvar="NEO4J_DATABASE", help="Database [default: neo4j].")
    @functools.wraps(command)
    def wrapper(
        *args: Any,
        uri: str | None,
        user: str | None,
        password: str | None,
        database: str | None,
        **kwargs: Any,
    ) -> Any:
        settings = settings_from_cli(uri=uri, user=user, password=password, database=database)
        return command(*args, settings=settings, **kwargs)

    return wrapper  # type: ignore[return-value]


def settings_from_cli(**neo4j: str | None) -> Settings:
    return load_settings(neo4j=neo4j)


def llm_options(command: F) -> F:
    """Add --llm-timeout/--llm-concurrency; they override the ``settings`` argument's [llm]."""

    @click.option(
        "--llm-timeout",
        type=click.FloatRange(min=0, min_open=True),
        help="Seconds an LLM request may take [env MEMTRACE_LLM_TIMEOUT; default 60]. Raise it "
        "for a slow local server.",
    )
    @click.option(
        "--llm-concurrency",
        type=click.IntRange(min=1),
        help="LLM requests in flight at once, over all --workers [env MEMTRACE_LLM_CONCURRENCY; "
        "default 4]. 1 for a server that answers one request at a time.",
    )
    @functools.wraps(command)
    def wrapper(
        *args: Any,
        settings: Settings,
        llm_timeout: float | None,
        llm_concurrency: int | None,
        **kwargs: Any,
    ) -> Any:
        overrides = {"timeout_seconds": llm_timeout, "concurrency": llm_concurrency}
        chosen = {key: value for key, value in overrides.items() if value is not None}
        if chosen:
            settings = settings.model_copy(update={"llm": settings.llm.model_copy(update=chosen)})
        return command(*args, settings=settings, **kwargs)

    return wrapper  # type: ignore[return-value]


replayer_option = click.option(
    "--replayer",
    metavar="MODULE:ATTR",
    help="Replay the traces of a system of your own with this replayer factory (docs/replay.md; "
    "a package may register one for its system in the entry point group memtrace.replayers "
    "instead). memtrace replays its own systems itself.",
)
