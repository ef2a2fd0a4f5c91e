"""The optimization loop: attribute -> failure classes -> route -> propose -> accept -> record.

Each round re-attributes the incumbent's failed train cases, routes the failure classes to the
prompts or parameters the blamed operations read, lets a proposer try candidates on the train
split, and accepts the best one only if train accuracy rises and held-out accuracy (conversations
never used for feedback or selection) does not drop. Every proposed candidate, accepted or not,
is recorded in Neo4j (``LineageStore``) and in ``<out>/update_results.json``. An optional
*test* split is only reported: the incumbent's accuracy on it at the start and after each round
(``RoundSummary.test_after``), outside the budget and read by no decision.

Two baselines skip attribution, with the same proposer, budget and seeds: unguided
(``guided=False``) moves every knob the mode can move; answer-only (``baseline="answer-only"``,
the paper's ablation, as MemTrace's ``--disable-memtrace``) routes every failure to the answer
step's knobs. The system is a plugin (``memtrace.optimize.plugin``): the loop reads its knobs
and writes the accepted configuration through it, whichever system it is. Routed by
headroom (``route_by="headroom"``), each round also executes the what-if of the classes that have
a target (``memtrace.patterns.headroom``: repair, replay, count; replays charged to the budget)
and searches only what the classes with headroom read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import pandas as pd

from memtrace.errors import ConfigError, OutOfBudget
from memtrace.optimize.plugin import Configuration, knobs_of, read_in_traces
from memtrace.optimize.routing import (
    Mode,
    RouteBy,
    Routing,
    SearchRepair,
    route,
)
from memtrace.optimize.scoring import Budget, Evaluator, Score
from memtrace.optimize.store import LineageStore
from memtrace.patterns.classes import class_key

Trial = tuple[Configuration, Score]
Baseline = Literal["none", "answer-only"]


class Feedback(Protocol):
    def classes(self, config: Configuration) -> pd.DataFrame: ...


@runtime_checkable
class HeadroomFeedback(Feedback, Protocol):
    def headroom(
        self, config: Configuration, classes: pd.DataFrame, keys: set[str]
    ) -> pd.DataFrame:
        """The what-if rows (``HEADROOM_COLUMNS``) of the classes whose key is in ``keys``."""
        ...


class Proposer(Protocol):
    def __call__(
        self,
        incumbent: Configuration,
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
    # "answer-only": the paper's baseline, every failure routed to the answer step's knobs
    baseline: Baseline = "none"

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.trials < 1 or self.budget < 1:
            raise ConfigError("rounds, trials and budget must be >= 1")
        if self.baseline != "none" and self.guided:
            raise ConfigError(f"the {self.baseline} baseline is not guided (guided=False)")

    @property
    def variant(self) -> str:
        """guided, answer-only or unguided."""
        return "guided" if self.guided else "unguided" if self.baseline == "none" else "answer-only"


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
    config: Configuration
    base: Configuration
    budget_spent: int
    runs_made: int
    stopped: str  # why the loop ended
    replays: int = 0  # what-if replays, one system run each, part of budget_spent

    def summary(self) -> str:
        """One line: what changed and what it bought."""
        changes = self.base.diff(self.config)
        named = ", ".join(_change(name, old, new) for name, (old, new) in sorted(changes.items()))
        bought = ", ".join(
            f"{split} {self.initial[split]:.1%} -> {self.final[split]:.1%}" for split in self.final
        )
        what = f"changed {named}" if changes else "accepted no change"
        return f"{self.run_id}: {what}; {bought} ({self.budget_spent} system runs)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "options": self.options,
            "initial": self.initial,
            "final": self.final,
            "changes": {k: list(v) for k, v in self.base.diff(self.config).items()},
            "summary": self.summary(),
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


def _change(name: str, old: Any, new: Any) -> str:
    """One change for the summary line: a prompt by its length, a parameter by its values."""
    if isinstance(new, str):
        return f"{name} rewritten ({len(str(old).split())} -> {len(new.split())} words)"
    return f"{name} {old} -> {new}"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class Versions:
    """Version numbers per variable within one optimization run (version 1 = the base)."""

    def __init__(self, base: Configuration) -> None:
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


def baseline_targets(
    options: OptimizeOptions, evaluator: Evaluator, config: Configuration, out: Path
) -> tuple[str, ...]:
    """What a baseline moves: unguided, every knob the mode can move (searchable parameters,
    tunable prompts); answer-only, those the answer step reads: as the system declares them,
    else as one traced train run shows (charged to the budget like any run)."""
    knobs, mode = config.knobs, options.mode
    if options.baseline != "answer-only":
        return knobs.movable(mode)
    declared = knobs.answer(mode)
    if declared:
        return declared
    prefix = f"{options.run_id}-answer-step-"
    run = evaluator.traced(config, "train", out / "traces" / "answer-step", prefix)
    category = "prompt" if mode == "prompts" else "parameter"
    read = read_in_traces(run.traces.values(), knobs.answer_op, category)
    return tuple(name for name in knobs.movable(mode) if name in read)


def _routing(feedback: Feedback, incumbent: Configuration, options: OptimizeOptions) -> Routing:
    found = feedback.classes(incumbent)
    knobs = incumbent.knobs
    answer = knobs.answer("prompts")
    # to what this system's optimizer may move: its movable knobs, and what each op reads
    routed = partial(
        route,
        mode=options.mode,
        parameters=knobs.movable("parameters"),
        prompts=knobs.movable("prompts"),
        readers=knobs.readers(options.mode),
    )
    by_count = routed(found)
    # a stale-memory class goes where its replay shows (routing.py), also routed by cases
    stale = {
        class_key(row)
        for row in found.to_dict("records")
        if row.get("failure_mode") == "stale-memory" and options.mode == "prompts"
    }
    if options.route_by == "cases":
        if not stale or not isinstance(feedback, HeadroomFeedback):
            return by_count
        replayed = feedback.headroom(incumbent, found, stale)
        return routed(found, answer_prompts=answer, stale=replayed)
    if not isinstance(feedback, HeadroomFeedback):
        raise ConfigError("routing by headroom needs feedback that executes the what-if")
    # only classes with something to search are worth a replay: the rest get no trials anyway
    keys = {
        class_key(row)
        for row, routed_class in zip(found.to_dict("records"), by_count.classes, strict=True)
        if routed_class.targets
    }
    headroom = feedback.headroom(incumbent, found, keys | stale)
    return routed(found, headroom=headroom, answer_prompts=answer, stale=headroom)


@dataclass
class Incumbent:
    """The loop's state between rounds: the configuration, its accuracies and the versions of
    its variables."""

    config: Configuration
    train: float
    held: float
    versions: Versions


@dataclass
class RoundOutcome:
    """One round as it happened: its summary, how it routed, the versions its candidate made."""

    summary: RoundSummary
    routing: Routing | None
    changes: list[dict[str, Any]]


def run_round(
    number: int,
    state: Incumbent,
    options: OptimizeOptions,
    evaluator: Evaluator,
    budget: Budget,
    proposer: Proposer,
    feedback: Feedback | None,
    baseline: Sequence[str] = (),
) -> RoundOutcome | str:
    """One round, writing nothing: attribute and route (guided) or move the ``baseline``'s
    targets, propose, score the best trial on the held-out split, accept or reject it (an
    accepted one becomes ``state``). Returns the round, or why the loop stops before it (no
    budget, no target)."""
    routing: Routing | None = None
    classes: list[dict[str, Any]] = []
    try:
        if options.guided:
            assert feedback is not None
            routing = _routing(feedback, state.config, options)
            targets = routing.targets(options.focus, options.min_share)
            classes = [{**asdict(c), "case_ids": list(c.case_ids[:3])} for c in routing.classes]
        else:
            targets = tuple(baseline)
    except OutOfBudget:
        return "budget"
    if not targets:
        if routing is not None and routing.by == "headroom" and routing.classes:
            return "no failure class with headroom: " + "; ".join(
                f"{c.key} {c.why_not}" for c in routing.classes
            )
        return "no optimizable failure class"
    incumbent = state.config
    before = (state.train, state.held)
    trials = proposer(incumbent, targets, routing, number)
    candidate, changes = None, []
    if trials:
        candidate, best = _candidate(number, state, trials, routing, evaluator)
        changes = state.versions.changes(candidate.changes, _motivating(candidate, routing))
        if candidate.accepted:
            state.versions.adopt(changes)
            state.config = best
            state.train, state.held = candidate.train, candidate.heldout or state.held
    summary = RoundSummary(
        round=number,
        train_before=before[0],
        heldout_before=before[1],
        targets=list(targets),
        classes=classes,
        trials=[
            {"changes": {k: v[1] for k, v in incumbent.diff(c).items()}, "train": s.accuracy}
            for c, s in trials
        ],
        candidate=candidate,
        train_after=state.train,
        heldout_after=state.held,
        budget_spent=budget.spent,
        runs_made=budget.runs_made,
        replays=budget.replays,
        test_after=_reported(evaluator, state.config).get("test"),
        llm_calls=evaluator.llm_usage().calls,
        tokens_in=evaluator.llm_usage().tokens_in,
        tokens_out=evaluator.llm_usage().tokens_out,
    )
    return RoundOutcome(summary, routing, changes)


def _candidate(
    number: int,
    state: Incumbent,
    trials: Sequence[Trial],
    routing: Routing | None,
    evaluator: Evaluator,
) -> tuple[ConfigCandidate, Configuration]:
    """The best trial on train (on a tie the first: fewest trials spent to find it), scored on
    the held-out split when it beats the incumbent, and the verdict."""
    best_config, best_score = max(trials, key=lambda t: t[1].accuracy)
    diff = state.config.diff(best_config)
    heldout: float | None = None
    if best_score.accuracy > state.train and diff:
        try:
            heldout = evaluator.score(best_config, "heldout").accuracy
            accepted, reason = accept((state.train, state.held), (best_score.accuracy, heldout))
        except OutOfBudget:
            accepted, reason = False, "no budget left to score the held-out split"
    elif diff:
        accepted, reason = False, f"no trial beat the incumbent on train ({state.train:.4f})"
    else:
        accepted, reason = False, "the best trial is the incumbent"
    candidate = ConfigCandidate(
        id=f"r{number}",
        round=number,
        changes=diff,
        train=best_score.accuracy,
        heldout=heldout,
        accepted=accepted,
        reason=reason,
    )
    motivating = _motivating(candidate, routing).values()
    candidate.classes = sorted({key for keys in motivating for key in keys})
    return candidate, best_config


def _motivating(candidate: ConfigCandidate, routing: Routing | None) -> dict[str, list[str]]:
    """Changed variable -> the keys of the failure classes that routed it."""
    if routing is None:
        return {}
    return {
        name: sorted(cls.key for cls in routing.motivating(name.split(":", 1)[1]))
        for name in candidate.changes
    }


class Recorder:
    """Writes what the loop did: the run directory's files (``rounds.json``,
    ``update_results.json``, ``accepted/``, ``summary.json``) and, given a store, the lineage in
    Neo4j."""

    def __init__(
        self,
        out: Path,
        store: LineageStore | None,
        options: OptimizeOptions,
        write_config: Callable[[Configuration, Path], Any],
    ) -> None:
        """``write_config``: the system's own (``OptimizableSystem.write_config``)."""
        self.out = out
        self.store = store
        self.options = options
        self.write_config = write_config
        self.rounds: list[RoundSummary] = []
        self.updates: dict[str, dict[str, Any]] = {}

    def begin(self, incumbent: Configuration) -> None:
        if self.store is None:
            return
        options = self.options
        self.store.begin(
            options.run_id,
            {
                "system": options.system,
                "mode": options.mode,
                "guided": options.guided,
                "baseline": options.baseline,
                "route_by": options.route_by if options.guided else "none",
                "seed": options.seed,
                "budget": options.budget,
            },
            [
                {"kind": k.split(":", 1)[0], "name": k.split(":", 1)[1], "value": _value(v)}
                for k, v in incumbent.values().items()
            ],
        )

    def round(self, outcome: RoundOutcome, incumbent: Configuration) -> None:
        run_id, summary, candidate = self.options.run_id, outcome.summary, outcome.summary.candidate
        if self.store is not None and outcome.routing is not None:
            self.store.classes(run_id, summary.round, outcome.routing)
        if candidate is not None and outcome.changes:
            if self.store is not None:
                self.store.candidate(
                    run_id,
                    {
                        "id": f"{run_id}/{candidate.id}",
                        "round": summary.round,
                        "score_train": candidate.train,
                        "score_heldout": candidate.heldout,
                        "accepted": candidate.accepted,
                        "reason": candidate.reason,
                    },
                    outcome.changes,
                )
            for change in outcome.changes:
                self.updates[f"{change['name']}@{change['version']}"] = {
                    "kind": change["kind"],
                    "value": change["value"],
                    "derived_from": f"{change['name']}@{change['parent']}",
                    "round": summary.round,
                    "accepted": candidate.accepted,
                    "score_train": candidate.train,
                    "score_heldout": candidate.heldout,
                    "reason": candidate.reason,
                }
        self.rounds.append(summary)
        _write(self.out / "rounds.json", [asdict(r) for r in self.rounds])
        _write(self.out / "update_results.json", self.updates)
        self.write_config(incumbent, self.out / "accepted")

    def finish(self, result: OptimizeResult) -> None:
        self.write_config(result.config, self.out / "accepted")
        _write(self.out / "update_results.json", self.updates)
        _write(self.out / "summary.json", result.as_dict())
        (self.out / "summary.txt").write_text(result.summary() + "\n", encoding="utf-8")
        if self.store is None:
            return
        initial, final = result.initial, result.final
        # the report-only test split, when there is one
        tested = {
            f"{when}_test": acc["test"]
            for when, acc in (("initial", initial), ("final", final))
            if "test" in acc
        }
        self.store.finish(
            result.run_id,
            {
                "initial_train": initial["train"],
                "initial_heldout": initial["heldout"],
                "final_train": final["train"],
                "final_heldout": final["heldout"],
                **tested,
                "budget_spent": result.budget_spent,
                "replays": result.replays,
                "stopped": result.stopped,
                "rounds": len(result.rounds),
            },
        )


