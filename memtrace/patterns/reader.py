"""The one place memtrace.patterns reads (and, for the what-if, writes) Neo4j: each method runs
one query of cypher/patterns/."""

from __future__ import annotations

from typing import Any

import pandas as pd

from memtrace.cypher import Query, get_query
from memtrace.db import Database

# the queries offered in Neo4j Browser, in the order a user explores a run
BROWSER_QUERIES = (
    "failure_classes",
    "class_headroom",
    "by_category",
    "evidence_funnel",
    "evidence_position",
    "failed_attributions",
    "by_user",
    "run_summary",
    "runs",
    "case_view",
)


def pattern_query(name: str) -> Query:
    """A query of cypher/patterns/ by its file name, for showing (the Browser, the report)."""
    return get_query(f"patterns/{name}")


class PatternReader:
    """Runs the pattern queries of one database and hands back their rows as DataFrames."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def _frame(self, name: str, **params: Any) -> pd.DataFrame:
        query = pattern_query(name)
        return pd.DataFrame(self.db.run(query, **params), columns=list(query.columns))

    def failure_classes(
        self, run_id: str, system: str | None, error_type: str | None, min_count: int
    ) -> pd.DataFrame:
        return self._frame(
            "failure_classes",
            run_id=run_id,
            system=system,
            error_type=error_type,
            min_count=min_count,
        )

    def run_summary(self, run_id: str, system: str | None) -> pd.DataFrame:
        return self._frame("run_summary", run_id=run_id, system=system)

    def failed_attributions(self, run_id: str, system: str | None) -> pd.DataFrame:
        return self._frame("failed_attributions", run_id=run_id, system=system)

    def by_category(self, run_id: str, system: str | None) -> pd.DataFrame:
        return self._frame("by_category", run_id=run_id, system=system)

    def evidence_position(self, run_id: str, system: str | None) -> pd.DataFrame:
        return self._frame("evidence_position", run_id=run_id, system=system)

    def evidence_funnel(self, run_id: str, system: str | None) -> pd.DataFrame:
        return self._frame("evidence_funnel", run_id=run_id, system=system)

    def case_details(self, run_id: str, cases: list[tuple[str, str]]) -> pd.DataFrame:
        refs = [{"trace_id": trace_id, "case_id": case_id} for trace_id, case_id in cases]
        return self._frame("case_details", run_id=run_id, cases=refs)

    def blamed_cases(self, run_id: str, system: str | None) -> pd.DataFrame:
        return self._frame("blamed_cases", run_id=run_id, system=system)

    def class_headroom(self, run_id: str) -> pd.DataFrame:
        return self._frame("class_headroom", run_id=run_id)

    def what_if_run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.db.run(pattern_query("what_if_run"), run_id=run_id)
        if not rows:
            return None
        return {
            k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in rows[0]["run"].items()
        }

    def write_headroom(
        self, run_id: str, props: dict[str, Any], classes: list[dict[str, Any]]
    ) -> int:
        rows = self.db.run(
            pattern_query("write_headroom"), run_id=run_id, props=props, classes=classes
        )
        return int(rows[0]["written"]) if rows else 0

    def runs(self) -> pd.DataFrame:
        return self._frame("runs")

    def run_exists(self, run_id: str) -> bool:
        return bool(self.db.run(pattern_query("run_exists"), run_id=run_id)[0]["found"])
