"""`memtrace bench make`: a fault-injection benchmark with ground-truth labels."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from memtrace.bench.make import FORMATS, BenchOptions, make_bench
from memtrace.bench.natural import natural_bench, natural_labels
from memtrace.bench.plan import TYPES, system_types
from memtrace.cli.options import choice, neo4j_options, replayer_option
from memtrace.cli.output import make_console, strict_json
from memtrace.cli.run import parse_subset, subset_options
from memtrace.db import connect
from memtrace.errors import MemtraceError
from memtrace.replay.inputs import ENDPOINT_REPLAYABLE, REPLAYABLE_SYSTEMS
from memtrace.settings import Settings, load_settings
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.registry import BACKENDS, FAULT_TYPES


@click.group("bench")
def bench_group() -> None:
    """Benchmarks with ground truth for attribution."""


@subset_options
@bench_group.command("make")
@click.option("--system", type=click.Choice(list(FAULT_TYPES)), default="mem0", show_default=True)
@click.option(
    "--faults",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Faults to plant, spread evenly over the fault types.",
)
@click.option(
    "--types",
    help="Comma-separated fault types [every type the system can have: mem0 all five, rag "
    "RetrievalError,ResponseError, long-context UpdateError,ResponseError, evermemos "
    "ExtractionError,RetrievalError,ResponseError].",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="native",
    show_default=True,
)
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="offline", show_default=True)
@click.option("--trace-prefix", default="", help="Prefix for trace ids (keeps sets apart).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def make_command(
    data: Path | None,
    conversations: str | None,
    sessions: str | None,
    questions: int | None,
    system: str,
    faults: int,
    types: str | None,
    seed: int,
    out: Path,
    fmt: str,
    backend: str,
    trace_prefix: str,
    as_json: bool,
) -> None:
    """Run SYSTEM with planted faults; write labelled traces and a manifest to OUT."""
    convs = load_locomo(data or SAMPLE_PATH, parse_subset(conversations, sessions, questions))
    console = make_console(stderr=True)
    wanted = tuple(t.strip() for t in types.split(",") if t.strip()) if types else None
    unknown = [t for t in wanted or () if t not in TYPES]
    if unknown:
        raise click.BadParameter(f"unknown error type {unknown[0]!r}", param_hint="--types")
    options = BenchOptions(
        system, faults, seed, backend, choice(fmt, FORMATS), trace_prefix, wanted
    )
    with console.status("baseline run") as status:
        report = make_bench(convs, out, options, progress=status.update, settings=load_settings())
    summary = report.as_dict()
    if as_json:
        click.echo(strict_json(summary))
        return
    table = Table(title=f"labels in {out}")
    columns = ("asked", "planted", "injected", "collateral", "derived")
    for column in ("error type", *columns):
        table.add_column(column, justify="left" if column == "error type" else "right")
    for kind in system_types(system, wanted):
        table.add_row(kind, *(str(summary[k].get(kind, 0)) for k in columns))
    console.print(table)
    for kind, reason in summary["shortfalls"].items():
        console.print(f"[yellow]{kind}[/]: {reason}", highlight=False, soft_wrap=True)
    console.print(
        f"{summary['labels']} labels in {len(report.files)} traces; "
        f"{summary['dropped_faults']} faults dropped by the final check"
    )


@subset_options
@bench_group.command("natural")
@click.argument("traces", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--system",
    type=click.Choice([*REPLAYABLE_SYSTEMS, *ENDPOINT_REPLAYABLE]),
    default=None,
    help="A reference system (offline), or mem0-lib (the real Mem0 on the configured endpoint) "
    "[default: mem0, unless trace files are given].",
)
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option("--trace-prefix", default="", help="Prefix for trace ids (keeps sets apart).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Failed cases replayed in parallel.")  # fmt: skip
@replayer_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@neo4j_options
def natural_command(
    settings: Settings,
    data: Path | None,
    conversations: str | None,
    sessions: str | None,
    questions: int | None,
    traces: tuple[Path, ...],
    system: str | None,
    out: Path,
    trace_prefix: str,
    workers: int,
    replayer: str | None,
    as_json: bool,
) -> None:
    """Run SYSTEM with no planted fault, load it and label every failed case by replay.

    Given TRACES (native trace files of a system of your own, replayed by its replayer:
    --replayer or the one its package registers; docs/replay.md), label their failed cases
    instead, in copies written to --out."""
    if traces and (system or data or conversations or sessions or questions or trace_prefix):
        raise click.UsageError("trace files are labelled as they are: no --system or data options")
    console = make_console(stderr=True)
    with connect(settings) as db, console.status("natural failures") as status:
        if traces:
            report = natural_labels(
                db, list(traces), out, settings=settings, replayer=replayer, workers=workers,
                progress=status.update,
            )  # fmt: skip
        else:
            convs = load_locomo(
                data or SAMPLE_PATH, parse_subset(conversations, sessions, questions)
            )
            report = natural_bench(
                db, system or "mem0", convs, out, prefix=trace_prefix, settings=settings,
                workers=workers, progress=status.update,
            )  # fmt: skip
    summary = report.as_dict()
    if as_json:
        click.echo(strict_json(summary))
        return
    table = Table(title=f"natural failures of {report.system}, labelled by replay ({out})")
    table.add_column("error type")
    table.add_column("label (ideal answer step)", justify="right")
    table.add_column("rescued with your answerer", justify="right")
    yours = summary["by_type_with_your_answerer"]
    for kind in sorted({*summary["by_type"], *yours} - {"no single op"}):
        table.add_row(kind, str(summary["by_type"].get(kind, 0)), str(yours.get(kind, 0)))
    table.add_row(
        "no single decisive op",
        str(summary["no_single_decisive"]),
        str(yours.get("no single op", 0)),
    )
    console.print(table)
    console.print(
        f"{summary['failed']} of {summary['cases']} cases failed; {summary['labeled']} labelled "
        f"(source replay); replays per case median {summary['replays_median']}, p95 "
        f"{summary['replays_p95']}; {summary['cases_per_second']:.1f} cases/s"
    )
    if summary["errors"]:
        raise MemtraceError(f"{summary['errors']} failed cases could not be replayed")
