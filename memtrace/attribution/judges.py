"""Counterfactual checks. A judge answers, for one candidate operation of one case:

* ``check``: is the op's output faulty for its role, and would correcting it (earlier ops
  unchanged, later ones ideal) have rescued the answer (decisive)? With which error type?
* ``intact_after``: is all the evidence the answer needs still on track after this op?
  (Monotone along the candidates in execution order, which is what binary search needs.)

The offline judge decides from the lexical evidence trails (``trails.py``); the LLM judge
(``llm_judge.py``) asks a model with the operation's subgraph view. Judges are pure: the
pipeline hands them everything they look at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Final, Literal, Protocol

from memtrace.attribution.answer_model import Selection, rescues, restored, selection
from memtrace.attribution.model import Candidate, CaseGraph, Check, OperationView, Trail
from memtrace.attribution.trails import Stale, stale_memories
from memtrace.reading import LEXICAL, Reader
from memtrace.taxonomy import ErrorType
from memtrace.usage import Usage

# What an offline verdict rests on, and how often executed counterfactuals confirmed a verdict
# resting on it: its confidence. Measured against the label (the paper's: where what the answer
# needs was first lost, every later step ideal, the answer step included; counterfactual.py) on
# the natural failures of the four reference systems, LoCoMo conversation 1, the cases whose
# evidence holds the gold answer (`benchmarks/label_definitions.py`; docs/attribution.md
# "Reading confidence"). Against the replay label before issue 38 (what the real answerer does)
# a trail ending at a retrieval op was confirmed 1 time in 65: that label measured the lexical
# answerers' weakness, not where the evidence was lost.
Basis = Literal[
    "stale memory",  # the answer followed a memory the evidence contradicts (not yet observed)
    "evidence reached the answer",  # every sentence followed reached the answer's context
    "lost in store",  # a trail ends at a storing op (extraction, update, deletion)
    "lost at retrieval",  # stored and live, but not in the answer's context
]
CONFIDENCE: Final[dict[Basis, float]] = {
    "stale memory": 0.5,  # none observed: a prior
    "evidence reached the answer": 0.97,  # 135 of 139
    "lost in store": 0.99,  # 92 of 93
    "lost at retrieval": 0.91,  # 78 of 86
}
CONFIDENCE_PASSED = 0.9  # a candidate the evidence passed through (not a verdict)
# A verdict resting on a trail the reader could not tell (a meaning similarity in its blind band,
# ``memtrace.reading.meaning``): whatever its basis, it is a guess, and says so.
CONFIDENCE_UNSURE = 0.3
# A verdict resting on no trail at all (no evidence message the trace holds, no message to find
# one in): the answer is blamed because nothing else can be, which says nothing about it. Not
# measured (there is nothing to replay against); below every measured basis, so the review
# queue takes it first.
CONFIDENCE_NO_TRAIL = 0.1
NO_TRAIL = (
    "no evidence trail could start (the case's evidence is in no message of the trace, and no "
    "message holds its answer), so nothing upstream could be followed: the answer is blamed "
    "only because it wrote the wrong answer"
)


@dataclass(frozen=True)
class CaseView:
    """One case as a judge sees it; ``operations`` holds the candidates' views (op id -> view)
    when the judge ``reads_operations``."""

    graph: CaseGraph
    trails: tuple[Trail, ...]
    operations: Mapping[str, OperationView] = field(default_factory=dict)
    reader: Reader = LEXICAL  # what the trails were read with (the hybrid judge asks beyond it)

    @property
    def lost(self) -> list[Trail]:
        """Trails of needed evidence that stopped before the answer's context."""
        return [t for t in self.trails if t.needed and t.stop is not None and t.stage != "context"]

    @cached_property
    def unquoted(self) -> Selection | None:
        """Set when restoring what was lost would not make *your* answer right: its step quotes
        the context items that best match the question (``answer_model``, checked on this case),
        and with the restored items those would still not hold the gold answer. Said beside the
        verdict, never deciding it: the label's answer step is ideal (``counterfactual.py``)."""
        lost = self.lost
        found = selection(self.graph) if lost else None
        if found is None:
            return None
        anchor = self.graph.anchor
        back = [restored(self.graph, trail) for trail in lost]
        return (
            None
            if rescues(found, anchor.question, back, " ".join(anchor.golden_answers))
            else found
        )

    @cached_property
    def stale(self) -> list[Stale]:
        """Trails whose answer followed a stale memory (failure mode ``stale-memory``)."""
        return stale_memories(self.graph, self.trails)

    def is_answer(self, candidate: Candidate) -> bool:
        answer = self.graph.anchor.answer
        return answer is not None and candidate.op.id == answer.id


