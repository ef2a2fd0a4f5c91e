"""What the review app and the `memtrace review` commands do, over the stores and the pure parts:
queues, a case page's data, recording a decision, export, import, agreement.

The only review module that combines the stores (I/O) with the pure modules, as
``attribution/pipeline.py`` does for attribution.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from memtrace import patterns
from memtrace.attribution.model import Candidate, CaseGraph, OperationView, OpRef, Trail
from memtrace.attribution.pipeline import Options, case_candidates
from memtrace.attribution.store import AttributionStore, explain_cypher
from memtrace.db import Database
from memtrace.errors import MemtraceError, ReviewError
from memtrace.review import agreement
from memtrace.review.annotations import (
    Annotation,
    export_record,
    parse_annotations,
    problems,
    resolve_requests,
)
from memtrace.review.model import DECISIONS, Queue, QueueCase, ReviewInput, Saved
from memtrace.review.picture import case_svg
from memtrace.review.queues import LOW_CONFIDENCE, build_queues
from memtrace.review.store import ReviewStore
from memtrace.taxonomy import ANNOTATION_ONLY_TYPES, ERROR_TYPES, LabelType

LABEL_TYPES: tuple[LabelType, ...] = (*ERROR_TYPES, *ANNOTATION_ONLY_TYPES)
PAGE_VALUE_BUDGET = 4000  # characters per read / written value on a case page (long ones fold)


class Review:
    """One reviewer's session over one attribution run."""

    def __init__(
        self, db: Database, run_id: str, reviewer: str, threshold: float = LOW_CONFIDENCE
    ) -> None:
        patterns.require_run(db, run_id)
        if not reviewer.strip():
            raise ReviewError("a reviewer needs a name (--reviewer)")
        self.db = db
        self.run_id = run_id
        self.reviewer = reviewer
        self.threshold = threshold
        self.store = ReviewStore(db)
        self.attribution = AttributionStore(db)
        # The queue rows and classes of the run, read afresh by the start page and kept for the
        # case pages in between (1-2 s at 11,000 cases; docs/performance.md): this reviewer's
        # decisions are applied to them as they are written; the run's verdicts do not change.
        self._lock = threading.Lock()
        self._rows: tuple[list[QueueCase], list[tuple[str, list[tuple[str, str]]]]] | None = None
        self._saved: list[Saved] = []  # this session's decisions, newest last (undo pops)

    def queues(self, fresh: bool = False) -> tuple[list[QueueCase], list[Queue]]:
        """Every queue with its progress; ``fresh``: re-read the run (else the kept rows)."""
        with self._lock:
            if fresh or self._rows is None:
                self._rows = (self.store.queue_cases(self.run_id, self.reviewer), self._classes())
            cases, titled = self._rows
        return cases, build_queues(cases, titled, self.threshold)

    def _classes(self) -> list[tuple[str, list[tuple[str, str]]]]:
        classes = patterns.failure_classes(self.db, self.run_id)
        return [
            (
                f"{row['system']}: {row['op_name']} → {row['error_type']}"
                + (f" [{row['failure_mode']}]" if row.get("failure_mode") else "")
                + (f" (reads {', '.join(row['inputs'])})" if len(row["inputs"]) else ""),
                [(str(t), str(c)) for t, c in row["case_refs"]],
            )
            for row in classes.to_dict(orient="records")
        ]

    def _case(self, trace_id: str, case_id: str, budget: int) -> _Case:
        """The case with the operations a reviewer may pick: its candidates, plus whatever a
        run blamed (a judge may blame an op the candidate query did not reach)."""
        graph, trails, found = case_candidates(self.attribution, trace_id, case_id, Options())
        attributions = self.store.case_attributions(trace_id, case_id)
        blamed_by = {a["op_id"]: a["run_id"] for a in attributions if a["op_id"]}
        views = self.attribution.operation_views(
            trace_id, [*(c.op.id for c in found), *blamed_by], budget=budget
        )
        known = {c.op.id for c in found}
        extra = [
            Candidate(OpRef(v.id, v.seq, v.kind or "other", v.name or ""), f"blamed by {run}")
            for op_id, run in blamed_by.items()
            if op_id not in known and (v := views.get(op_id)) is not None
        ]
        candidates = tuple(sorted([*found, *extra], key=lambda c: (c.op.seq, c.op.id)))
        verdict = next((a for a in attributions if a["run_id"] == self.run_id), None)
        return _Case(graph, trails, candidates, attributions, verdict, views)

    def case_page(self, trace_id: str, case_id: str) -> CasePage:
        case = self._case(trace_id, case_id, PAGE_VALUE_BUDGET)
        graph, trails, candidates = case.graph, case.trails, case.candidates
        attributions, verdict, views = case.attributions, case.verdict, case.views
        blamed = verdict["op_id"] if verdict else None
        answer = graph.anchor.answer.id if graph.anchor.answer else None
        return CasePage(
            trace_id=trace_id,
            case_id=case_id,
            question=graph.anchor.question,
            golden_answers=graph.anchor.golden_answers,
            prediction=graph.anchor.prediction,
            verdict=verdict,
            others=[a for a in attributions if a["run_id"] != self.run_id],
            trails=trails,
            candidates=candidates,
            views=views,
            answer_op=answer,
            svg=case_svg(list(views.values()), blamed, answer),
            reviews=self.store.case_reviews(trace_id, case_id),
            browser_cypher=explain_cypher(
                trace_id,
                case_id,
                graph.anchor.answer.seq if graph.anchor.answer else 0,
                [e.id for e in graph.evidence],
            ),
        )

    def record(self, trace_id: str, case_id: str, given: ReviewInput) -> Saved:
        """Write one decision (and, for confirm / correct, the reviewer's label); a correction
        that changes nothing is stored as a confirm. Raises ``ReviewError`` and writes nothing
        when the decision does not fit the case."""
        if given.decision not in DECISIONS:
            known = ", ".join(DECISIONS)
            raise ReviewError(f"unknown decision {given.decision!r} (one of {known})")
        case = self._case(trace_id, case_id, budget=0)
        given = _as_confirm_if_unchanged(given, case.verdict)
        op_id, error_type, reason = _label_of(
            given, case.verdict, case.candidates, case.graph.anchor.answer
        )
        row = {
            "trace_id": trace_id,
            "case_id": case_id,
            "run_id": self.run_id,
            "at": None,
            "reason": reason,
            "review": {
                "id": uuid.uuid4().hex,
                "reviewer": self.reviewer,
                "decision": given.decision,
                "op_id": op_id,
                "error_type": error_type,
                "note": given.note,
            },
        }
        written = self.store.write_reviews([row])
        if not written:  # the case or op vanished between the check and the write
            raise ReviewError(f"case {case_id!r} of trace {trace_id!r} no longer resolves")
        with self._lock:
            if self._rows is not None:
                cases, titled = self._rows
                ref = (trace_id, case_id)
                decided = [replace(c, my_decision=given.decision) if c.ref == ref else c
                           for c in cases]  # fmt: skip
                self._rows = (decided, titled)
            saved = Saved(
                written[0]["review_id"], trace_id, case_id, given.decision, op_id, error_type
            )
            self._saved.append(saved)
        return saved

    def last_saved(self) -> Saved | None:
        with self._lock:
            return self._saved[-1] if self._saved else None

    def undo(self, review_id: str) -> Saved:
        """Take back this session's latest decision (``review_id`` must name it: a page open
        since an older save cannot undo a newer one); the case's label returns to the
        reviewer's previous decision on it, if any."""
        with self._lock:
            if not self._saved or self._saved[-1].review_id != review_id:
                raise ReviewError("only the latest decision of this session can be undone")
            undone = self._saved[-1]
            if self.store.undo_review(review_id, self.reviewer) is None:
                raise ReviewError(f"review {review_id!r} is no longer stored")
            self._saved.pop()
            self._rows = None  # the case's decision is the previous one again: re-read
        return undone


