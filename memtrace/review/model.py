"""The review package's plain data: queue rows, queues, a reviewer's decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

from memtrace.taxonomy import LabelType

# confirm: the verdict is right; correct: another op and / or type (or a non-memory label);
# skip: not now (recorded, changes no label).
Decision = Literal["confirm", "correct", "skip"]
DECISIONS: Final[tuple[Decision, ...]] = get_args(Decision)


@dataclass(frozen=True)
class OtherBlame:
    run_id: str
    judge: str | None
    op_id: str


@dataclass(frozen=True)
class QueueCase:
    """One attributed case of the run under review (a row of ``queue_cases.cypher``)."""

    trace_id: str
    case_id: str
    system: str | None
    question: str | None
    op_id: str | None
    op_name: str | None
    error_type: str | None
    confidence: float | None
    judge: str | None
    error: str | None
    other_blames: tuple[OtherBlame, ...]
    my_decision: Decision | None  # the reviewer's latest decision; None: not reviewed by them
    reviewers: int

    @property
    def ref(self) -> tuple[str, str]:
        return (self.trace_id, self.case_id)


@dataclass(frozen=True)
class Queue:
    key: str  # in URLs: all, low-confidence, disagree, class-1, ...
    title: str
    cases: tuple[tuple[str, str], ...]  # (trace_id, case_id), in review order
    done: int  # cases the reviewer has decided (confirm / correct; a skip is not done)


@dataclass(frozen=True)
class ReviewInput:
    """What a reviewer decided about one case."""

    decision: Decision
    op_id: str | None
    error_type: LabelType | None
    note: str = ""


@dataclass(frozen=True)
class HumanLabel:
    """A reviewer's latest label of a case (a row of ``human_labels.cypher``)."""

    trace_id: str
    case_id: str
    query_id: str | None
    reviewer: str
    at: str | None
    op_id: str
    op_name: str | None
    error_type: str
    reason: str | None
    evidence_ids: tuple[str, ...]
    attributions: tuple[dict[str, str | None], ...]  # {run_id, judge, op_id, op_name, error_type}


@dataclass(frozen=True)
class Saved:
    """A decision this session wrote, as the saved-state line shows it and undo takes it back."""

    review_id: str
    trace_id: str
    case_id: str
    decision: Decision
    op_id: str | None
    error_type: str | None
