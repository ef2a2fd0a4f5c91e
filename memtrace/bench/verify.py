"""Re-execution checks that make injected labels correct by construction.

A fault is kept only if (1) with all faults planted its target fails, the fault was applied and
the target's evidence trail ends at the fault's kind of operation, and (2) replaying the
conversation with every other fault but this one, the target is judged correct again
(the fault is decisive). Runs are untraced; they are deterministic, so the final traced run
behaves the same.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from memtrace.systems.core import Backend, ConversationRun, Fault, QuestionResult
from memtrace.systems.locomo import Conversation
from memtrace.systems.registry import make_system


def run(
    system: str,
    backend: Backend,
    conv: Conversation,
    faults: Sequence[Fault],
    only: Collection[str] | None = None,
) -> ConversationRun:
    return make_system(system, backend, faults=faults).run(conv, only)


def trail_matches(result: QuestionResult, fault: Fault, op_id: str | None = None) -> bool:
    """The evidence trail of a failed question points at ``fault`` (at ``op_id`` if given)."""
    if fault.type == "ResponseError":
        return not result.missing and (op_id is None or result.qa_op == op_id)
    return bool(result.missing) and all(
        loss is not None and loss.type == fault.type and op_id in (None, loss.op_id)
        for loss in result.missing.values()
    )


@dataclass(slots=True)
class Verified:
    faults: list[Fault]
    combined: dict[str, QuestionResult] = field(default_factory=dict)
    without: dict[str, dict[str, QuestionResult]] = field(default_factory=dict)  # fault id ->


def precheck(system: str, backend: Backend, conv: Conversation, fault: Fault) -> bool:
    """The fault alone breaks its target, at the expected kind of operation."""
    result = run(system, backend, conv, [fault], only={fault.target})
    (target,) = result.results
    applied = any(a.fault_id == fault.id for a in result.applied)
    return applied and not target.passed and trail_matches(target, fault)


def verify(
    system: str,
    backend: Backend,
    conv: Conversation,
    faults: list[Fault],
    baseline: dict[str, QuestionResult],
) -> Verified:
    """Drop faults that fail the checks until every remaining one passes them together."""
    while True:
        combined_run = run(system, backend, conv, faults)
        combined = {r.case_id: r for r in combined_run.results}
        applied = {a.fault_id for a in combined_run.applied}
        broken = {c for c, r in combined.items() if not r.passed and baseline[c].passed}
        without: dict[str, dict[str, QuestionResult]] = {}
        kept = []
        for fault in faults:
            target = combined[fault.target]
            if fault.id not in applied or target.passed or not trail_matches(target, fault):
                continue
            others = [f for f in faults if f.id != fault.id]
            replay = run(system, backend, conv, others, only=broken)
            without[fault.id] = {r.case_id: r for r in replay.results}
            if without[fault.id][fault.target].passed:
                kept.append(fault)
        if len(kept) == len(faults):
            return Verified(kept, combined, without)
        faults = kept