class Judge(Protocol):
    name: str
    model: str | None
    reads_operations: bool  # the pipeline fetches the candidates' operation views for it

    def check(self, view: CaseView, candidate: Candidate) -> tuple[Check, Usage]: ...

    def intact_after(self, view: CaseView, candidate: Candidate) -> tuple[bool, Usage]: ...


def followed(trails: Sequence[Trail]) -> str:
    """Which sentences were followed and where each stopped, as a reason states it."""
    return "; ".join(_where_it_went(trail) for trail in trails)


def _where_it_went(trail: Trail) -> str:
    if trail.role == "key":
        sentence = f"key sentence {trail.key_sentence!r} of {trail.message_id}"
    else:
        words = ", ".join(map(repr, trail.answer_words))
        sentence = f"sentence {trail.key_sentence!r} of {trail.message_id} (gold answer: {words})"
    if trail.stage == "context":
        return f"{sentence} {trail.detail}"  # reached it, or a copy from another message did
    at = f" at {trail.stop.name or trail.stop.kind} {trail.stop.id}" if trail.stop else ""
    spared = "" if trail.needed else " (its gold-answer words are in the context all the same)"
    return f"{sentence} stopped{at}: {trail.detail}{spared}"


class OfflineJudge:
    """No LLM: the evidence trails say where each key sentence stopped."""

    name = "offline"
    model: str | None = None
    reads_operations = False

    def check(self, view: CaseView, candidate: Candidate) -> tuple[Check, Usage]:
        check, usage = self._check(view, candidate)
        unsure = [t for t in view.trails if not t.sure]
        if not (check.faulty and unsure):
            return check, usage
        told = ", ".join(f"{t.key_sentence!r} of {t.message_id}" for t in unsure)
        reason = f"{check.reason}; the reader could not tell where {told} went"
        confidence = min(check.confidence, CONFIDENCE_UNSURE)
        return replace(check, reason=reason, confidence=confidence), usage

    def _check(self, view: CaseView, candidate: Candidate) -> tuple[Check, Usage]:
        for stale in view.stale:
            if stale.superseding.id == candidate.op.id:
                trail = stale.trail
                error_type: ErrorType
                if trail.stage == "context":
                    error_type, reason = "UpdateError", stale.reason
                else:
                    error_type = "ExtractionError"
                    reason = f"key sentence {trail.key_sentence!r} of {trail.message_id}: "
                    reason += f"{trail.detail}; {stale.reason}"
                check = Check(True, True, error_type, reason, CONFIDENCE["stale memory"])
                return replace(check, failure_mode="stale-memory"), Usage()
        if view.is_answer(candidate):
            if not view.trails:
                return Check(True, True, "ResponseError", NO_TRAIL, CONFIDENCE_NO_TRAIL), Usage()
            if view.lost:  # the label's answer step is ideal: given the evidence, it is right
                reason = (
                    "the context lacked evidence, so the answer could not be right: "
                    + followed(view.lost)
                )
                return Check(False, False, None, reason, CONFIDENCE_PASSED), Usage()
            reason = (
                "the answer is wrong although the evidence followed did not stop before its "
                f"context: {followed(view.trails)}"
            )
            basis: Basis = "evidence reached the answer"
            return Check(True, True, "ResponseError", reason, CONFIDENCE[basis]), Usage()
        stopped = [t for t in view.lost if t.stop is not None and t.stop.id == candidate.op.id]
        if not stopped:
            return Check(
                False, False, None, "the evidence passed through", CONFIDENCE_PASSED
            ), Usage()
        others = [t for t in view.trails if t not in stopped]
        reason = followed(stopped) + (f"; also followed: {followed(others)}" if others else "")
        if view.unquoted is not None:  # what your answerer would do, beside the label
            reason += f"; with your answerer: {_unquoted(view.unquoted)}"
        basis = (
            "lost at retrieval" if stopped[0].error_type == "RetrievalError" else "lost in store"
        )
        return Check(True, True, stopped[0].error_type, reason, CONFIDENCE[basis]), Usage()

    def intact_after(self, view: CaseView, candidate: Candidate) -> tuple[bool, Usage]:
        if view.is_answer(candidate):
            return False, Usage()  # a failed case: the answer op's output is wrong
        seq = candidate.op.seq
        intact = all(t.stop is None or t.stop.seq > seq for t in view.lost)
        return intact and all(s.superseding.seq > seq for s in view.stale), Usage()


def _unquoted(found: Selection) -> str:
    return (
        f"the answer quotes the {found.quoted} context item(s) that best match the question; "
        "with what the lost evidence would restore, those would still not hold the gold answer"
    )
