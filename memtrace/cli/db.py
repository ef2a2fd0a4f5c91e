"""`memtrace db init|stats|delete`: schema, counts and scoped deletion of traces and runs."""

from __future__ import annotations

import click
from rich.table import Table

from memtrace.admin import delete_everything, delete_trace, graph_stats, init_schema
from memtrace.cli.options import neo4j_options
from memtrace.cli.output import make_console, strict_json
from memtrace.db import connect
from memtrace.errors import ConfigError, MemtraceError
from memtrace.settings import Settings

console = make_console()


@click.group("db")
def db_group() -> None:
    """Schema, statistics and deletion of loaded traces."""


@db_group.command("init")
@neo4j_options
def init_command(settings: Settings) -> None:
    """Create the constraints and indexes of the graph model (idempotent)."""
    with connect(settings) as db:
        names = init_schema(db)
    console.print(f"{len(names)} constraints and indexes in place: {', '.join(names)}")


@db_group.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@neo4j_options
def stats_command(as_json: bool, settings: Settings) -> None:
    """Node and relationship counts, and every trace with its load state."""
    with connect(settings) as db:
        stats = graph_stats(db)
    if as_json:
        click.echo(strict_json(stats))
        return
    counts = Table(title="Graph")
    counts.add_column("element")
    counts.add_column("count", justify="right")
    for key, value in stats["counts"].items():
        counts.add_row(key, f"{value:,}")
    console.print(counts)
    traces = Table(title="Traces")
    columns: tuple[str, ...] = ("id", "system", "dataset", "source", "load_state")
    columns += ("operations", "variables", "edges", "cases", "failed_cases", "labels")
    for column in columns:
        traces.add_column(column)
    for row in stats["traces"]:
        style = "yellow" if row["load_state"] != "complete" else None
        traces.add_row(*("" if row[c] is None else str(row[c]) for c in columns), style=style)
    console.print(traces)
    unfinished = [row["id"] for row in stats["traces"] if row["load_state"] == "loading"]
    if unfinished:
        console.print(
            f"[yellow]{len(unfinished)} trace(s) not completely loaded[/] (a load is running, or "
            f"was interrupted or killed): {', '.join(map(str, unfinished))}. Attribution skips "
            "them; load the file again to replace one, or `memtrace db delete --trace ID`.",
            highlight=False,
            soft_wrap=True,
        )
    copies = [row for row in stats["traces"] if row["load_state"] in ("staging", "retired")]
    if copies:
        console.print(
            f"[yellow]{len(copies)} re-load copy(ies)[/], never read as traces (a re-load is "
            "running, or was interrupted or killed; the trace each belongs to still has one "
            f"complete copy): {', '.join(_copy_note(row) for row in copies)}. The next load of "
            "that trace removes them, or `memtrace db delete --trace COPY_ID`.",
            highlight=False,
            soft_wrap=True,
        )


def _copy_note(row: dict[str, object]) -> str:
    what = "new copy, not swapped in" if row["load_state"] == "staging" else "replaced copy"
    return f"{row['id']} ({what} of {row['copy_of']})"


@db_group.command("delete")
@click.option("--trace", "trace_ids", multiple=True, help="Trace id to delete (repeatable).")
@click.option(
    "--run",
    "run_id",
    help="Delete this attribution run's results instead (with --trace: on those traces only); "
    "the traces stay.",
)
@click.option("--all", "everything", is_flag=True, help="Delete the whole database.")
@click.option("--yes", is_flag=True, help="Confirm --all.")
@neo4j_options
def delete_command(
    trace_ids: tuple[str, ...], run_id: str | None, everything: bool, yes: bool, settings: Settings
) -> None:
    """Delete traces by id, or one attribution run; wiping the whole database needs --all --yes."""
    if everything and (trace_ids or run_id):
        raise ConfigError("give either --trace ID, --run RUN or --all --yes, not several")
    if everything and not yes:
        raise ConfigError("--all deletes every node in the database; add --yes to confirm")
    if not everything and not trace_ids and not run_id:
        raise ConfigError("nothing to delete: give --trace ID, --run RUN (or --all --yes)")
    with connect(settings) as db:
        if everything:
            console.print(f"deleted {delete_everything(db):,} nodes")
            return
        if run_id is not None:
            # local: the attribution store pulls in pandas, which the other deletions skip
            from memtrace.attribution.store import AttributionStore

            store = AttributionStore(db)
            deleted = sum(store.delete_attributions(run_id, t) for t in trace_ids or [None])
            if deleted == 0:
                raise MemtraceError(f"run {run_id!r}: no attributions to delete (not found)")
            console.print(f"run {run_id!r}: deleted {deleted:,} attributions")
            return
        missing = []
        for trace_id in trace_ids:
            deleted = delete_trace(db, trace_id)
            if deleted == 0:
                missing.append(trace_id)
            else:
                console.print(f"trace {trace_id!r}: deleted {deleted:,} nodes")
    if missing:
        names = ", ".join(repr(t) for t in missing)
        raise MemtraceError(f"not found, nothing deleted: trace {names}")
