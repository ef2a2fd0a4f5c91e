"""`memtrace optimize` (also `memtrace-optimize`): attribution-guided optimization of a system."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from memtrace.cli.load import ErrorReportingCommand
from memtrace.cli.options import neo4j_options
from memtrace.cli.output import make_console
from memtrace.cli.run import parse_subset
from memtrace.optimize.routing import MODE_BY_NAME
from memtrace.settings import Settings
from memtrace.systems.registry import SYSTEMS

if TYPE_CHECKING:
    from memtrace.optimize.plugin import OptimizableSystem
    from memtrace.systems.locomo import Conversation

# options that describe memtrace's own systems' data and start; a plugin reads its own
REFERENCE_ONLY = ("data", "sessions", "questions", "prompts_file", "params_file")


def _ids(text: str, what: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    if not parts:
        raise click.BadParameter(f"expected comma-separated ids for {what}")
    return parts


@click.command("optimize", cls=ErrorReportingCommand)
@neo4j_options
@click.argument("system", required=False)
@click.option(
    "--system",
    "system_spec",
    help="Your own system: a factory module:attr returning an OptimizableSystem "
    "(docs/optimize.md); instead of SYSTEM.",
)
@click.option(
    "--replayer",
    help="Routed by headroom, your system's replayer factory module:attr (default: the one "
    "registered for its name in memtrace.replayers).",
)
@click.option(
    "--data",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="memtrace's systems: LoCoMo-format JSON [default: the generated sample shipped with "
    "memtrace].",
)
@click.option(
    "--train", required=True, help="Ids (LoCoMo: conversation numbers) for feedback, e.g. 1,2,3."
)
@click.option("--heldout", required=True, help="Ids for acceptance only, e.g. 4,5,6.")
@click.option(
    "--test",
    help="Ids only reported on (the incumbent after each round, outside the budget, read by "
    "no decision), e.g. 7,8,9,10.",
)
@click.option("--sessions", help="Comma-separated session numbers to replay.")
@click.option("--questions", type=int, help="The first N questions per conversation.")
@click.option(
    "--mode",
    type=click.Choice(list(MODE_BY_NAME)),
    default="parameters",
    show_default=True,
    help="parameters: Optuna, offline; prompts: GEPA with a reflection model (needs an LLM "
    "endpoint, OPENAI_BASE_URL).",
)
@click.option("--unguided", is_flag=True, help="Baseline: no attribution, move everything.")
@click.option(
    "--baseline",
    type=click.Choice(["answer-only"]),
    help="The paper's baseline: no attribution, every failure routed to the answer step's "
    "knobs (as MemTrace's --disable-memtrace); same budget and seed.",
)
@click.option(
    "--route-by",
    type=click.Choice(["cases", "headroom"]),
    default="cases",
    show_default=True,
    help="Rank failure classes by their cases, or by headroom: replay each class with its "
    "blamed operations repaired and route only to classes whose repair rescues answers "
    "(replays count against --budget, one system run per conversation re-run).",
)
@click.option(
    "--search-repair",
    type=click.Choice(["same-size", "precise"]),
    default="same-size",
    show_default=True,
    help="Routed by headroom, what a repaired search returns: its own number of results with "
    "the evidence among them, or only the results holding the evidence (no distractors).",
)
@click.option("--rounds", type=int, default=3, show_default=True)
@click.option("--trials", type=int, default=6, show_default=True, help="Candidates per round.")
@click.option(
    "--budget", type=int, default=100, show_default=True, help="System runs (conversations)."
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--focus", type=int, help="Only the largest N optimizable failure classes.")
@click.option(
    "--min-share",
    type=float,
    default=0.0,
    show_default=True,
    help="Only failure classes holding at least this share of the failures.",
)
@click.option(
    "--max-cases", type=int, default=60, show_default=True, help="Failed cases per round."
)
@click.option(
    "--prompts",
    "prompts_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Start from these prompts (TOML, as `memtrace run --prompts`).",
)
@click.option(
    "--params",
    "params_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Start from these parameters (TOML, as `memtrace run --params`).",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Run directory; running the same command again resumes the run.",
)
@click.option("--run-id", help="Optimization run id [default: opt-SYSTEM-MODE-sSEED].")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def optimize_command(settings: Settings, **args: Any) -> None:
    """Optimize SYSTEM's prompts or parameters where attribution blames it.

    SYSTEM: one of memtrace's (evermemos, long-context, mem0, mem0-lib, rag) or a system
    registered in the entry point group memtrace.systems; or --system module:attr.
    Accepts a candidate only if train accuracy rises and held-out accuracy does not drop.
    Writes OUT/accepted/ (the system's own configuration files; memtrace's systems:
    {prompts,params}.toml), OUT/update_results.json, OUT/rounds.json, OUT/summary.json and
    OUT/summary.txt, and the lineage to Neo4j (queries in memtrace/cypher/optimizer/).
    """
    _run(settings, **args)


def _system(
    settings: Settings, name: str | None, spec: str | None, mode: str, given: dict[str, Any]
) -> tuple[OptimizableSystem, str]:
    """The system to optimize and its name: memtrace's own on LoCoMo data, else a plugin."""
    from memtrace.optimize.plugin import load_spec, make_plugin, registered
    from memtrace.optimize.reference import reference_system
    from memtrace.systems.config import read_config

    if (name is None) == (spec is None):
        raise click.UsageError("name one system: SYSTEM or --system module:attr")
    if name in SYSTEMS:
        return (
            reference_system(
                name,
                mode,
                settings,
                _conversations(given),
                read_config(given["prompts_file"], given["params_file"]),
            ),
            name,
        )
    for option in REFERENCE_ONLY:
        if given[option] is not None:
            flag = "--" + option.removesuffix("_file").replace("_", "-")
            raise click.UsageError(f"{flag} is for memtrace's own systems: yours reads its data")
    if spec is not None:
        return make_plugin(load_spec(spec), settings, spec), spec.rpartition(":")[2]
    assert name is not None
    factory = registered(name)
    if factory is None:
        raise click.UsageError(
            f"unknown system {name!r}: memtrace's are {', '.join(sorted(SYSTEMS))}; for your "
            "own pass --system module:attr or register it in the entry point group "
            "memtrace.systems (docs/optimize.md)"
        )
    return make_plugin(factory, settings, name), name