def optimize(
    options: OptimizeOptions,
    evaluator: Evaluator,
    proposer: Proposer,
    out: Path,
    *,
    budget: Budget,
    feedback: Feedback | None = None,
    store: LineageStore | None = None,
    base: Configuration | None = None,
    on_round: Callable[[RoundSummary], None] | None = None,
) -> OptimizeResult:
    """Run the rounds (``run_round``), recording each (``Recorder``); ``budget`` is what the
    evaluator's runs are charged to (the loop stops when the next round's checks no longer fit);
    ``feedback`` is required when ``options.guided``. Re-running with the same ``out`` resumes:
    cached evaluations and classes replay the history without runs."""
    if options.guided and feedback is None:
        raise ConfigError("guided optimization needs attribution feedback (a database)")
    _check_resume(out, options)
    config = base or knobs_of(evaluator.system).defaults()
    recorder = Recorder(out, store, options, evaluator.system.write_config)
    recorder.begin(config)
    train = evaluator.score(config, "train").accuracy
    held = evaluator.score(config, "heldout").accuracy
    initial = {"train": train, "heldout": held} | _reported(evaluator, config)
    state = Incumbent(config, train, held, Versions(config))
    stopped, rounds = "rounds done", options.rounds
    baseline: tuple[str, ...] = ()  # what a baseline moves every round (guided: routed anew)
    try:
        if not options.guided:
            baseline = baseline_targets(options, evaluator, config, out)
    except OutOfBudget:
        stopped, rounds = "budget", 0
    for number in range(1, rounds + 1):
        outcome = run_round(number, state, options, evaluator, budget, proposer, feedback, baseline)
        if isinstance(outcome, str):
            stopped = outcome
            break
        recorder.round(outcome, state.config)
        if on_round is not None:
            on_round(outcome.summary)
        if not budget.affords(evaluator.cost("train") + evaluator.cost("heldout")):
            stopped = "budget"
            break
    result = OptimizeResult(
        run_id=options.run_id,
        options=asdict(options),
        initial=initial,
        final={"train": state.train, "heldout": state.held} | _reported(evaluator, state.config),
        rounds=recorder.rounds,
        config=state.config,
        base=config,
        budget_spent=budget.spent,
        runs_made=budget.runs_made,
        stopped=stopped,
        replays=budget.replays,
    )
    recorder.finish(result)
    return result


def _reported(evaluator: Evaluator, incumbent: Configuration) -> dict[str, float]:
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
