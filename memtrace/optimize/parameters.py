"""Propose parameter values with Optuna (TPE): a standard, seeded, ask-and-tell optimizer.

Only the routed parameters move (the rest keep the incumbent's values), each within the range
declared next to ``Params``. With the same seed and the same scores Optuna asks the same
questions again, which is what makes a resumed run replay its cached history exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memtrace.errors import OutOfBudget
from memtrace.optimize.scoring import Score
from memtrace.systems.config import SystemConfig
from memtrace.systems.params import RANGES

Trial = tuple[SystemConfig, Score]


def propose_parameters(
    incumbent: SystemConfig,
    targets: Sequence[str],
    evaluate: Callable[[SystemConfig], Score],
    trials: int,
    seed: int,
) -> list[Trial]:
    """Up to ``trials`` evaluated candidates (fewer when the budget runs out)."""
    import optuna  # ~1 s to import: only when optimizing

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(1, trials // 2))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    out: list[Trial] = []
    for _ in range(trials):
        trial = study.ask()
        values: dict[str, int | float] = {}
        for name in targets:
            bounds = RANGES[name]
            if bounds.integer:
                values[name] = trial.suggest_int(name, int(bounds.low), int(bounds.high))
            else:
                values[name] = round(trial.suggest_float(name, bounds.low, bounds.high), 3)
        config = incumbent.with_params(**values)
        try:
            score = evaluate(config)
        except OutOfBudget:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            break
        study.tell(trial, score.accuracy)
        out.append((config, score))
    return out
