"""Attribution feedback for one incumbent: trace the train split, load it, attribute its failed
cases, group them into failure classes (``memtrace.patterns``).

The classes of a configuration are computed once: they are kept in ``<cache>/<key>.json``
(default ``<out>/classes``), so a resumed run (or a later round with the same incumbent) reads
them instead of re-running. Runs that attribute every failed case (``max_cases`` at least the
number of failures) may share one cache: the classes then do not depend on the seed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

from memtrace.attribution.judges import Judge
from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.store import AttributionStore
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.optimize.scoring import Blame, Evaluator
from memtrace.patterns import CLASS_COLUMNS, failure_classes
from memtrace.systems.config import SystemConfig
from memtrace.systems.runner import trace_id


class GraphFeedback:
    def __init__(
        self,
        db: Database,
        judge: Judge,
        evaluator: Evaluator,
        out: Path,
        run_id: str,
        *,
        max_cases: int,
        seed: int,
        cache: Path | None = None,
    ) -> None:
        self.db = db
        self.judge = judge
        self.evaluator = evaluator
        self.out = out
        self.run_id = run_id
        self.max_cases = max_cases
        self.seed = seed
        self.cache = cache or out / "classes"

    def attribution_run(self, config: SystemConfig) -> str:
        return f"{self.run_id}-{config.key()}"

    def classes(self, config: SystemConfig) -> pd.DataFrame:
        cached = self.cache / f"{config.key()}.json"
        if cached.is_file():
            self.evaluator.budget.charge(self.evaluator.cost("train"), cached=True)
            return pd.DataFrame(json.loads(cached.read_text(encoding="utf-8")))
        prefix = f"{self.attribution_run(config)}-"
        paths = self.evaluator.traced(config, "train", self.out / "traces" / config.key(), prefix)
        load_paths(self.db, [str(p) for p in paths], LoadOptions())
        score = self.evaluator.cached(config, "train")
        assert score is not None  # traced() records it
        system = self.evaluator.system
        by_case = {c.number: trace_id(system, c, prefix) for c in self.evaluator.splits["train"]}
        failed = [(by_case[int(case.split("-")[2])], case) for case in score.failed]
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
        return frame

    def _blames_path(self, config: SystemConfig) -> Path:
        return self.cache / f"{config.key()}.blames.json"

    def blames(self, config: SystemConfig) -> dict[str, Blame]:
        """Failed case id -> what attribution blamed (once ``classes`` ran for ``config``)."""
        path = self._blames_path(config)
        if not path.is_file():
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
        return {case_id: Blame(**fields) for case_id, fields in data.items()}
