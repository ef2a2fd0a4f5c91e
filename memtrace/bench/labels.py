"""Labels for the final traced run: injected (verified faults), collateral, derived."""

from __future__ import annotations

from typing import Any

from memtrace.bench.verify import Verified, trail_matches
from memtrace.systems.core import Applied, Fault, Loss, QuestionResult

REASONS = {
    "ExtractionError": "the extraction left out the evidence sentence, so no memory held it",
    "UpdateError": "an update overwrote the only memories holding the evidence",
    "DeletionError": "an update decision deleted the memories holding the evidence",
    "RetrievalError": "the evidence was stored but the search left it out of the context",
    "ResponseError": "the context held all evidence but the answer ignored it",
}
# Where a system's stage works differently from mem0's, its reason says how.
SYSTEM_REASONS = {
    ("rag", "RetrievalError"): "the chunk holding the evidence was stored but left out of the "
    "retrieved top-k",
    ("long-context", "UpdateError"): "a window update trimmed the evidence message out of the "
    "context window",
}


def reason(system: str, error_type: str) -> str:
    return SYSTEM_REASONS.get((system, error_type), REASONS[error_type])


def label(error_type: str, op_id: str, reason: str, source: str, **meta: Any) -> dict[str, Any]:
    return {
        "op_id": op_id,
        "error_type": error_type,
        "reason": reason,
        "source": source,
        "metadata": meta,
    }


def injected_labels(
    verified: Verified, results: dict[str, QuestionResult], applied: list[Applied], system: str
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Labels by case id, and the ids of faults whose label failed the final check."""
    ops = {a.fault_id: a for a in applied}
    labels: dict[str, dict[str, Any]] = {}
    dropped = []
    for fault in verified.faults:
        target = results[fault.target]
        done = ops.get(fault.id)
        if done is None or target.passed or not trail_matches(target, fault, done.op_id):
            dropped.append(fault.id)
            continue
        labels[fault.target] = _injected(fault, done, system, collateral=False)
    for case_id, result in results.items():  # other questions one fault alone broke
        if case_id in labels or result.passed or case_id not in verified.combined:
            continue
        rescuers = [f for f in verified.faults if _rescued(verified, f, case_id)]
        if len(rescuers) == 1 and rescuers[0].id in ops:
            fault = rescuers[0]
            if trail_matches(result, fault, ops[fault.id].op_id):
                labels[case_id] = _injected(fault, ops[fault.id], system, collateral=True)
    return labels, dropped


def _rescued(verified: Verified, fault: Fault, case_id: str) -> bool:
    replay = verified.without.get(fault.id, {}).get(case_id)
    return replay is not None and replay.passed


def _injected(fault: Fault, applied: Applied, system: str, collateral: bool) -> dict[str, Any]:
    return label(
        fault.type,
        applied.op_id,
        reason(system, fault.type),
        "injected",
        fault_id=fault.id,
        planted_for=fault.target,
        anchor=fault.anchor,
        collateral=collateral,
        detail=applied.detail,
        evidence_keys=sorted(fault.sources),
    )


def natural_loss(result: QuestionResult) -> Loss | None:
    """The single operation where a natural failure lost its evidence, if the trail says so."""
    if result.passed or not result.keys:
        return None
    if not result.missing:
        return Loss("ResponseError", result.qa_op)
    losses = set()
    for loss in result.missing.values():
        if loss is None:
            return None
        losses.add((loss.type, loss.op_id))
    if len(losses) != 1:
        return None
    kind, op_id = losses.pop()
    return Loss(kind, op_id)


def derived_labels(
    results: dict[str, QuestionResult],
    baseline: dict[str, QuestionResult],
    taken: set[str],
    system: str,
) -> dict[str, dict[str, Any]]:
    """Natural failures (failing without faults too) whose trail names one operation, and the
    same kind of operation as in the fault-free run."""
    labels = {}
    for case_id, result in results.items():
        base = baseline.get(case_id)
        if case_id in taken or base is None or base.passed:
            continue
        loss, base_loss = natural_loss(result), natural_loss(base)
        if loss is not None and base_loss is not None and loss.type == base_loss.type:
            labels[case_id] = label(loss.type, loss.op_id, reason(system, loss.type), "derived")
    return labels
