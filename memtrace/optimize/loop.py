"""The optimization loop: attribute -> failure classes -> route -> propose -> accept -> record.

Each round re-attributes the incumbent's failed train cases, routes the failure classes to the
prompts or parameters the blamed operations read, lets a proposer try candidates on the train
split, and accepts the best one only if train accuracy rises and held-out accuracy (conversations
never used for feedback or selection) does not drop. Every proposed candidate, accepted or not,
is recorded in Neo4j (``LineageStore``) and in ``<out>/update_results.json``. An optional
*test* split is only reported: the incumbent's accuracy on it at the start and after each round
(``RoundSummary.test_after``), outside the budget and read by no decision.

Unguided mode (the baseline) skips attribution and lets the proposer move everything. Routed by
headroom (``route_by="headroom"``), each round also executes the what-if of the classes that have
a target (``memtrace.patterns.headroom``: repair, replay, count; replays charged to the budget)
and searches only what the classes with headroom read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from memtrace.errors import ConfigError, OutOfBudget
from memtrace.optimize.routing import (
    TUNABLE_PROMPTS,
    Mode,
    RouteBy,
    Routing,
    SearchRepair,
    route,
)
from memtrace.optimize.scoring import Evaluator, Score
from memtrace.optimize.store import LineageStore
from memtrace.patterns.classes import class_key
from memtrace.systems.config import SystemConfig, write_config
from memtrace.systems.params import RANGES
from memtrace.systems.registry import parameters_read

Trial = tuple[SystemConfig, Score]


class Feedback(Protocol):
    def classes(self, config: SystemConfig) -> pd.DataFrame: ...


@runtime_checkable
class HeadroomFeedback(Feedback, Protocol):
    def headroom(self, config: SystemConfig, classes: pd.DataFrame, keys: set[str]) -> pd.DataFrame:
        """The what-if rows (``HEADROOM_COLUMNS``) of the classes whose key is in ``keys``."""
        ...


class Proposer(Protocol):
    def __call__(
        self,
        incumbent: SystemConfig,
        targets: Sequence[str],
        routing: Routing | None,
        round_number: int,
    ) -> list[Trial]: ...


@dataclass(frozen=True)
class OptimizeOptions:
    system: str
    run_id: str
    mode: Mode = "parameters"
    guided: bool = True
    rounds: int = 3
    trials: int = 4  # candidates tried on the train split per round
    budget: int = 100  # system runs (one conversation replayed with its questions)
    seed: int = 0
    focus: int | None = None  # route to the largest N optimizable classes only (None = all)
    min_share: float = 0.0  # ... and only to classes holding this share of the failures
    max_cases: int = 60  # failed train cases attributed per round (a seeded sample)
    route_by: RouteBy = "cases"  # "headroom": by the executed what-if of each class
    # routed by headroom, the oracle of a repaired search: "same-size" puts the evidence in
    # the system's own number of results; "precise" keeps only the results holding it
    search_repair: SearchRepair = "same-size"

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.trials < 1 or self.budget < 1:
            raise ConfigError("rounds, trials and budget must be >= 1")


@dataclass
class ConfigCandidate:
    id: str
    round: int
    changes: dict[str, tuple[Any, Any]]
    train: float
    heldout: float | None
    accepted: bool
    reason: str
    classes: list[str] = field(default_factory=list)


@dataclass
class RoundSummary:
    round: int
    train_before: float
    heldout_before: float
    targets: list[str]
    classes: list[dict[str, Any]]
    trials: list[dict[str, Any]]
    candidate: ConfigCandidate | None
    train_after: float
    heldout_after: float
    budget_spent: int
    runs_made: int
    replays: int = 0  # what-if replays charged so far (part of budget_spent)
    test_after: float | None = None  # the incumbent on the report-only test split
    llm_calls: int = 0  # so far, sent (cache hits are free)
    tokens_in: int = 0
    tokens_out: int = 0


@dataclass
class OptimizeResult:
    run_id: str
    options: dict[str, Any]
    initial: dict[str, float]
    final: dict[str, float]
    rounds: list[RoundSummary]
    config: SystemConfig
    budget_spent: int
    runs_made: int
    stopped: str  # why the loop ended
    replays: int = 0  # what-if replays, one system run each, part of budget_spent

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "options": self.options,
            "initial": self.initial,
            "final": self.final,
            "changes": {k: list(v) for k, v in SystemConfig().diff(self.config).items()},
            "rounds": [asdict(r) for r in self.rounds],
            "budget_spent": self.budget_spent,
            "runs_made": self.runs_made,
            "replays": self.replays,
            "stopped": self.stopped,
        }


def accept(before: tuple[float, float], after: tuple[float, float]) -> tuple[bool, str]:
    """(train, held-out) accuracies: accepted only if train rises and held-out does not drop."""
    (train0, held0), (train1, held1) = before, after
    if train1 <= train0:
        return False, f"train accuracy did not rise ({train0:.4f} -> {train1:.4f})"
    if held1 < held0:
        return False, f"held-out accuracy dropped ({held0:.4f} -> {held1:.4f})"
    return True, f"train {train0:.4f} -> {train1:.4f}, held-out {held0:.4f} -> {held1:.4f}"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class Versions:
    """Version numbers per variable within one optimization run (version 1 = the base)."""

    def __init__(self, base: SystemConfig) -> None:
        self.latest = dict.fromkeys(base.values(), 1)
        self.current = dict(self.latest)

    def changes(
        self, diff: dict[str, tuple[Any, Any]], motivating: dict[str, list[str]]
    ) -> list[dict[str, Any]]:
        out = []
        for full_name, (_, new) in sorted(diff.items()):
            kind, name = full_name.split(":", 1)
            self.latest[full_name] += 1
            out.append(
                {
                    "kind": kind,
                    "name": name,
                    "version": self.latest[full_name],
                    "parent": self.current[full_name],
                    "value": _value(new),
                    "classes": motivating.get(full_name, []),
                }
            )
        return out

    def adopt(self, changes: list[dict[str, Any]]) -> None:
        for change in changes:
            self.current[f"{change['kind']}:{change['name']}"] = change["version"]


def movable(mode: Mode, system: str) -> tuple[str, ...]:
    """What an unguided optimizer moves: every parameter with a range that the system reads
    (another system's would only spend trials), or every tunable prompt."""
    if mode == "prompts":
        return TUNABLE_PROMPTS
    return tuple(name for name in parameters_read(system) if name in RANGES)


def _routing(feedback: Feedback, incumbent: SystemConfig, options: OptimizeOptions) -> Routing:
    found = feedback.classes(incumbent)
    by_count = route(found, options.mode)
    if options.route_by == "cases":
        return by_count
    if not isinstance(feedback, HeadroomFeedback):
        raise ConfigError("routing by headroom needs feedback that executes the what-if")
    # only classes with something to search are worth a replay: the rest get no trials anyway
    keys = {
        class_key(row)
        for row, routed in zip(found.to_dict("records"), by_count.classes, strict=True)
        if routed.targets
    }
    return route(found, options.mode, headroom=feedback.headroom(incumbent, found, keys))


def optimize(
    options: OptimizeOptions,
    evaluator: Evaluator,
    proposer: Proposer,
    out: Path,
    *,
    feedback: Feedback | None = None,
    store: LineageStore | None = None,
    base: SystemConfig | None = None,
    on_round: Callable[[RoundSummary], None] | None = None,
) -> OptimizeResult:
    """Run the rounds; ``feedback`` is required when ``options.guided``. Re-running with the
    same ``out`` resumes: cached evaluations and classes replay the history without runs."""
    if options.guided and feedback is None:
        raise ConfigError("guided optimization needs attribution feedback (a database)")
    _check_resume(out, options)
    incumbent = base or SystemConfig()
    versions = Versions(incumbent)
    run_id = options.run_id
    if store is not None:
        store.begin(
            run_id,
            {
                "system": options.system,
                "mode": options.mode,
                "guided": options.guided,
                "route_by": options.route_by if options.guided else "none",
                "seed": options.seed,
                "budget": options.budget,
            },
            [
                {"kind": k.split(":", 1)[0], "name": k.split(":", 1)[1], "value": _value(v)}
                for k, v in incumbent.values().items()
            ],
        )
    train = evaluator.score(incumbent, "train").accuracy
    held = evaluator.score(incumbent, "heldout").accuracy
    initial = {"train": train, "heldout": held} | _reported(evaluator, incumbent)
    rounds: list[RoundSummary] = []
    updates: dict[str, dict[str, Any]] = {}
    stopped = "rounds done"
    for number in range(1, options.rounds + 1):
        routing: Routing | None = None
        classes: list[dict[str, Any]] = []
        try:
            if options.guided:
                assert feedback is not None
                routing = _routing(feedback, incumbent, options)
                targets = routing.targets(options.focus, options.min_share)
                classes = [{**asdict(c), "case_ids": list(c.case_ids[:3])} for c in routing.classes]
                if store is not None:
                    store.classes(run_id, number, routing)
            else:
                targets = movable(options.mode, options.system)
        except OutOfBudget:
            stopped = "budget"
            break
        if not targets:
            stopped = (
                "no failure class with headroom: "
                + "; ".join(f"{c.key} {c.why_not}" for c in routing.classes)
                if routing is not None and routing.by == "headroom" and routing.classes
                else "no optimizable failure class"
            )
            break
        trials = proposer(incumbent, targets, routing, number)
        summary_trials = [
            {"changes": {k: v[1] for k, v in incumbent.diff(c).items()}, "train": s.accuracy}
            for c, s in trials
        ]
        candidate = None
        before = (train, held)
        if trials:
            # the best on train; on a tie the first (fewest trials spent to find it)
            best_config, best_score = max(trials, key=lambda t: t[1].accuracy)
            diff = incumbent.diff(best_config)
            heldout_score: float | None = None
            if best_score.accuracy > train and diff:
                try:
                    heldout_score = evaluator.score(best_config, "heldout").accuracy
                    accepted, reason = accept(before, (best_score.accuracy, heldout_score))
                except OutOfBudget:
                    accepted, reason = False, "no budget left to score the held-out split"
            else:
                accepted, reason = (
                    False,
                    (
                        f"no trial beat the incumbent on train ({train:.4f})"
                        if diff
                        else "the best trial is the incumbent"
                    ),
                )
            motivating = (
                {
                    name: sorted(cls.key for cls in routing.motivating(name.split(":", 1)[1]))
                    for name in diff
                }
                if routing
                else {}
            )
            candidate = ConfigCandidate(
                id=f"r{number}",
                round=number,
                changes=diff,
                train=best_score.accuracy,
                heldout=heldout_score,
                accepted=accepted,
                reason=reason,
                classes=sorted({k for keys in motivating.values() for k in keys}),
            )
            changes = versions.changes(diff, motivating)
            if store is not None and changes:
                store.candidate(
                    run_id,
                    {
                        "id": f"{run_id}/r{number}",
                        "round": number,
                        "score_train": candidate.train,
                        "score_heldout": candidate.heldout,
                        "accepted": accepted,
                        "reason": reason,
                    },
                    changes,
                )
            for change in changes:
                updates[f"{change['name']}@{change['version']}"] = {
                    "kind": change["kind"],
                    "value": change["value"],
                    "derived_from": f"{change['name']}@{change['parent']}",
                    "round": number,
                    "accepted": accepted,
                    "score_train": candidate.train,
                    "score_heldout": candidate.heldout,
                    "reason": reason,
                }
            if accepted:
                versions.adopt(changes)
                incumbent = best_config
                train, held = best_score.accuracy, heldout_score or held
        summary = RoundSummary(
            round=number,
            train_before=before[0],
            heldout_before=before[1],
            targets=list(targets),
            classes=classes,
            trials=summary_trials,
            candidate=candidate,
            train_after=train,
            heldout_after=held,
            budget_spent=evaluator.budget.spent,
            runs_made=evaluator.budget.runs_made,
            replays=evaluator.budget.replays,
            test_after=_reported(evaluator, incumbent).get("test"),
            llm_calls=evaluator.llm_usage().calls,
            tokens_in=evaluator.llm_usage().tokens_in,
            tokens_out=evaluator.llm_usage().tokens_out,
        )
        rounds.append(summary)
        _write(out / "rounds.json", [asdict(r) for r in rounds])
        _write(out / "update_results.json", updates)
        write_config(incumbent, out / "accepted")
        if on_round is not None:
            on_round(summary)
        if not evaluator.budget.affords(evaluator.cost("train") + evaluator.cost("heldout")):
            stopped = "budget"
            break
    result = OptimizeResult(
        run_id=run_id,
        options=asdict(options),
        initial=initial,
        final={"train": train, "heldout": held} | _reported(evaluator, incumbent),
        rounds=rounds,
        config=incumbent,
        budget_spent=evaluator.budget.spent,
        runs_made=evaluator.budget.runs_made,
        stopped=stopped,
        replays=evaluator.budget.replays,
    )
    write_config(incumbent, out / "accepted")
    _write(out / "update_results.json", updates)
    _write(out / "summary.json", result.as_dict())
    if store is not None:
        # the report-only test split, when there is one
        tested = {
            f"{when}_test": acc["test"]
            for when, acc in (("initial", initial), ("final", result.final))
            if "test" in acc
        }
        store.finish(
            run_id,
            {
                "initial_train": initial["train"],
                "initial_heldout": initial["heldout"],
                "final_train": train,
                "final_heldout": held,
                **tested,
                "budget_spent": evaluator.budget.spent,
                "replays": evaluator.budget.replays,
                "stopped": stopped,
                "rounds": len(rounds),
            },
        )
    return result


def _reported(evaluator: Evaluator, incumbent: SystemConfig) -> dict[str, float]:
    """``{"test": accuracy}`` when the evaluator has a test split (reported, never decided by)."""
    score = evaluator.report(incumbent)
    return {} if score is None else {"test": score.accuracy}


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def _check_resume(out: Path, options: OptimizeOptions) -> None:
    """A directory holds one run: resuming with other options would mix two runs' caches."""
    path = out / "options.json"
    wanted = asdict(options)
    if path.is_file():
        found = json.loads(path.read_text(encoding="utf-8"))
        found["budget"] = wanted["budget"]  # a resumed run may be given more (or less) budget
        defaults = asdict(OptimizeOptions(options.system, options.run_id))
        found = {**{k: v for k, v in defaults.items() if k not in found}, **found}
        if found != wanted:
            differ = sorted(k for k in wanted if found.get(k) != wanted[k])
            raise ConfigError(
                f"{out} holds an optimization run with other options ({', '.join(differ)}): "
                "use another --out to start a new run"
            )
        return
    _write(path, wanted)
