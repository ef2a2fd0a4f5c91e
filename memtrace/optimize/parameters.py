"""Propose parameter values with Optuna (TPE): a standard, seeded, ask-and-tell optimizer.

Only the routed parameters move (the rest keep the incumbent's values), each within the range
its knob declares (``ParameterKnob.low``/``high``; an int knob steps by 1). With the same seed
and the same scores Optuna asks the same questions again, which is what makes a resumed run
replay its cached history exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memtrace.errors import OutOfBudget
from memtrace.optimize.plugin import Configuration
from memtrace.optimize.scoring import Score

Trial = tuple[Configuration, Score]


def propose_parameters(
    incumbent: Configuration,
    targets: Sequence[str],
    evaluate: Callable[[Configuration], Score],
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
            knob = incumbent.knobs.parameters[name]
            assert knob.low is not None and knob.high is not None  # routed: searchable
            if knob.integer:
                values[name] = trial.suggest_int(name, int(knob.low), int(knob.high))
            else:
                values[name] = round(trial.suggest_float(name, knob.low, knob.high), 3)
        config = incumbent.with_params(**values)
        try:
            score = evaluate(config)
        except OutOfBudget:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            break
        study.tell(trial, score.accuracy)
        out.append((config, score))
    return out