def _conversations(given: dict[str, Any]) -> list[Conversation]:
    """The LoCoMo conversations the splits name (reference systems)."""
    from memtrace.systems.locomo import SAMPLE_PATH, load_locomo

    numbers = [given["train"], given["heldout"], given["test"] or ""]
    wanted = ",".join(i for text in numbers for i in text.split(",") if i.strip())
    subset = parse_subset(wanted, given["sessions"], given["questions"])
    return load_locomo(given["data"] or SAMPLE_PATH, subset)


def _run(
    settings: Settings,
    system: str | None,
    system_spec: str | None,
    replayer: str | None,
    train: str,
    heldout: str,
    test: str | None,
    mode: str,
    unguided: bool,
    baseline: str | None,
    route_by: str,
    search_repair: str,
    rounds: int,
    trials: int,
    budget: int,
    seed: int,
    focus: int | None,
    min_share: float,
    max_cases: int,
    out: Path,
    run_id: str | None,
    as_json: bool,
    **given: Any,
) -> None:
    from memtrace.db import connect
    from memtrace.optimize import OptimizeOptions, RoundSummary, optimize_system

    if unguided and baseline:
        raise click.UsageError("--unguided and --baseline are two baselines: choose one")
    given |= {"train": train, "heldout": heldout, "test": test}
    plugin, name = _system(settings, system, system_spec, mode, given)
    train_ids, held_ids = _ids(train, "--train"), _ids(heldout, "--heldout")
    test_ids = _ids(test, "--test") if test else ()
    options = OptimizeOptions(
        plugin.name,
        run_id or f"opt-{name}-{mode}-s{seed}",
        mode=MODE_BY_NAME[mode],
        guided=not (unguided or baseline),
        rounds=rounds,
        trials=trials,
        budget=budget,
        seed=seed,
        focus=focus,
        min_share=min_share,
        max_cases=max_cases,
        route_by="headroom" if route_by == "headroom" else "cases",
        search_repair="precise" if search_repair == "precise" else "same-size",
        baseline="answer-only" if baseline else "none",
    )
    console = make_console(stderr=as_json)
    with (
        connect(settings) as db,
        Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), console=console, transient=True
        ) as progress,
    ):
        task = progress.add_task(f"{plugin.name}: {mode}", total=rounds)

        def on_round(summary: RoundSummary) -> None:
            progress.advance(task)
            verdict = summary.candidate.reason if summary.candidate else "no candidate"
            progress.console.print(f"round {summary.round}: {verdict}")
            for cls in summary.classes:  # routed by headroom: why a class got no trials
                if str(cls.get("why_not", "")).startswith("no trials"):
                    progress.console.print(f"  {cls['system']}/{cls['op_name']}: {cls['why_not']}")

        result = optimize_system(
            options,
            settings,
            plugin,
            train_ids,
            held_ids,
            out,
            db,
            on_round=on_round,
            test=test_ids,
            replayer_spec=replayer,
        )
    if as_json:
        click.echo(json.dumps(result.as_dict(), allow_nan=False))
        return
    table = Table(title=f"{result.run_id}: accuracy ({result.stopped})")
    for column in ("split", "initial", "final"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split in result.final:  # train, heldout and, when given, test
        table.add_row(split, f"{result.initial[split]:.1%}", f"{result.final[split]:.1%}")
    console.print(table)
    console.print(
        f"budget {result.budget_spent} system runs ({result.replays} of them what-if replays; "
        f"{result.runs_made} made by this process); "
        f"accepted configuration: {out / 'accepted'}"
    )
    console.print(result.summary(), soft_wrap=True)