def _as_confirm_if_unchanged(given: ReviewInput, verdict: dict[str, Any] | None) -> ReviewInput:
    """A correction that names the verdict's own op and type changes nothing: it is a confirm."""
    if (
        given.decision == "correct"
        and verdict is not None
        and verdict["op_id"] is not None
        and (given.op_id, given.error_type) == (verdict["op_id"], verdict["error_type"])
    ):
        return replace(given, decision="confirm")
    return given


def _label_of(
    given: ReviewInput,
    verdict: dict[str, Any] | None,
    candidates: Sequence[Candidate],
    answer: Any,
) -> tuple[str | None, str | None, str]:
    """(op id, error type, label reason) of a decision, checked against the case."""
    if given.decision == "skip":
        return None, None, given.note
    if given.decision == "confirm":
        if verdict is None or verdict["op_id"] is None:
            raise ReviewError("nothing to confirm: this run blamed no operation of the case")
        return verdict["op_id"], verdict["error_type"], given.note or verdict["reason"] or ""
    if given.error_type not in LABEL_TYPES:
        raise ReviewError(
            f"unknown error type {given.error_type!r} (one of {', '.join(LABEL_TYPES)})"
        )
    if given.error_type in ANNOTATION_ONLY_TYPES:
        # not a memory failure: the label sits on the answer op, whose output was judged
        return answer.id if answer else None, given.error_type, given.note
    ids = {c.op.id for c in candidates}
    if given.op_id not in ids:
        raise ReviewError(f"operation {given.op_id!r} is not a candidate of this case")
    return given.op_id, given.error_type, given.note


