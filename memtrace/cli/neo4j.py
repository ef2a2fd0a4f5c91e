"""`memtrace neo4j install|start|stop|status|logs`: the managed local server."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from memtrace.cli.output import make_console, strict_json
from memtrace.server import manager
from memtrace.server.config import (
    MemoryPlan,
    ServerOptions,
    available_memory,
    parse_size,
    plan_memory,
)
from memtrace.server.layout import ServerLayout, ServerState
from memtrace.settings import (
    DEFAULT_BOLT_PORT,
    DEFAULT_HTTP_PORT,
    LLMSettings,
    Neo4jSettings,
    Settings,
    memtrace_home,
)

if TYPE_CHECKING:
    from memtrace.db import Database

console = make_console()


def _layout() -> ServerLayout:
    return ServerLayout(memtrace_home())


def _size(_: click.Context, __: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


class EnvDefaultOption(click.Option):
    """An option whose help shows the value its environment variable sets, when it is set.

    click shows the static default even when the variable overrides it, so `--help` said
    `[default: 7687]` while the server would start on $MEMTRACE_BOLT_PORT.
    """

    def get_help_extra(self, ctx: click.Context) -> Any:
        extra = super().get_help_extra(ctx)
        name = self.envvar if isinstance(self.envvar, str) else None
        if name and os.environ.get(name):
            extra["default"] = f"{os.environ[name]}, from {name}"
        return extra


@click.group("neo4j")
def neo4j_group() -> None:
    """Run a real Neo4j 5.26 server locally, without Docker (home: $MEMTRACE_HOME/neo4j)."""


@neo4j_group.command()
def install() -> None:
    """Download the official Neo4j and Neo4j Browser jars with Maven (idempotent)."""
    layout = _layout()
    with console.status("Resolving Neo4j jars from Maven Central..."):
        result = manager.install(layout)
    verb = "already installed" if result.already_installed else "installed"
    console.print(
        f"Neo4j {result.version} {verb} in {result.lib} "
        f"({result.jars} jars, {result.seconds:.1f} s)"
    )


@neo4j_group.command()
@click.option(
    "--bolt-port",
    cls=EnvDefaultOption,
    envvar="MEMTRACE_BOLT_PORT",
    show_envvar=True,
    default=DEFAULT_BOLT_PORT,
    show_default=True,
    help="Bolt port on 127.0.0.1.",
    type=click.IntRange(1, 65535),
)
@click.option(
    "--http-port",
    cls=EnvDefaultOption,
    envvar="MEMTRACE_HTTP_PORT",
    show_envvar=True,
    default=DEFAULT_HTTP_PORT,
    show_default=True,
    help="HTTP (Browser) port on 127.0.0.1.",
    type=click.IntRange(1, 65535),
)
@click.option("--no-auth", is_flag=True, help="Disable authentication (throwaway servers only).")
@click.option("--heap", callback=_size, help="Heap size, e.g. 2g [default: from free RAM].")
@click.option("--page-cache", callback=_size, help="Page cache, e.g. 1g [default: from free RAM].")
@click.option("--timeout", default=manager.START_TIMEOUT_SECONDS, show_default=True, type=float)
@click.option(
    "--no-warm-up",
    is_flag=True,
    help="Skip running the `memtrace patterns` queries once after the start (they then pay "
    "for query planning and a cold cache on their first run).",
)
def start(
    bolt_port: int,
    http_port: int,
    no_auth: bool,
    heap: int | None,
    page_cache: int | None,
    timeout: float,
    no_warm_up: bool,
) -> None:
    """Start the server in the background; returns when Bolt answers and the queries of
    `memtrace patterns` have run once (planned and cached: see --no-warm-up)."""
    layout = _layout()
    memory = None
    if heap is not None or page_cache is not None:
        default = plan_memory(available_memory())
        memory = MemoryPlan(heap or default.heap_bytes, page_cache or default.pagecache_bytes)
    options = ServerOptions(
        bolt_port=bolt_port, http_port=http_port, auth=not no_auth, memory=memory
    )
    with console.status("Starting Neo4j..."):
        result = manager.start(layout, options, timeout=timeout)
    state = result.state
    if result.already_running:
        console.print(f"Neo4j is already running (pid {state.pid}); nothing to do.")
        return
    console.print(
        f"Neo4j ready in {result.seconds:.1f} s: bolt://127.0.0.1:{state.bolt_port}, "
        f"Browser http://127.0.0.1:{state.http_port}/browser/ (pid {state.pid})"
    )
    if state.auth:
        console.print(f"User neo4j; password in {layout.password_file}")
    if not no_warm_up:
        _warm_up(layout, state)


def _warm_up(layout: ServerLayout, state: ServerState) -> None:
    # pandas and the driver: paid by a start that warms up, not by `memtrace neo4j status`
    from memtrace import patterns
    from memtrace.db import connect

    neo4j = Neo4jSettings(
        uri=f"bolt://127.0.0.1:{state.bolt_port}",
        password=layout.read_password() if state.auth else None,
    )
    settings = Settings(home=layout.home, neo4j=neo4j, llm=LLMSettings())
    with console.status("Warming up the pattern queries..."), connect(settings) as db:
        warmed = patterns.warm_up(db)
        started = time.perf_counter()
        warm_first_run(db, settings)
        first_run = time.perf_counter() - started
    run = f"run {warmed.run_id}" if warmed.run_id else "no attribution run yet"
    console.print(
        f"Pattern queries planned and run once in {warmed.seconds:.1f} s ({run}), load and "
        f"attribution queries in {first_run:.1f} s (a small trace, loaded and deleted); "
        "`--no-warm-up` skips this"
    )


def warm_first_run(db: Database, settings: Settings) -> None:
    """A first load and a first attribute cost what later ones do: the server plans their
    queries on a small shipped trace, attributed without writing, then deleted."""
    from memtrace.admin import delete_trace
    from memtrace.attribution.pipeline import Options, run_attribution
    from memtrace.attribution.registry import make_judge
    from memtrace.attribution.store import AttributionStore
    from memtrace.loaders import warm

    trace_id = warm.warm_up(db)
    try:
        store = AttributionStore(db)
        run_attribution(store, make_judge("offline", settings), Options(), trace_id=trace_id,
                        write=False)  # fmt: skip
    finally:
        delete_trace(db, trace_id)


@neo4j_group.command()
def stop() -> None:
    """Stop the managed server (SIGTERM to its pid, waits for a clean shutdown)."""
    with console.status("Stopping Neo4j..."):
        pid = manager.stop(_layout())
    console.print("Neo4j was not running." if pid is None else f"Neo4j stopped (pid {pid}).")


def _mib(size: int | None) -> str:
    return "-" if size is None else f"{size / 2**20:,.0f} MiB"


@neo4j_group.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def status(as_json: bool) -> None:
    """Version, ports, pid, memory, data size and the Browser URL."""
    info = manager.status(_layout())
    if as_json:
        click.echo(strict_json(info.as_dict()))
        return
    table = Table(show_header=False, box=None)
    table.add_row("state", "[green]running[/]" if info.running else "[yellow]stopped[/]")
    table.add_row("version", info.installed_version or "not installed")
    table.add_row("home", str(info.home))
    if info.running:
        table.add_row("pid", str(info.pid))
        table.add_row("bolt", info.bolt_uri or "-")
        table.add_row("browser", info.browser_url or "-")
        table.add_row("auth", "on" if info.auth else "off")
        table.add_row("memory (RSS)", _mib(info.rss_bytes))
        table.add_row("started", info.started_at or "-")
    table.add_row("data size", _mib(info.data_bytes))
    console.print(table)


@neo4j_group.command()
@click.option("-n", "--lines", default=40, show_default=True, type=click.IntRange(1))
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C ends).")
def logs(lines: int, follow: bool) -> None:
    """Show the server's log."""
    layout = _layout()
    click.echo(manager.log_tail(layout, lines))
    if not follow or not layout.console_log.exists():
        return
    with layout.console_log.open(encoding="utf-8", errors="replace") as handle:
        handle.seek(0, 2)
        try:
            while True:
                line = handle.readline()
                if line:
                    click.echo(line, nl=False)
                else:
                    time.sleep(0.5)
        except KeyboardInterrupt:
            pass
