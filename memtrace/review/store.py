"""Every review query (``cypher/review/``): queue rows, a case's attributions and reviews,
writing reviews and human labels, reading them back, resolving imported ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.review.model import HumanLabel, OtherBlame, QueueCase


class ReviewStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def queue_cases(self, run_id: str, reviewer: str) -> list[QueueCase]:
        rows = self.db.run(get_query("review/queue_cases"), run_id=run_id, reviewer=reviewer)
        return [
            QueueCase(
                trace_id=row["trace_id"],
                case_id=row["case_id"],
                system=row["system"],
                question=row["question"],
                op_id=row["op_id"],
                op_name=row["op_name"],
                error_type=row["error_type"],
                confidence=row["confidence"],
                judge=row["judge"],
                error=row["error"],
                other_blames=tuple(
                    OtherBlame(b["run_id"], b["judge"], b["op_id"]) for b in row["other_blames"]
                ),
                my_decision=row["my_decision"],
                reviewers=int(row["reviewers"]),
            )
            for row in rows
        ]

    def case_attributions(self, trace_id: str, case_id: str) -> list[dict[str, Any]]:
        return self.db.run(
            get_query("review/case_attributions"), trace_id=trace_id, case_id=case_id
        )

    def case_reviews(self, trace_id: str, case_id: str) -> list[dict[str, Any]]:
        return self.db.run(get_query("review/case_reviews"), trace_id=trace_id, case_id=case_id)

    def write_reviews(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows of ``write_reviews.cypher``, in one transaction; returns one row per written
        review (a row whose case or op does not resolve writes nothing)."""
        return self.db.run(get_query("review/write_reviews"), rows=list(rows))

    def undo_review(self, review_id: str, reviewer: str) -> dict[str, Any] | None:
        """Delete one review of ``reviewer`` and hand their label back to their previous
        decision on the case; None when no such review exists."""
        rows = self.db.run(get_query("review/undo_review"), review_id=review_id, reviewer=reviewer)
        return rows[0] if rows else None

    def human_labels(self, trace_id: str | None, reviewer: str | None) -> list[HumanLabel]:
        rows = self.db.run(get_query("review/human_labels"), trace_id=trace_id, reviewer=reviewer)
        return [
            HumanLabel(
                trace_id=row["trace_id"],
                case_id=row["case_id"],
                query_id=row["query_id"],
                reviewer=row["reviewer"],
                at=row["at"],
                op_id=row["label_op"],
                op_name=row["label_name"],
                error_type=row["label_type"],
                reason=row["reason"],
                evidence_ids=tuple(row["evidence_ids"]),
                attributions=tuple(a for a in row["attributions"] if a.get("run_id")),
            )
            for row in rows
        ]

    def resolve_annotations(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """One row per request (by ``index``): the trace, case and op ids found (or None)."""
        found: dict[int, dict[str, Any]] = {}
        for row in self.db.run(get_query("review/resolve_annotations"), rows=list(rows)):
            found.setdefault(int(row["index"]), row)  # a query shared by two cases: the first
        return [found[i] for i in range(len(rows))]
