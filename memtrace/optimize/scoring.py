"""Score a configuration by re-running the system and its judge; budget and an on-disk cache.

One *system run* is one unit of the system's data (a LoCoMo conversation replayed with its
questions; a user's case or conversation id) run and judged: the unit the budget counts.
A what-if replay (headroom routing) re-runs one conversation too and is charged as one system
run (``Budget.charge_replays``), so headroom routing pays for what it measures.
Evaluations are cached by (configuration, split) in a JSON-lines file, so an interrupted
optimization that is started again replays its history for free: the budget still counts the
cached runs (the run as a whole spent them), ``runs_made`` only what this process ran.
The ``test`` split (optional) is scored only to report how the incumbent does on data the
optimizer never decides on (``Evaluator.report``): it is not charged to the budget, because no
proposal, selection or acceptance reads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from memtrace.errors import OutOfBudget
from memtrace.llm import Usage
from memtrace.optimize.plugin import (
    CaseResult,
    Configuration,
    OptimizableSystem,
    SystemRun,
    Tracing,
)

TEST = "test"  # the report-only split: never charged, never read by a decision


@dataclass(frozen=True, slots=True)
class Score:
    correct: int
    total: int
    failed: tuple[str, ...] = ()  # case ids judged wrong
    cases: tuple[tuple[str, str], ...] = ()  # (unit, case id) of every case, in run order

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


def score_results(results: Sequence[CaseResult]) -> Score:
    return Score(
        sum(r.passed for r in results),
        len(results),
        tuple(r.case_id for r in results if not r.passed),
        tuple((r.unit, r.case_id) for r in results),
    )


@dataclass(frozen=True, slots=True)
class Blame:
    """What attribution says about one failed case (the feedback a prompt proposer shows)."""

    op_name: str
    error_type: str
    reason: str


@dataclass
class Budget:
    limit: int  # system runs
    spent: int = 0
    runs_made: int = 0  # not served from the cache
    replays: int = 0  # what-if replays charged (part of ``spent``)

    def charge(self, runs: int, *, cached: bool, strict: bool = True) -> None:
        """Count ``runs``; ``strict``: refuse (OutOfBudget) what would exceed the limit."""
        if strict and self.spent + runs > self.limit:
            raise OutOfBudget(f"budget of {self.limit} system runs reached ({self.spent} spent)")
        self.spent += runs
        if not cached:
            self.runs_made += runs

    def charge_replays(self, replays: int, *, cached: bool) -> None:
        """What-if replays, one system run each; refused (OutOfBudget) past the limit."""
        self.charge(replays, cached=cached)
        self.replays += replays

    def affords(self, runs: int) -> bool:
        return self.spent + runs <= self.limit


class Evaluator:
    """Runs ``system`` (an ``OptimizableSystem``) with a configuration on a split (its unit
    ids); cached in ``cache_path``."""

    def __init__(
        self,
        system: OptimizableSystem,
        splits: Mapping[str, Sequence[str]],
        budget: Budget,
        cache_path: Path,
    ) -> None:
        self.system = system
        self.splits = {name: list(ids) for name, ids in splits.items()}
        self.budget = budget
        self.cache_path = cache_path
        self._cache: dict[tuple[str, str], Score] = {}
        self.reflection_usage = Usage()  # added to by prompt proposers
        self.test_runs = 0  # system runs of the report-only test split (not in the budget)
        if cache_path.is_file():
            for line in cache_path.read_text(encoding="utf-8").splitlines():
                # a line cut by an interruption is not valid JSON, and a row of an older
                # memtrace lacks the cases: skip both (the run is made again)
                try:
                    row = json.loads(line)
                    cases = tuple((str(u), str(c)) for u, c in row["cases"])
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue
                self._cache[(row["key"], row["split"])] = Score(
                    row["correct"], row["total"], tuple(row["failed"]), cases
                )

    def llm_usage(self) -> Usage:
        """LLM calls and tokens so far: the system's (one that counts them) and the
        reflections'."""
        system = getattr(self.system, "usage", None)
        return self.reflection_usage + (system if isinstance(system, Usage) else Usage())

    def cost(self, split: str) -> int:
        return len(self.splits[split])

    def score(self, config: Configuration, split: str) -> Score:
        if split == TEST:
            raise ValueError("the test split is reported (Evaluator.report), never scored")
        self.budget.charge(self.cost(split), cached=(config.key(), split) in self._cache)
        return self._evaluate(config, split)

    def report(self, config: Configuration) -> Score | None:
        """The ``test`` split's score of ``config`` (None without one), outside the budget:
        the loop records it and decides nothing by it."""
        if not self.splits.get(TEST):
            return None
        if (config.key(), TEST) not in self._cache:
            self.test_runs += self.cost(TEST)
        return self._evaluate(config, TEST)

    def _evaluate(self, config: Configuration, split: str) -> Score:
        cached = self._cache.get((config.key(), split))
        if cached is not None:
            return cached
        run = self.system.run(config, self.splits[split])
        return self.remember(config, split, score_results(run.results))

    def cases(self, split: str) -> tuple[tuple[str, str], ...]:
        """(unit, case id) of every case of ``split``, from any run of it so far (the cases
        do not depend on the configuration)."""
        return next((s.cases for (_, name), s in self._cache.items() if name == split), ())

    def cached(self, config: Configuration, split: str) -> Score | None:
        return self._cache.get((config.key(), split))

    def remember(self, config: Configuration, split: str, score: Score) -> Score:
        self._cache[(config.key(), split)] = score
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as out:
            row = {"key": config.key(), "split": split, **asdict(score)}
            out.write(json.dumps(row) + "\n")
        return score

    def traced(self, config: Configuration, split: str, out: Path, prefix: str) -> SystemRun:
        """Run ``split`` traced into ``out`` (for attribution); charged like any run."""
        self.budget.charge(self.cost(split), cached=False)
        run = self.system.run(config, self.splits[split], tracing=Tracing(out, prefix))
        if (config.key(), split) not in self._cache:
            self.remember(config, split, score_results(run.results))
        return run

    def run_cases(self, config: Configuration, cases: Sequence[tuple[str, str]]) -> SystemRun:
        """Only the cases ``(unit, case id)`` (a prompt proposer's minibatch), charged one
        system run per unit they are in; never refused (the proposer cannot stop mid-call,
        its stopper ends the search at its next check)."""
        units = sorted({unit for unit, _ in cases})
        self.budget.charge(len(units), cached=False, strict=False)
        return self.system.run(config, units, only={case_id for _, case_id in cases})
