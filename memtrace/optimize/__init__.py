"""Attribution-guided optimization of a memory system's prompts and parameters.

The system is a plugin (``memtrace.optimize.plugin.OptimizableSystem``): memtrace's reference
systems (``memtrace.optimize.reference``) and a user's own alike. ``run_optimization`` is the
Python API: it builds the evaluator (system runs on a train and a held-out split of the
system's ids), the attribution feedback (Neo4j), the lineage store and the proposer, then runs
``loop.optimize``; one ``Budget`` of system runs is passed to each of them that spends it.
``optimize_system`` is what the CLI calls: it picks the proposer for the mode from
``PROPOSERS`` (parameters: Optuna; prompts: GEPA with the configured endpoint as reflection
model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memtrace.attribution.judges import Judge, OfflineJudge
from memtrace.db import Database
from memtrace.errors import ConfigError, OutOfBudget
from memtrace.llm import LLMClient
from memtrace.optimize.feedback import GraphFeedback, ReplayerFactory
from memtrace.optimize.loop import (
    OptimizeOptions,
    OptimizeResult,
    Proposer,
    RoundSummary,
    Trial,
    accept,
    optimize,
)
from memtrace.optimize.parameters import propose_parameters
from memtrace.optimize.plugin import Configuration, OptimizableSystem, check_ids
from memtrace.optimize.routing import Mode, Routing, route
from memtrace.optimize.scoring import Budget, Evaluator, Score
from memtrace.optimize.store import LineageStore
from memtrace.settings import Settings

__all__ = [
    "PROPOSERS",
    "OptimizeOptions",
    "OptimizeResult",
    "RoundSummary",
    "accept",
    "optimize_system",
    "parameter_proposer",
    "prompt_proposer",
    "route",
    "run_optimization",
]

# (evaluator, feedback, options, the budget its trials are charged to) -> a proposer
ProposerFactory = Callable[[Evaluator, GraphFeedback | None, OptimizeOptions, Budget], Proposer]


def parameter_proposer(
    evaluator: Evaluator, feedback: GraphFeedback | None, options: OptimizeOptions, budget: Budget
) -> Proposer:
    """Optuna over the routed parameters; leaves the budget for the held-out check."""

    def evaluate(config: Configuration) -> Score:
        if not budget.affords(evaluator.cost("train") + evaluator.cost("heldout")):
            raise OutOfBudget("the rest of the budget is kept for the held-out check")
        return evaluator.score(config, "train")

    def propose(
        incumbent: Configuration,
        targets: Sequence[str],
        routing: Routing | None,
        round_number: int,
    ) -> list[Trial]:
        known = incumbent.knobs.parameters
        searchable = [t for t in targets if t in known and known[t].searchable]
        seed = options.seed * 1000 + round_number
        return propose_parameters(incumbent, searchable, evaluate, options.trials, seed)

    return propose


def prompt_proposer(reflection: LLMClient) -> ProposerFactory:
    """GEPA over the routed prompts with ``reflection`` as the reflection model; ``trials``
    full train evaluations' worth of metric calls per round."""

    def factory(
        evaluator: Evaluator,
        feedback: GraphFeedback | None,
        options: OptimizeOptions,
        budget: Budget,
    ) -> Proposer:
        from memtrace.optimize.gepa_adapter import MemtraceAdapter, propose_prompts

        def propose(
            incumbent: Configuration,
            targets: Sequence[str],
            routing: Routing | None,
            round_number: int,
        ) -> list[Trial]:
            blames = feedback.blames(incumbent) if feedback is not None and routing else {}
            adapter = MemtraceAdapter(
                evaluator, incumbent, reflection, budget=budget, routing=routing, blames=blames
            )
            cases = len(evaluator.cases("train"))
            return propose_prompts(
                adapter,
                targets,
                metric_calls=options.trials * cases,
                reserve=evaluator.cost("heldout"),
                seed=options.seed * 1000 + round_number,
            )

        return propose

    return factory


def _prompts_mode(settings: Settings) -> ProposerFactory:
    if not settings.llm.base_url:
        raise ConfigError("the prompt mode needs an LLM endpoint: set OPENAI_BASE_URL")
    return prompt_proposer(LLMClient.from_settings(settings))


# The proposers by mode. ``parameters``: Optuna (TPE) over the routed parameters; ``prompts``:
# GEPA over the routed prompts, the reflection model on the configured OpenAI-compatible
# endpoint.
PROPOSERS: dict[Mode, Callable[[Settings], ProposerFactory]] = {
    "parameters": lambda _settings: parameter_proposer,
    "prompts": _prompts_mode,
}


def run_optimization(
    options: OptimizeOptions,
    system: OptimizableSystem,
    train: Sequence[str],
    heldout: Sequence[str],
    out: Path,
    *,
    db: Database | None,
    judge: Judge | None = None,
    proposer: ProposerFactory = parameter_proposer,
    base: Configuration | None = None,
    on_round: Callable[[RoundSummary], None] | None = None,
    classes_cache: Path | None = None,
    replayer: ReplayerFactory | None = None,
    test: Sequence[str] = (),
    settings: Settings | None = None,
    replayer_spec: str | None = None,
) -> OptimizeResult:
    """Optimize ``system`` on its ids ``train``, accepting on ``heldout``; writes to ``out``.
    ``test`` (optional) is only reported: the incumbent's accuracy on it after each round,
    outside the budget, read by no decision. Routed by headroom, the what-if replays go
    through ``replayer`` (default: the replay engine, or the user's replayer ``replayer_spec``
    / the one registered for the system, over the traced train files). ``settings``: for
    replays of a system that calls an endpoint itself (mem0-lib)."""
    splits = {"train": list(train), "heldout": list(heldout), "test": list(test)}
    check_ids(system, splits)
    if not train or not heldout:
        raise ConfigError("optimization needs train and held-out ids")
    # one budget, passed to everything that spends it: the evaluator's runs, the attribution
    # feedback's cached classes and what-if replays, the proposer's trials, the loop's checks
    budget = Budget(options.budget)
    evaluator = Evaluator(system, splits, budget, out / "evaluations.jsonl")
    feedback = None
    if options.guided and db is not None:
        feedback = GraphFeedback(
            db,
            judge or OfflineJudge(),
            evaluator,
            out,
            options.run_id,
            budget=budget,
            max_cases=options.max_cases,
            seed=options.seed,
            cache=classes_cache,
            replayer=replayer,
            precise_search=options.search_repair == "precise",
            settings=settings,
            replayer_spec=replayer_spec,
        )
    return optimize(
        options,
        evaluator,
        proposer(evaluator, feedback, options, budget),
        out,
        budget=budget,
        feedback=feedback,
        store=LineageStore(db) if db is not None else None,
        base=base,
        on_round=on_round,
    )


def optimize_system(
    options: OptimizeOptions,
    settings: Settings,
    system: OptimizableSystem,
    train: Sequence[str],
    heldout: Sequence[str],
    out: Path,
    db: Database,
    *,
    on_round: Callable[[RoundSummary], None] | None = None,
    test: Sequence[str] = (),
    replayer_spec: str | None = None,
) -> OptimizeResult:
    """The CLI's entry: the proposer from ``PROPOSERS[options.mode]``."""
    return run_optimization(
        options,
        system,
        train,
        heldout,
        out,
        db=db,
        proposer=PROPOSERS[options.mode](settings),
        on_round=on_round,
        test=test,
        settings=settings,
        replayer_spec=replayer_spec,
    )
