"""Search strategies over the candidates: linear (earliest first) and binary search."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from memtrace.attribution.judges import CaseView, Judge
from memtrace.attribution.model import Candidate
from memtrace.llm import Usage
from memtrace.taxonomy import ErrorType, default_error_type

Strategy = Literal["linear", "binary"]
STRATEGY_NAMES: Final[tuple[Strategy, ...]] = get_args(Strategy)


@dataclass
class Found:
    candidate: Candidate | None
    error_type: ErrorType | None
    reason: str
    confidence: float
    usage: Usage = field(default_factory=Usage)
    checked: list[str] = field(default_factory=list)


def linear(judge: Judge, view: CaseView, candidates: Sequence[Candidate]) -> Found:
    """Check candidates in execution order; the first faulty and decisive one is the answer."""
    usage = Usage()
    checked: list[str] = []
    for candidate in candidates:
        check, spent = judge.check(view, candidate)
        usage = usage + spent
        checked.append(candidate.op.id)
        if check.faulty and check.decisive:
            error_type = check.error_type or default_error_type(candidate.op.kind)
            return Found(candidate, error_type, check.reason, check.confidence, usage, checked)
    return Found(None, None, "no candidate was judged faulty and decisive", 0.0, usage, checked)


def binary(judge: Judge, view: CaseView, candidates: Sequence[Candidate]) -> Found:
    """Find the first candidate after which the evidence is no longer intact: O(log n) checks.

    Valid because "intact after op i" can only turn from true to false along execution order
    (a lost sentence does not come back when later ops are assumed ideal).
    """
    usage = Usage()
    checked: list[str] = []
    low, high = 0, len(candidates) - 1
    first_broken: int | None = None
    while low <= high:
        middle = (low + high) // 2
        intact, spent = judge.intact_after(view, candidates[middle])
        usage = usage + spent
        checked.append(candidates[middle].op.id)
        if intact:
            low = middle + 1
        else:
            first_broken = middle
            high = middle - 1
    if first_broken is None:
        return Found(None, None, "the evidence stayed intact through every candidate", 0.0, usage)
    candidate = candidates[first_broken]
    check, spent = judge.check(view, candidate)
    checked.append(candidate.op.id)
    error_type = check.error_type or default_error_type(candidate.op.kind)
    return Found(candidate, error_type, check.reason, check.confidence, usage + spent, checked)


Walk = Callable[[Judge, CaseView, Sequence[Candidate]], Found]
STRATEGIES: Final[dict[Strategy, Walk]] = {"linear": linear, "binary": binary}


def search(
    strategy: Strategy, judge: Judge, view: CaseView, candidates: Sequence[Candidate]
) -> Found:
    return STRATEGIES[strategy](judge, view, candidates)
