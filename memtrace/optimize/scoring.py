"""Score a configuration by re-running the system and its judge; budget and an on-disk cache.

One *system run* is one conversation replayed with its questions: the unit the budget counts.
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
from memtrace.settings import Settings
from memtrace.systems.config import SystemConfig
from memtrace.systems.core import Backend, ConversationRun
from memtrace.systems.locomo import Conversation
from memtrace.systems.registry import make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

TEST = "test"  # the report-only split: never charged, never read by a decision


@dataclass(frozen=True, slots=True)
class Score:
    correct: int
    total: int
    failed: tuple[str, ...] = ()  # case ids judged wrong

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


def score_runs(runs: Sequence[ConversationRun]) -> Score:
    results = [r for run in runs for r in run.results]
    return Score(
        sum(r.passed for r in results),
        len(results),
        tuple(r.case_id for r in results if not r.passed),
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
    """Runs ``system`` with a configuration on a split; cached in ``cache_path``."""

    def __init__(
        self,
        system: str,
        backend: Backend,
        splits: Mapping[str, Sequence[Conversation]],
        budget: Budget,
        cache_path: Path,
        settings: Settings | None = None,
    ) -> None:
        """``settings``: for a system that calls an endpoint itself (mem0-lib)."""
        self.system = system
        self.settings = settings
        self.backend = backend
        self.splits = dict(splits)
        self.budget = budget
        self.cache_path = cache_path
        self._cache: dict[tuple[str, str], Score] = {}
        self.reflection_usage = Usage()  # added to by prompt proposers
        self.test_runs = 0  # system runs of the report-only test split (not in the budget)
        if cache_path.is_file():
            for line in cache_path.read_text(encoding="utf-8").splitlines():
                if line.strip():  # a line cut by an interruption is not valid JSON: skip it
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    self._cache[(row["key"], row["split"])] = Score(
                        row["correct"], row["total"], tuple(row["failed"])
                    )

    def llm_usage(self) -> Usage:
        """LLM calls and tokens so far: the system's (an LLM backend) and the reflections'."""
        system = getattr(self.backend, "usage", None)
        return self.reflection_usage + (system if isinstance(system, Usage) else Usage())

    def cost(self, split: str) -> int:
        return len(self.splits[split])

    def score(self, config: SystemConfig, split: str) -> Score:
        if split == TEST:
            raise ValueError("the test split is reported (Evaluator.report), never scored")
        self.budget.charge(self.cost(split), cached=(config.key(), split) in self._cache)
        return self._evaluate(config, split)

    def report(self, config: SystemConfig) -> Score | None:
        """The ``test`` split's score of ``config`` (None without one), outside the budget:
        the loop records it and decides nothing by it."""
        if not self.splits.get(TEST):
            return None
        if (config.key(), TEST) not in self._cache:
            self.test_runs += self.cost(TEST)
        return self._evaluate(config, TEST)

    def _evaluate(self, config: SystemConfig, split: str) -> Score:
        cached = self._cache.get((config.key(), split))
        if cached is not None:
            return cached
        system = make_system(
            self.system,
            self.backend,
            params=config.params,
            prompts=config.prompts,
            settings=self.settings,
        )
        runs = [run_conversation(system, conv, None)[0] for conv in self.splits[split]]
        return self.remember(config, split, score_runs(runs))

    def cached(self, config: SystemConfig, split: str) -> Score | None:
        return self._cache.get((config.key(), split))

    def remember(self, config: SystemConfig, split: str, score: Score) -> Score:
        self._cache[(config.key(), split)] = score
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as out:
            row = {"key": config.key(), "split": split, **asdict(score)}
            out.write(json.dumps(row) + "\n")
        return score

    def traced(self, config: SystemConfig, split: str, out: Path, prefix: str) -> list[Path]:
        """Run ``split`` traced into ``out`` (for attribution); charged like any run."""
        self.budget.charge(self.cost(split), cached=False)
        system = make_system(
            self.system,
            self.backend,
            params=config.params,
            prompts=config.prompts,
            settings=self.settings,
        )
        paths, runs = [], []
        for conv in self.splits[split]:
            run, path = run_conversation(system, conv, out, prefix=prefix, clock=SimClock())
            runs.append(run)
            if path is not None:
                paths.append(path)
        if (config.key(), split) not in self._cache:
            self.remember(config, split, score_runs(runs))
        return paths
