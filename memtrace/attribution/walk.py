"""Search strategies over the candidates: linear (earliest first) and binary search."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, get_args, runtime_checkable

from memtrace.attribution.judges import CaseView, Judge
from memtrace.attribution.model import Candidate, Check
from memtrace.errors import JudgeError, LLMError
from memtrace.taxonomy import ErrorType, default_error_type
from memtrace.usage import Usage

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
    overridden_from: Candidate | None = None  # set by the hybrid judge when the LLM moved it
    overridden_type: ErrorType | None = None
    replays: int = 0  # executed counterfactuals run (the replay judge)
    outcomes: str | None = None  # the replay judge's per-candidate outcomes, JSON


@runtime_checkable
class DecidingJudge(Protocol):
    """A judge that decides a whole case itself (the hybrid judge), instead of being walked."""

    def decide(
        self, strategy: Strategy, view: CaseView, candidates: Sequence[Candidate]
    ) -> Found: ...


class _Spending:
    """What a walk has spent and checked so far; a judge's failure carries both on."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.checked: list[str] = []

    def check(self, judge: Judge, view: CaseView, candidate: Candidate) -> Check:
        self.checked.append(candidate.op.id)
        try:
            check, spent = judge.check(view, candidate)
        except LLMError as exc:
            raise self._failed(exc) from exc
        self.usage = self.usage + spent
        return check

    def intact_after(self, judge: Judge, view: CaseView, candidate: Candidate) -> bool:
        self.checked.append(candidate.op.id)
        try:
            intact, spent = judge.intact_after(view, candidate)
        except LLMError as exc:
            raise self._failed(exc) from exc
        self.usage = self.usage + spent
        return intact

    def _failed(self, exc: LLMError) -> JudgeError:
        spent = self.usage + (exc.usage or Usage())
        return JudgeError(str(exc), usage=spent, checked=list(self.checked))


def _answer_fallback(
    view: CaseView, candidates: Sequence[Candidate], spending: _Spending, why: str
) -> Found:
    """No candidate was found decisive, yet the case failed: its answer op's output is wrong by
    definition, so blame it (as the offline judge does), with no confidence."""
    answer = next((c for c in candidates if view.is_answer(c)), None)
    if answer is None:
        return Found(None, None, why, 0.0, spending.usage, spending.checked)
    reason = f"{why}; the answer op is blamed as the failed case's last step"
    return Found(answer, "ResponseError", reason, 0.0, spending.usage, spending.checked)


def linear(judge: Judge, view: CaseView, candidates: Sequence[Candidate]) -> Found:
    """Check candidates in execution order; the first faulty and decisive one is the answer."""
    spending = _Spending()
    for candidate in candidates:
        check = spending.check(judge, view, candidate)
        if check.faulty and check.decisive:
            error_type = check.error_type or default_error_type(candidate.op.kind)
            return Found(
                candidate,
                error_type,
                check.reason,
                check.confidence,
                spending.usage,
                spending.checked,
            )
    return _answer_fallback(
        view, candidates, spending, "no candidate was judged faulty and decisive"
    )


def binary(judge: Judge, view: CaseView, candidates: Sequence[Candidate]) -> Found:
    """Find the first candidate after which the evidence is no longer intact: O(log n) checks.

    Valid because "intact after op i" can only turn from true to false along execution order
    (a lost sentence does not come back when later ops are assumed ideal).
    """
    spending = _Spending()
    low, high = 0, len(candidates) - 1
    first_broken: int | None = None
    while low <= high:
        middle = (low + high) // 2
        if spending.intact_after(judge, view, candidates[middle]):
            low = middle + 1
        else:
            first_broken = middle
            high = middle - 1
    if first_broken is None:
        return _answer_fallback(
            view, candidates, spending, "the evidence stayed intact through every candidate"
        )
    candidate = candidates[first_broken]
    check = spending.check(judge, view, candidate)
    error_type = check.error_type or default_error_type(candidate.op.kind)
    return Found(
        candidate, error_type, check.reason, check.confidence, spending.usage, spending.checked
    )


Walk = Callable[[Judge, CaseView, Sequence[Candidate]], Found]
STRATEGIES: Final[dict[Strategy, Walk]] = {"linear": linear, "binary": binary}


def search(
    strategy: Strategy, judge: Judge, view: CaseView, candidates: Sequence[Candidate]
) -> Found:
    if isinstance(judge, DecidingJudge):
        return judge.decide(strategy, view, candidates)
    return STRATEGIES[strategy](judge, view, candidates)
