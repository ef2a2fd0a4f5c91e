"""Attribution feedback for one incumbent: trace the train split, load it, attribute its failed
cases, group them into failure classes (``memtrace.patterns``), and, to route by headroom,
execute each class's what-if on the train traces (``memtrace.patterns.headroom``) through a
replayer whose replays are charged to the budget in system runs.

A configuration's classes (and headroom) are charged once per optimization run: served from the
cache they are charged again the first time this run asks (another run, or an interrupted one,
computed them; this run would have had to), not when a later round asks again for an incumbent
that did not change.

The classes of a configuration are computed once: they are kept in ``<cache>/<key>.json``
(default ``<out>/classes``), so a resumed run (or a later round with the same incumbent) reads
them instead of re-running. Runs that attribute every failed case (``max_cases`` at least the
number of failures) may share one cache: the classes then do not depend on the seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from pathlib import Path

import pandas as pd

from memtrace.attribution.judges import Judge
from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.store import AttributionStore
from memtrace.db import Database
from memtrace.errors import ConfigError
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.optimize.plugin import Configuration
from memtrace.optimize.scoring import Blame, Budget, Evaluator
from memtrace.patterns import CLASS_COLUMNS, HEADROOM_COLUMNS, failure_classes
from memtrace.patterns.export import records
from memtrace.patterns.headroom import BlamedOp, ClassReplayer, ReplayedAnswer, what_if
from memtrace.patterns.reader import PatternReader
from memtrace.replay.graph import TraceFiles
from memtrace.replay.what_if import WhatIfReplayer
from memtrace.settings import Settings

# the trace files of a configuration's train run, by trace id -> a replayer of them
ReplayerFactory = Callable[[Mapping[str, Path]], ClassReplayer]


def engine_replayer(
    files: Mapping[str, Path],
    *,
    precise_search: bool = False,
    settings: Settings | None = None,
    replayer: str | None = None,
) -> ClassReplayer:
    """Replays of native trace files: the replay engine for memtrace's systems, else the
    user's replayer (``replayer``: ``module:attr``, or the one registered for the trace's
    system, ``memtrace.replay.plugins``); ``precise_search``: a repaired search keeps only the
    results holding the evidence; ``settings``: for a system that calls an endpoint itself
    (mem0-lib; offline backends need none)."""
    return WhatIfReplayer(TraceFiles(files, settings, replayer).for_trace, precise_search)


class BudgetedReplayer:
    """A replayer whose replays are charged to the optimizer's budget in system runs (the
    conversations they re-run) before they run: one past the limit raises OutOfBudget."""

    def __init__(self, inner: ClassReplayer, budget: Budget) -> None:
        self.inner = inner
        self.budget = budget

    def replayable(self, trace_id: str) -> str | None:
        return self.inner.replayable(trace_id)

    def baseline(self, trace_id: str) -> Mapping[str, bool]:
        return self.inner.baseline(trace_id)

    def cost(self, trace_id: str, repairs: Sequence[BlamedOp]) -> int:
        return self.inner.cost(trace_id, repairs)

    def replay(
        self, trace_id: str, repairs: Sequence[BlamedOp], cases: Collection[str] | None = None
    ) -> Mapping[str, ReplayedAnswer]:
        self.budget.charge_replays(self.inner.cost(trace_id, repairs), cached=False)
        return self.inner.replay(trace_id, repairs, cases)


class GraphFeedback:
    def __init__(
        self,
        db: Database,
        judge: Judge,
        evaluator: Evaluator,
        out: Path,
        run_id: str,
        *,
        budget: Budget,
        max_cases: int,
        seed: int,
        cache: Path | None = None,
        replayer: ReplayerFactory | None = None,
        precise_search: bool = False,
        settings: Settings | None = None,
        replayer_spec: str | None = None,
    ) -> None:
        """``replayer``: what replays the train traces (default: ``engine_replayer`` with
        ``settings`` and the user's ``replayer_spec``)."""
        self.db = db
        self.judge = judge
        self.evaluator = evaluator
        self.budget = budget  # what the cached classes and headroom are charged to
        self.out = out
        self.run_id = run_id
        self.max_cases = max_cases
        self.seed = seed
        self.cache = cache or out / "classes"
        self.replayer = replayer or partial(
            engine_replayer,
            precise_search=precise_search,
            settings=settings,
            replayer=replayer_spec,
        )
        # the two search oracles measure different headroom: cached apart
        self.headroom_name = "headroom.precise" if precise_search else "headroom"
        self._charged: set[tuple[str, str]] = set()

    def _first(self, what: str, config: Configuration) -> bool:
        """True the first time this run asks for ``what`` of ``config`` (then it is charged)."""
        key = (what, config.key())
        first = key not in self._charged
        self._charged.add(key)
        return first

    def attribution_run(self, config: Configuration) -> str:
        """The attribution run of ``config``'s classes: this run's, or, when the classes came
        from a shared cache, the run that computed them (its traces are the ones loaded)."""
        source = self.cache / f"{config.key()}.run.json"
        if source.is_file():
            return str(json.loads(source.read_text(encoding="utf-8"))["run_id"])
        return f"{self.run_id}-{config.key()}"

    def classes(self, config: Configuration) -> pd.DataFrame:
        cached = self.cache / f"{config.key()}.json"
        if cached.is_file():
            if self._first("classes", config):
                self.budget.charge(self.evaluator.cost("train"), cached=True)
            return pd.DataFrame(json.loads(cached.read_text(encoding="utf-8")))
        self._first("classes", config)  # traced() below charges the run
        prefix = f"{self.attribution_run(config)}-"
        run = self.evaluator.traced(config, "train", self.out / "traces" / config.key(), prefix)
        load_paths(self.db, [str(p) for p in run.traces.values()], LoadOptions())
        system = self.evaluator.system.name
        failed = [(r.trace_id, r.case_id) for r in run.results if not r.passed]
        # a seeded sample keeps the attribution cost per round bounded
        picked = sorted(random.Random(self.seed).sample(failed, min(self.max_cases, len(failed))))
        run_id = self.attribution_run(config)
        _, verdicts = run_attribution(
            AttributionStore(self.db), self.judge, Options(), cases=picked, run_id=run_id
        )
        frame = failure_classes(self.db, run_id, system=system)
        reasons = {v.case_id: v.reason for v in verdicts}
        blames = {
            case_id: {
                "op_name": row["op_name"],
                "error_type": row["error_type"],
                "reason": reasons.get(case_id, ""),
            }
            for row in frame.to_dict("records")
            for case_id in row["case_ids"]
        }
        cached.parent.mkdir(parents=True, exist_ok=True)
        self._blames_path(config).write_text(json.dumps(blames), encoding="utf-8")
        cached.write_text(frame[list(CLASS_COLUMNS)].to_json(orient="records"), encoding="utf-8")
        source = self.cache / f"{config.key()}.run.json"
        files = {trace: str(path) for trace, path in run.traces.items()}
        source.write_text(json.dumps({"run_id": run_id, "files": files}), encoding="utf-8")
        return frame

    def train_files(self, config: Configuration) -> dict[str, Path]:
        """Trace id -> the file of the incumbent's traced train run (what a replay reads)."""
        source = self.cache / f"{config.key()}.run.json"
        if not source.is_file():
            raise ConfigError(f"no traced train run recorded for configuration {config.key()}")
        files = json.loads(source.read_text(encoding="utf-8")).get("files", {})
        return {str(t): Path(p) for t, p in files.items()}

    def headroom(
        self, config: Configuration, classes: pd.DataFrame, keys: set[str]
    ) -> pd.DataFrame:
        """The what-if of the classes in ``keys`` on the train traces (no fix-alone, no joint:
        routing needs neither), cached beside the classes; a cached answer is charged its
        replays again, like cached evaluations, so a resumed run spends what the first did."""
        cached = self.cache / f"{config.key()}.{self.headroom_name}.json"
        if cached.is_file():
            data = json.loads(cached.read_text(encoding="utf-8"))
            if self._first("headroom", config):
                self.budget.charge_replays(int(data["replays"]), cached=True)
            return pd.DataFrame(data["classes"], columns=list(HEADROOM_COLUMNS))
        self._first("headroom", config)  # the replays below are charged as they run
        replayer = BudgetedReplayer(self.replayer(self.train_files(config)), self.budget)
        blamed = PatternReader(self.db).blamed_cases(self.attribution_run(config), None)
        result = what_if(classes, blamed, replayer, fix_alone=False, joint_top=0, only=keys)
        cached.parent.mkdir(parents=True, exist_ok=True)
        payload = {"replays": result.replays, "classes": records(result.classes)}
        cached.write_text(json.dumps(payload, allow_nan=False), encoding="utf-8")
        return result.classes

    def _blames_path(self, config: Configuration) -> Path:
        return self.cache / f"{config.key()}.blames.json"

    def blames(self, config: Configuration) -> dict[str, Blame]:
        """Failed case id -> what attribution blamed (once ``classes`` ran for ``config``)."""
        path = self._blames_path(config)
        if not path.is_file():
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
        return {case_id: Blame(**fields) for case_id, fields in data.items()}
