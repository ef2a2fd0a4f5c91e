"""`memtrace browser`: open Neo4j Browser ready to explore failure patterns."""

from __future__ import annotations

import time
import webbrowser

import click

from memtrace import patterns
from memtrace.browser import guide_server, launch_url, target
from memtrace.cli.options import neo4j_options
from memtrace.cli.output import make_console
from memtrace.db import connect
from memtrace.errors import ConfigError
from memtrace.settings import Settings

console = make_console()


@click.command("browser")
@click.option("--run", "run_id", help="Attribution run the guide starts with [default: newest].")
@click.option("--browser-url", help="Neo4j Browser URL [default: the managed server's].")
@click.option(
    "--guide-port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port of the local guide server (0: any free port).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in a web browser.")
@neo4j_options
def browser_command(
    settings: Settings,
    run_id: str | None,
    browser_url: str | None,
    guide_port: int,
    open_browser: bool,
) -> None:
    """Print the Neo4j Browser URL (connection prefilled) and serve memtrace's guide.

    After logging in, run the prefilled `:guide` command: its blocks put the GraSS style, the
    run's parameters and every pattern query into the editor with one click. Serves until
    Ctrl-C.
    """
    where = target(settings, browser_url)
    if where is None:
        raise ConfigError(
            "no managed Neo4j has been started and no --browser-url given: "
            "`memtrace neo4j start`, or pass your server's Browser URL"
        )
    with connect(settings) as db:
        run_id = run_id or patterns.latest_run(db)
        patterns.require_run(db, run_id)
        classes = patterns.failure_classes(db, run_id)
    first_case = None
    if not classes.empty:
        trace_id, case_id = classes.iloc[0]["case_refs"][0]
        first_case = (str(trace_id), str(case_id))
    with guide_server(run_id, first_case, guide_port) as (_, guide_url):
        url = launch_url(where, "edit", f":guide {guide_url}")
        console.print(f"[bold]Neo4j Browser[/] (connection prefilled):\n{url}", soft_wrap=True)
        if where.password_file is not None:
            console.print(f"password: in {where.password_file} (user {where.user})")
        else:
            console.print("password: your NEO4J_PASSWORD / settings.toml [neo4j] password")
        console.print(
            f"After logging in, run the prefilled [bold]:guide[/] (run {run_id}); the guide is "
            f"served from {guide_url} until you press Ctrl-C."
        )
        if open_browser:
            webbrowser.open(url)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            console.print("guide server stopped")
