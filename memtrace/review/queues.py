"""Review queues of one attribution run: pure, over the rows the store read.

One queue per failure class (as ``memtrace patterns`` groups them), plus every case of the run,
those whose verdict has a low confidence, and those where several runs
(offline, hybrid, replay, ... judges) blame different operations.
"""

from __future__ import annotations

from collections.abc import Sequence

from memtrace.attribution import calibration
from memtrace.review.model import Queue, QueueCase

# An offline verdict's confidence is the share of such verdicts executed counterfactuals
# confirmed (attribution.judges.CONFIDENCE); an LLM reply without a confidence gets 0.5 and a
# walk that ran out of candidates 0.0: below 0.7 is worth a look.
LOW_CONFIDENCE = 0.7


def disagrees(case: QueueCase) -> bool:
    """Another run blames a different operation (or this run blamed none and another did)."""
    return any(other.op_id != case.op_id for other in case.other_blames)


def low_confidence(case: QueueCase, threshold: float) -> bool:
    """Below the threshold on a scale where that means likely wrong (``calibration``): an
    offline confidence on a system it was not calibrated on goes to its own queue."""
    if case.op_id is None or not calibration.comparable(case.judge, case.system):
        return False
    return case.confidence is None or case.confidence < threshold


def uncalibrated(case: QueueCase) -> bool:
    return case.op_id is not None and not calibration.comparable(case.judge, case.system)


def decided(case: QueueCase) -> bool:
    return case.my_decision in ("confirm", "correct")


def build_queues(
    cases: Sequence[QueueCase],
    classes: Sequence[tuple[str, Sequence[tuple[str, str]]]],
    threshold: float = LOW_CONFIDENCE,
) -> list[Queue]:
    """The queues in the order the app lists them; ``classes``: (title, case refs) per failure
    class, most cases first. Every queue holds its cases in the order of ``cases``."""
    by_ref = {case.ref: case for case in cases}
    order = {case.ref: n for n, case in enumerate(cases)}

    def queue(key: str, title: str, refs: Sequence[tuple[str, str]]) -> Queue:
        known = tuple(sorted((ref for ref in refs if ref in by_ref), key=order.__getitem__))
        return Queue(key, title, known, sum(decided(by_ref[ref]) for ref in known))

    queues = [
        # every case, so that its progress counts the decided ones (a queue of the undecided
        # cases alone would always read "0 reviewed"); the next case is the next undecided one
        queue("all", "every case", [c.ref for c in cases]),
        queue(
            "low-confidence",
            f"low confidence (< {threshold:g})",
            [c.ref for c in cases if low_confidence(c, threshold)],
        ),
        queue("disagree", "judges disagree", [c.ref for c in cases if disagrees(c)]),
    ]
    foreign = [c.ref for c in cases if uncalibrated(c)]
    if foreign:  # their confidence is a prior from other systems: not "low", unknown
        queues.append(queue("uncalibrated", "confidence not calibrated on this system", foreign))
    queues += [queue(f"class-{n}", title, refs) for n, (title, refs) in enumerate(classes, start=1)]
    failed = [c.ref for c in cases if c.op_id is None]
    if failed:
        queues.append(queue("no-blame", "attribution failed or blamed nothing", failed))
    return queues


def next_case(
    queue: Queue, cases: Sequence[QueueCase], after: tuple[str, str]
) -> tuple[str, str] | None:
    """The case to show after ``after``: the next one of ``queue`` (in the order of ``cases``)
    the reviewer has not decided, wrapping around; None when every case of it is decided.
    ``after`` itself is skipped (decided or skipped, it was just shown)."""
    by_ref = {case.ref: case for case in cases}
    order = {case.ref: n for n, case in enumerate(cases)}
    position = order.get(after, -1)
    open_refs = [ref for ref in queue.cases if ref != after and not decided(by_ref[ref])]
    later = [ref for ref in open_refs if order[ref] > position]
    chosen = later or open_refs
    return chosen[0] if chosen else None
