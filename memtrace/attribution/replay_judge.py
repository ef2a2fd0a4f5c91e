"""The replay judge: the executed label instead of a judgement (``counterfactual.py``).

It gets its replayers passed in (``Replayers``: one ``CaseReplayer`` per trace, e.g.
``memtrace.replay.graph.LoadedTraces``), as the LLM judge gets its client. It decides a whole
case itself: every non-answer candidate is a suspect, repaired and replayed; the answer op always
runs for real. Its cost is counted in replays; the per-candidate outcomes (decisive, fix alone,
what each repair restored) go on the verdict as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from memtrace.attribution.counterfactual import CaseReplayer, Suspect, executed_label
from memtrace.attribution.judges import CaseView
from memtrace.attribution.model import Candidate, Check, OpRef
from memtrace.attribution.walk import Found, Strategy
from memtrace.reading.lexical import content_words, holds
from memtrace.usage import Usage

CONFIDENCE_EXECUTED = 1.0  # a replay is an observation, not an estimate


def _rewriters(view: CaseView) -> list[OpRef]:
    """Ops that deleted a memory version holding a key sentence before the answer, or rewrote
    it into a version that no longer holds it. The Cypher candidates follow flows; an in-place
    update records no flow from the fact it merged into the memory, so a later overwrite of
    that memory can be off every trail."""
    cutoff = view.graph.anchor.answer.seq if view.graph.anchor.answer else 2**62
    by_id = {m.id: m for m in view.graph.memories}
    found: dict[str, OpRef] = {}
    for trail in view.trails:
        words = content_words(trail.key_sentence)
        for memory in view.graph.memories:
            if memory.seq >= cutoff or not holds(words, [memory.value]):
                continue
            successor = by_id.get(memory.next_id) if memory.next_id else None
            lost = successor is not None and not holds(words, [successor.value])
            for op in (memory.next_creator if lost else None, memory.deleted_by):
                if op is not None and 0 <= op.seq < cutoff:
                    found.setdefault(op.id, op)
    return list(found.values())


def _suspects(view: CaseView, candidates: Sequence[Candidate]) -> list[Suspect]:
    """The Cypher candidates plus ``_rewriters``, in execution order."""
    ops = {c.op.id: c.op for c in candidates}
    for op in _rewriters(view):
        ops.setdefault(op.id, op)
    return [Suspect(op.id, op.kind) for op in sorted(ops.values(), key=lambda op: op.seq)]


class Replayers(Protocol):
    def for_trace(self, trace_id: str) -> CaseReplayer: ...


class ReplayJudge:
    name = "replay"
    model: str | None = None
    reads_operations = False

    def __init__(self, replayers: Replayers) -> None:
        self.replayers = replayers  # shared by the case workers: each replays on its own

    def check(self, view: CaseView, candidate: Candidate) -> tuple[Check, Usage]:
        raise NotImplementedError("the replay judge decides whole cases (decide)")

    def intact_after(self, view: CaseView, candidate: Candidate) -> tuple[bool, Usage]:
        raise NotImplementedError("the replay judge decides whole cases (decide)")

    def decide(self, strategy: Strategy, view: CaseView, candidates: Sequence[Candidate]) -> Found:
        anchor = view.graph.anchor
        answer = anchor.answer.id if anchor.answer else None
        suspects = _suspects(view, candidates)
        replayer = self.replayers.for_trace(anchor.trace_id)
        label = executed_label(replayer, anchor.case_id, suspects, answer)
        by_id = {c.op.id: c for c in candidates}
        by_id.update(
            {
                op.id: Candidate(op, "rewrote a holder")
                for op in _rewriters(view)
                if op.id not in by_id
            }
        )
        blamed = by_id.get(label.op_id) if label.op_id else None
        return Found(
            blamed,
            label.error_type,
            f"replay ({label.status}): {label.reason}",
            CONFIDENCE_EXECUTED if blamed else 0.0,
            Usage(),
            [c.op.id for c in candidates],
            replays=label.replays,
            outcomes=json.dumps(label.as_dict(), separators=(",", ":")),
        )