@dataclass(frozen=True)
class _Case:
    graph: CaseGraph
    trails: tuple[Trail, ...]
    candidates: tuple[Candidate, ...]
    attributions: list[dict[str, Any]]
    verdict: dict[str, Any] | None  # the attribution of the run under review
    views: dict[str, OperationView]


@dataclass(frozen=True)
class CasePage:
    trace_id: str
    case_id: str
    question: str
    golden_answers: tuple[str, ...]
    prediction: str | None
    verdict: dict[str, Any] | None
    others: list[dict[str, Any]]
    trails: tuple[Trail, ...]
    candidates: tuple[Candidate, ...]
    views: dict[str, OperationView]
    answer_op: str | None
    svg: str
    reviews: list[dict[str, Any]]
    browser_cypher: str


def export_labels(
    db: Database, trace_id: str | None = None, reviewer: str | None = None
) -> list[dict[str, Any]]:
    """Every human label (each reviewer's latest) as a MemTraceBench annotation record."""
    return [export_record(label) for label in ReviewStore(db).human_labels(trace_id, reviewer)]


@dataclass(frozen=True)
class ImportResult:
    reviews: int
    labels: int


def import_annotations(
    db: Database, path: str, lines: Sequence[str], reviewer: str
) -> ImportResult:
    """Import annotation lines as human reviews and labels, all or nothing: any id that does not
    resolve raises ``ReviewError`` listing every one, and nothing is written."""
    annotations = parse_annotations(path, lines)
    if not annotations:
        raise ReviewError(f"{path}: no annotations")
    store = ReviewStore(db)
    resolved = store.resolve_annotations(resolve_requests(annotations))
    found = problems(path, annotations, resolved)
    if found:
        raise ReviewError(
            f"{len(found)} id(s) do not resolve, nothing imported:\n" + "\n".join(found)
        )
    rows = [_import_row(a, r, reviewer) for a, r in zip(annotations, resolved, strict=True)]
    written = store.write_reviews(rows)
    if len(written) != len(rows):  # a trace deleted mid-import; the written rows stay
        raise MemtraceError(f"{len(rows) - len(written)} annotation(s) no longer resolved")
    return ImportResult(len(written), sum(int(w["labeled"]) for w in written))


def _import_row(annotation: Annotation, resolved: dict[str, Any], reviewer: str) -> dict[str, Any]:
    op_id = annotation.op_id or resolved["answer_op"]
    return {
        "trace_id": resolved["trace_id"],
        "case_id": resolved["case_id"],
        "run_id": None,
        "at": annotation.saved_at,
        "reason": annotation.reason or "",
        "review": {
            "id": uuid.uuid4().hex,
            "reviewer": annotation.reviewer or reviewer,
            "decision": "correct",
            "op_id": op_id,
            "error_type": annotation.error_type,
            "note": annotation.reason or "",
            **({"edge_id": annotation.edge_id} if annotation.edge_id else {}),
        },
    }


@dataclass(frozen=True)
class Agreement:
    judges: pd.DataFrame  # agreement.JUDGE_COLUMNS
    reviewers: pd.DataFrame  # agreement.KAPPA_COLUMNS
    labels: int


def agreement_figures(db: Database, trace_id: str | None = None) -> Agreement:
    labels = ReviewStore(db).human_labels(trace_id, None)
    if not labels:
        raise MemtraceError("no human labels yet: review cases with `memtrace review`")
    return Agreement(
        agreement.judge_agreement(labels), agreement.reviewer_agreement(labels), len(labels)
    )
