"""The optimizer's queries: lineage of prompt and parameter versions in Neo4j.

(:OptimizationRun)-[:STARTS_FROM]->(:ConfigVersion:PromptVersion|ParameterVersion {name, version
1, value}); every candidate adds, per variable it changes, a version
-[:DERIVED_FROM {round, candidate, score_train, score_heldout, accepted, reason}]-> the
incumbent's version, -[:PROPOSED_IN]-> the run and -[:MOTIVATED_BY]-> the (:FailureClass)es that
routed it. Queries: ``memtrace/cypher/optimizer/``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.optimize.routing import Routing


class LineageStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def begin(self, run_id: str, props: dict[str, Any], base: list[dict[str, str]]) -> None:
        self.db.run(get_query("optimizer/begin_run"), run_id=run_id, props=props, base=base)

    def classes(self, run_id: str, round_number: int, routing: Routing) -> None:
        rows = [
            {
                "key": cls.key,
                "props": {
                    "system": cls.system,
                    "op_name": cls.op_name,
                    "error_type": cls.error_type,
                    "cases": cls.cases,
                    "share_of_failures": cls.share_of_failures,
                    "targets": list(cls.targets),
                    "optimizable": bool(cls.targets),
                    "why_not": cls.why_not,
                    "example_cases": list(cls.case_ids[:3]),
                    "routed_by": routing.by,
                }
                | {
                    name: value
                    for name, value in (
                        ("headroom", cls.headroom),
                        ("rescued", cls.rescued),
                        ("broken", cls.broken),
                        ("headroom_why", cls.headroom_why or None),
                    )
                    if value is not None
                },
            }
            for cls in routing.classes
        ]
        self.db.run(
            get_query("optimizer/write_classes"), run_id=run_id, round=round_number, classes=rows
        )

    def candidate(
        self, run_id: str, candidate: dict[str, Any], changes: list[dict[str, Any]]
    ) -> None:
        self.db.run(
            get_query("optimizer/write_candidate"),
            run_id=run_id,
            candidate=candidate,
            changes=changes,
        )

    def finish(self, run_id: str, props: dict[str, Any]) -> None:
        self.db.run(get_query("optimizer/finish_run"), run_id=run_id, props=props)

    def run(self, run_id: str) -> dict[str, Any] | None:
        """The run's properties (``updated_at`` as ISO text), None when there is no such run."""
        rows = self.db.run(get_query("optimizer/run"), run_id=run_id)
        if not rows:
            return None
        return {
            k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in rows[0]["run"].items()
        }

    def lineage(self, run_id: str) -> pd.DataFrame:
        query = get_query("optimizer/lineage")
        return pd.DataFrame(self.db.run(query, run_id=run_id), columns=list(query.columns))

    def delete(self, run_id: str) -> int:
        rows = self.db.run(get_query("optimizer/delete_run"), run_id=run_id)
        return int(rows[0]["deleted"]) if rows else 0
