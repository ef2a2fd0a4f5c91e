"""`memtrace run`: run a traced reference memory system over LoCoMo-format data."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from memtrace.cli.options import neo4j_options
from memtrace.cli.output import make_console, strict_json
from memtrace.settings import Settings
from memtrace.systems.config import read_config
from memtrace.systems.locomo import SAMPLE_PATH, Subset, load_locomo
from memtrace.systems.registry import BACKENDS, RANKERS, SYSTEMS
from memtrace.systems.runner import RunReport, run_system


def load_traces(paths: Sequence[Path], settings: Settings) -> list[str]:
    """Load written traces into Neo4j with the loader; returns the loaded trace ids."""
    from memtrace.db import connect  # local: running a system needs no database
    from memtrace.loaders.load import LoadOptions, load_paths

    with connect(settings) as db:
        summary = load_paths(db, [str(p) for p in paths], LoadOptions())
    return [result.trace_id for result in summary.files]


def parse_subset(conversations: str | None, sessions: str | None, questions: int | None) -> Subset:
    def split(text: str | None) -> tuple[str, ...]:
        return tuple(p.strip() for p in (text or "").split(",") if p.strip())

    try:
        session_numbers = tuple(int(s) for s in split(sessions))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {sessions!r}") from None
    return Subset(split(conversations), session_numbers, questions)


def subset_options(command: click.Command) -> click.Command:
    for option in reversed(
        [
            click.Option(
                ["--data"],
                type=click.Path(path_type=Path, dir_okay=False),
                default=None,
                help="LoCoMo-format JSON [default: the generated sample shipped with memtrace].",
            ),
            click.Option(
                ["--conversations"], help="Comma-separated conversation numbers or sample ids."
            ),
            click.Option(["--sessions"], help="Comma-separated session numbers to replay."),
            click.Option(["--questions"], type=int, help="The first N questions per conversation."),
        ]
    ):
        command.params.insert(0, option)
    return command


def render_accuracy(console: Console, report: RunReport) -> None:
    table = Table(title=f"{report.system}: judge accuracy by category")
    for column in ("category", "correct", "total", "accuracy"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for category, (correct, total) in sorted(
        report.accuracy().items(), key=lambda x: x[0] == "all"
    ):
        table.add_row(category, str(correct), str(total), f"{correct / total:.1%}")
    console.print(table)


@subset_options
@click.command("run")
@click.argument("system", type=click.Choice(sorted(SYSTEMS)))
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    help="The answer and judge [the system's: offline; openai for a system that needs an "
    "endpoint (mem0-lib), so the endpoint given answers too].",
)
@click.option(
    "--retriever",
    type=click.Choice(list(RANKERS)),
    default="bm25",
    show_default=True,
    help="Search by BM25, by hashed character trigrams (the offline stand-in for embeddings), "
    "by embeddings from the OpenAI-compatible endpoint, or with a local sentence-transformers "
    "model (optional extra). evermemos fuses BM25 with this one (trigrams when it is bm25).",
)
@click.option(
    "--embedding-model",
    help="embeddings: endpoint model [text-embedding-3-small]; sentence-transformers: model "
    "name or local directory [all-MiniLM-L6-v2, packaged].",
)
@click.option(
    "--deterministic",
    is_flag=True,
    help="Simulated clock: the same input gives byte-identical traces.",
)
@click.option("--trace-prefix", default="", help="Prefix for trace ids (keeps runs apart).")
@click.option(
    "--prompts",
    "prompts_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML file of prompt texts (a table per prompt name: text, optional version).",
)
@click.option(
    "--params",
    "params_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML file of parameter values (top_k = 12, ...); the rest keep their defaults.",
)
@click.option("--load", "load", is_flag=True, help="Load the traces into Neo4j.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@neo4j_options
def run_command(
    settings: Settings,
    system: str,
    data: Path | None,
    conversations: str | None,
    sessions: str | None,
    questions: int | None,
    out: Path,
    backend: str | None,
    retriever: str,
    embedding_model: str | None,
    deterministic: bool,
    trace_prefix: str,
    prompts_file: Path | None,
    params_file: Path | None,
    load: bool,
    as_json: bool,
) -> None:
    """Run SYSTEM over LoCoMo-format data and write one native trace per conversation."""
    convs = load_locomo(data or SAMPLE_PATH, parse_subset(conversations, sessions, questions))
    config = read_config(prompts_file, params_file)
    console = make_console(stderr=as_json)
    with Progress(console=console, transient=True) as progress:
        backend = backend or SYSTEMS[system].default_backend
        task = progress.add_task(f"{system} ({backend})", total=len(convs))
        report = run_system(
            system,
            convs,
            out,
            backend=backend,
            retriever=retriever,
            embedding_model=embedding_model,
            deterministic=deterministic,
            prefix=trace_prefix,
            prompts=config.prompts,
            params=config.params,
            progress=lambda _conv: progress.advance(task),
            settings=settings,
        )
    loaded = load_traces(report.traces, settings) if load else []
    if as_json:
        click.echo(
            strict_json(
                {
                    "system": system,
                    "traces": [str(p) for p in report.traces],
                    "accuracy": {
                        k: {"correct": c, "total": t} for k, (c, t) in report.accuracy().items()
                    },
                    "loaded": loaded,
                }
            )
        )
        return
    render_accuracy(console, report)
    for path in report.traces:
        console.print(f"trace: {path}")
    for trace_id in loaded:
        console.print(f"loaded: {trace_id}")
