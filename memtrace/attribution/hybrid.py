"""The hybrid judge: Cypher candidates and the offline trail analysis propose, an LLM checks.

The offline walk names an operation and an error type. The LLM is then asked the counterfactual
question (``check``: faulty? decisive?) for that operation and for its nearest rivals, the
candidates just before and just after it in execution order. It may move the verdict only with a
decisive, well-formed answer:

* to a rival, when the LLM judges the proposal not (faulty and decisive) and judges the rival
  faulty and decisive with every field answered and confidence >= ``OVERRIDE_CONFIDENCE``
  (the earliest such rival: the earliest decisive fault is what is asked for);
* to another error type at the proposed op, when it confirms the op with such an answer and
  names a type of the op's own stage (an update op can be an UpdateError or a DeletionError, not
  an ExtractionError).

Before that, where the trails rest on a reading the reader could not tell (``Trail.sure``), the
model is asked exactly that question, whether the memory or context holds what the sentence
says (``asking.py``, one question per case), and the offline walk proposes from trails read
with its answer.

Anything else (a failed request, an invalid reply, a hedge, a model that says the same thing of
every op) leaves the offline verdict standing, so an uninformative model cannot make accuracy
worse than no model. Every override is recorded on the verdict (``overridden_from``,
``overridden_type``) with the LLM's reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from memtrace.attribution.asking import AskingReader
from memtrace.attribution.judges import CaseView, Judge, OfflineJudge
from memtrace.attribution.model import Candidate, Check
from memtrace.attribution.trails import candidates as trail_candidates
from memtrace.attribution.trails import trace_all
from memtrace.attribution.walk import Found, Strategy, search
from memtrace.errors import LLMError
from memtrace.taxonomy import ERROR_TYPE_KIND, ErrorType, default_error_type, stage_of
from memtrace.usage import Usage

if TYPE_CHECKING:  # the judge is handed a client; it never opens a connection itself
    from memtrace.llm import LLMClient

OVERRIDE_CONFIDENCE = 0.7
RIVALS_EACH_SIDE = 1
READING_QUESTIONS = 1  # per case: with the proposal and its two rivals, 4 calls at most


def decisive(check: Check) -> bool:
    """A well-formed, confident 'faulty and decisive'."""
    return (
        check.faulty
        and check.decisive
        and check.complete
        and check.confidence >= OVERRIDE_CONFIDENCE
    )


def rivals(candidates: Sequence[Candidate], proposed: Candidate) -> list[Candidate]:
    """The candidates nearest the proposal in execution order, earlier ones first."""
    index = next(i for i, c in enumerate(candidates) if c.op.id == proposed.op.id)
    before = candidates[max(0, index - RIVALS_EACH_SIDE) : index]
    after = candidates[index + 1 : index + 1 + RIVALS_EACH_SIDE]
    return [*before, *after]


class HybridJudge:
    """Offline proposes, the LLM judge (``llm``) checks the proposal and its nearest rivals."""

    name = "hybrid"
    reads_operations = True

    def __init__(
        self, llm: Judge, offline: Judge | None = None, client: LLMClient | None = None
    ) -> None:
        self.llm = llm
        self.offline = offline or OfflineJudge()
        self.model = llm.model
        self.client = client  # asked what the reader cannot tell; None: nothing is asked

    def _read_again(
        self, view: CaseView, candidates: Sequence[Candidate]
    ) -> tuple[CaseView, Sequence[Candidate], Usage]:
        """The view and candidates with the trails read again, the model asked what the
        reader could not tell (unchanged when every reading was sure or nothing was asked)."""
        if self.client is None or all(t.sure for t in view.trails):
            return view, candidates, Usage()
        asking = AskingReader(self.client, view.reader, READING_QUESTIONS)
        trails = tuple(trace_all(view.graph, asking))
        if not asking.asked:
            return view, candidates, asking.usage
        again = CaseView(view.graph, trails, view.operations, view.reader)
        return again, trail_candidates(view.graph, trails), asking.usage

    # The per-candidate questions are the LLM's (a walk over the hybrid judge asks the model).
    def check(self, view: CaseView, candidate: Candidate) -> tuple[Check, Usage]:
        return self.llm.check(view, candidate)

    def intact_after(self, view: CaseView, candidate: Candidate) -> tuple[bool, Usage]:
        return self.llm.intact_after(view, candidate)

    def decide(self, strategy: Strategy, view: CaseView, candidates: Sequence[Candidate]) -> Found:
        view, candidates, asked = self._read_again(view, candidates)
        proposal = search(strategy, self.offline, view, candidates)
        proposal = replace(proposal, usage=proposal.usage + asked)
        if proposal.candidate is None:
            return proposal
        usage = proposal.usage
        checked = list(proposal.checked)
        checks: dict[str, Check] = {}
        for candidate in [proposal.candidate, *rivals(candidates, proposal.candidate)]:
            checked.append(candidate.op.id)
            try:
                check, spent = self.llm.check(view, candidate)
            except LLMError as exc:
                usage = usage + (exc.usage or Usage())
                return self._kept(proposal, usage, checked, f"LLM check failed: {exc}")
            usage = usage + spent
            checks[candidate.op.id] = check
        mine = checks[proposal.candidate.op.id]
        if decisive(mine):
            retyped = self._retype(proposal, mine)
            if retyped is not None:
                return Found(
                    proposal.candidate,
                    retyped,
                    f"LLM: {mine.reason}",
                    mine.confidence,
                    usage,
                    checked,
                    overridden_from=proposal.candidate,
                    overridden_type=proposal.error_type,
                )
            return self._kept(proposal, usage, checked, "LLM agrees")
        if not (mine.faulty and mine.decisive):
            for rival in rivals(candidates, proposal.candidate):
                check = checks[rival.op.id]
                if decisive(check):
                    return Found(
                        rival,
                        check.error_type or default_error_type(rival.op.kind),
                        f"LLM: {check.reason}",
                        check.confidence,
                        usage,
                        checked,
                        overridden_from=proposal.candidate,
                        overridden_type=proposal.error_type,
                    )
        return self._kept(proposal, usage, checked, "LLM gave no decisive rival")

    @staticmethod
    def _retype(proposal: Found, check: Check) -> ErrorType | None:
        """A different type the LLM names for the proposed op, if it fits the op's stage."""
        named = check.error_type
        assert proposal.candidate is not None
        if named is None or named == proposal.error_type:
            return None
        kind = proposal.candidate.op.kind
        proposed_kind = ERROR_TYPE_KIND[default_error_type(kind)]
        if stage_of(proposed_kind) != stage_of(ERROR_TYPE_KIND[named]):
            return None
        return named

    @staticmethod
    def _kept(proposal: Found, usage: Usage, checked: list[str], note: str) -> Found:
        return Found(
            proposal.candidate,
            proposal.error_type,
            f"{proposal.reason} (offline; {note})",
            proposal.confidence,
            usage,
            checked,
            failure_mode=proposal.failure_mode,
        )
