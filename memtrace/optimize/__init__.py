"""Attribution-guided optimization of a reference system's prompts and parameters.

``run_optimization`` is the Python API: it builds the evaluator (system runs on a train and a
held-out split), the attribution feedback (Neo4j), the lineage store and the proposer, then runs
``loop.optimize``; one ``Budget`` of system runs is passed to each of them that spends it.
``optimize_system`` is what the CLI calls: it picks backend and proposer for the mode from
``PROPOSERS`` (parameters: offline backend + Optuna; prompts: the OpenAI-compatible backend +
GEPA with the same endpoint as reflection model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
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
from memtrace.optimize.routing import Mode, Routing, route
from memtrace.optimize.scoring import Budget, Evaluator, Score
from memtrace.optimize.store import LineageStore
from memtrace.settings import Settings
from memtrace.systems.config import SystemConfig
from memtrace.systems.core import Backend
from memtrace.systems.locomo import Conversation
from memtrace.systems.params import RANGES

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

    def evaluate(config: SystemConfig) -> Score:
        if not budget.affords(evaluator.cost("train") + evaluator.cost("heldout")):
            raise OutOfBudget("the rest of the budget is kept for the held-out check")
        return evaluator.score(config, "train")

    def propose(
        incumbent: SystemConfig,
        targets: Sequence[str],
        routing: Routing | None,
        round_number: int,
    ) -> list[Trial]:
        searchable = [t for t in targets if t in RANGES]
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
            incumbent: SystemConfig,
            targets: Sequence[str],
            routing: Routing | None,
            round_number: int,
        ) -> list[Trial]:
            blames = feedback.blames(incumbent) if feedback is not None and routing else {}
            adapter = MemtraceAdapter(
                evaluator, incumbent, reflection, budget=budget, routing=routing, blames=blames
            )
            cases = sum(len(c.questions) for c in evaluator.splits["train"])
            return propose_prompts(
                adapter,
                targets,
                metric_calls=options.trials * cases,
                reserve=evaluator.cost("heldout"),
                seed=options.seed * 1000 + round_number,
            )

        return propose

    return factory


def _parameters_mode(settings: Settings) -> tuple[Backend, ProposerFactory]:
    from memtrace.systems.offline import OfflineBackend

    return OfflineBackend(), parameter_proposer


def _prompts_mode(settings: Settings) -> tuple[Backend, ProposerFactory]:
    if not settings.llm.base_url:
        raise ConfigError("the prompt mode needs an LLM endpoint: set OPENAI_BASE_URL")
    from memtrace.systems.openai_backend import OpenAIBackend

    client = LLMClient.from_settings(settings)
    return OpenAIBackend(client), prompt_proposer(client)


# The optimizers by mode: the system's backend and the proposer. ``parameters``: Optuna (TPE)
# over the routed parameters, offline; ``prompts``: GEPA over the routed prompts, the system
# and the reflection model on the configured OpenAI-compatible endpoint.
PROPOSERS: dict[Mode, Callable[[Settings], tuple[Backend, ProposerFactory]]] = {
    "parameters": _parameters_mode,
    "prompts": _prompts_mode,
}


def run_optimization(
    options: OptimizeOptions,
    train: Sequence[Conversation],
    heldout: Sequence[Conversation],
    out: Path,
    *,
    backend: Backend,
    db: Database | None,
    judge: Judge | None = None,
    proposer: ProposerFactory = parameter_proposer,
    base: SystemConfig | None = None,
    on_round: Callable[[RoundSummary], None] | None = None,
    classes_cache: Path | None = None,
    replayer: ReplayerFactory | None = None,
    test: Sequence[Conversation] = (),
    settings: Settings | None = None,
) -> OptimizeResult:
    """Optimize ``options.system`` on ``train``, accepting on ``heldout``; writes to ``out``.
    ``test`` (optional) is only reported: the incumbent's accuracy on it after each round,
    outside the budget, read by no decision. Routed by headroom, the what-if replays go
    through ``replayer`` (default: the replay engine over the traced train files).
    ``settings``: for a system that calls an endpoint itself (mem0-lib)."""
    splits: dict[str, Sequence[Conversation]] = {
        "train": list(train),
        "heldout": list(heldout),
        "test": list(test),
    }
    for (one, first), (other, second) in combinations(splits.items(), 2):
        overlap = {c.number for c in first} & {c.number for c in second}
        if overlap:
            raise ConfigError(f"conversations {sorted(overlap)} are in both {one} and {other}")
    if not train or not heldout:
        raise ConfigError("optimization needs train and held-out conversations")
    # one budget, passed to everything that spends it: the evaluator's runs, the attribution
    # feedback's cached classes and what-if replays, the proposer's trials, the loop's checks
    budget = Budget(options.budget)
    evaluator = Evaluator(
        options.system,
        backend,
        splits,
        budget,
        out / "evaluations.jsonl",
        settings,
    )
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
    train: Sequence[Conversation],
    heldout: Sequence[Conversation],
    out: Path,
    db: Database,
    *,
    base: SystemConfig | None = None,
    on_round: Callable[[RoundSummary], None] | None = None,
    test: Sequence[Conversation] = (),
) -> OptimizeResult:
    """The CLI's entry: backend and proposer from ``PROPOSERS[options.mode]``."""
    backend, proposer = PROPOSERS[options.mode](settings)
    return run_optimization(
        options,
        train,
        heldout,
        out,
        backend=backend,
        db=db,
        proposer=proposer,
        base=base,
        on_round=on_round,
        test=test,
        settings=settings,
    )
