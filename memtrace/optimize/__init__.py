"""Attribution-guided optimization of a reference system's prompts and parameters.

``run_optimization`` is the Python API the ``memtrace optimize`` command wraps: it builds the
evaluator (system runs on a train and a held-out split), the attribution feedback (Neo4j), the
lineage store and the proposer for the mode, then runs ``loop.optimize``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memtrace.attribution.judges import Judge, OfflineJudge
from memtrace.db import Database
from memtrace.optimize.feedback import GraphFeedback
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
from memtrace.optimize.routing import Routing, route
from memtrace.optimize.scoring import Budget, Evaluator, OutOfBudget, Score
from memtrace.optimize.store import LineageStore
from memtrace.systems.config import SystemConfig
from memtrace.systems.core import Backend
from memtrace.systems.locomo import Conversation
from memtrace.systems.params import RANGES

__all__ = [
    "OptimizeOptions",
    "OptimizeResult",
    "RoundSummary",
    "accept",
    "parameter_proposer",
    "route",
    "run_optimization",
]


def parameter_proposer(evaluator: Evaluator, options: OptimizeOptions) -> Proposer:
    """Optuna over the routed parameters; leaves the budget for the held-out check."""

    def evaluate(config: SystemConfig) -> Score:
        if not evaluator.budget.affords(evaluator.cost("train") + evaluator.cost("heldout")):
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


def run_optimization(
    options: OptimizeOptions,
    train: Sequence[Conversation],
    heldout: Sequence[Conversation],
    out: Path,
    *,
    backend: Backend,
    db: Database | None,
    judge: Judge | None = None,
    proposer: Proposer | None = None,
    base: SystemConfig | None = None,
    on_round: Callable[[RoundSummary], None] | None = None,
) -> OptimizeResult:
    """Optimize ``options.system`` on ``train``, accepting on ``heldout``; writes to ``out``."""
    overlap = {c.number for c in train} & {c.number for c in heldout}
    if overlap:
        from memtrace.errors import ConfigError

        raise ConfigError(f"conversations {sorted(overlap)} are in both train and held-out")
    evaluator = Evaluator(
        options.system,
        backend,
        {"train": list(train), "heldout": list(heldout)},
        Budget(options.budget),
        out / "evaluations.jsonl",
    )
    feedback = None
    if options.guided and db is not None:
        feedback = GraphFeedback(
            db,
            judge or OfflineJudge(),
            evaluator,
            out,
            options.run_id,
            max_cases=options.max_cases,
            seed=options.seed,
        )
    if proposer is None:
        if options.mode != "parameters":
            from memtrace.errors import ConfigError

            raise ConfigError("the prompt mode needs a prompt proposer (an LLM endpoint)")
        proposer = parameter_proposer(evaluator, options)
    store = LineageStore(db) if db is not None else None
    return optimize(
        options,
        evaluator,
        proposer,
        out,
        feedback=feedback,
        store=store,
        base=base,
        on_round=on_round,
    )
