"""What a verdict's confidence is calibrated on, so that a number reads the same on any system.

An offline (or hybrid) verdict's confidence is the share of verdicts resting on the same thing
that executed counterfactuals confirmed (``judges.CONFIDENCE``), measured on the natural
failures of the reference systems in ``CALIBRATED_SYSTEMS`` against the label (the paper's:
where what the answer needs was first lost, ``counterfactual.py``; docs/attribution.md, "Reading
confidence"). On a system memtrace did not write it is a prior from those systems, not a rate:
its trails read another system's memories and flow, which may hold the evidence otherwise. A replay
verdict is an observation (the system ran again); an LLM judge's is its model's own figure.
``comparable`` says whether "below the review threshold" means "likely wrong" for a verdict,
which is what the review queue's "low confidence" promises on every system.
"""

from __future__ import annotations

from typing import Final, Literal

# The systems the offline confidences were measured on (benchmarks/judge_calibration.py).
CALIBRATED_SYSTEMS: Final = frozenset({"mem0", "rag", "long-context", "evermemos"})
CALIBRATION_DOC: Final = "docs/attribution.md, Reading confidence"

Scale = Literal["observed", "calibrated", "prior", "model"]
SCALES: Final[dict[Scale, str]] = {
    "observed": "observed: the replay ran the system again with the repairs",
    "calibrated": (
        "calibrated: the share of such verdicts replays confirmed on memtrace's reference "
        f"systems' natural failures ({CALIBRATION_DOC})"
    ),
    "prior": (
        "not calibrated on {system}: a prior from memtrace's reference systems (measured on "
        "their memories and flow, not yours); measure it on yours with `memtrace bench natural "
        "--replayer` and `memtrace eval --labels replay` ({doc})"
    ),
    "model": "the LLM judge's own figure, not calibrated",
}


def scale(judge: str | None, system: str | None) -> Scale:
    """What a verdict's confidence is, by the judge that gave it and the system it blames."""
    if judge == "replay":
        return "observed"
    if judge == "llm":
        return "model"
    return "calibrated" if system in CALIBRATED_SYSTEMS else "prior"


def describe(judge: str | None, system: str | None) -> str:
    """One clause saying what the confidence of such a verdict is calibrated on."""
    return SCALES[scale(judge, system)].format(system=system or "this system", doc=CALIBRATION_DOC)


def comparable(judge: str | None, system: str | None) -> bool:
    """Whether a confidence below the review threshold means what it means on the reference
    systems (likely wrong, or for a model's own figure, unsure): all but a prior carried over
    to a system it was not measured on."""
    return scale(judge, system) != "prior"
