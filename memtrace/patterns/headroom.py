"""Headroom of a failure class: what repairing its blamed operations would buy, executed.

For a class, every blamed operation of its cases is repaired at once (each with the oracle of
its own case: the replay engine's repairs), the affected conversations are replayed with the
rest of the system as it is, and the answers are counted against the original run: cases of the
class **rescued**, other failed cases rescued on the way (``also_rescued``), passing cases
**broken** (a repaired memory can change other answers), and the accuracy delta over every case
of the system's traces. ``fix_alone`` replays each case with only its own blamed operation
repaired. The joint headroom repairs the top classes together (fixes interact).

Pure: the replays go through a ``ClassReplayer`` passed in (``memtrace.replay.what_if``, a
budgeted wrapper in the optimizer, or a small scripted one in tests); the answer is a DataFrame with
``HEADROOM_COLUMNS``. ``replays`` are counted in system runs (conversations re-run, what the
replayer's ``cost`` says): the unit the optimizer's budget counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pandas as pd

from memtrace.errors import NotReplayableError
from memtrace.patterns.classes import class_key


@dataclass(frozen=True, slots=True)
class BlamedOp:
    """The operation ``op_id`` of trace ``trace_id`` blamed for case ``case_id``: a what-if
    repairs it with that case's oracle."""

    trace_id: str
    case_id: str
    op_id: str


@dataclass(frozen=True, slots=True)
class ReplayedAnswer:
    """One answer after a replay: judged correct or not, and, when still wrong, the error type
    of what still stands between the evidence and the answer (None when the engine cannot say)."""

    passed: bool
    still_lost_at: str | None = None


class ClassReplayer(Protocol):
    def replayable(self, trace_id: str) -> str | None:
        """None when the trace can be replayed, else why not (imported traces cannot)."""
        ...

    def baseline(self, trace_id: str) -> Mapping[str, bool]:
        """Case id -> judged correct in the original run (read, not replayed)."""
        ...

    def cost(self, trace_id: str, repairs: Sequence[BlamedOp]) -> int:
        """System runs (conversations re-run) that replaying with ``repairs`` takes."""
        ...

    def replay(
        self, trace_id: str, repairs: Sequence[BlamedOp], cases: Collection[str] | None = None
    ) -> Mapping[str, ReplayedAnswer]:
        """Case id -> outcome after replaying the trace with ``repairs``, for every case of
        the trace whose answer may have changed (only those in ``cases`` if given); a case
        left out is unchanged."""
        ...


HEADROOM_COLUMNS = (
    "key",
    "system",
    "op_name",
    "error_type",
    "cases",
    "replayable",
    "rescued",
    "also_rescued",
    "broken",
    "net",
    "accuracy_delta",
    "fix_alone",
    "fix_alone_share",
    "still_lost",  # error type -> cases of the class still wrong after the repair
    "replays",
    "why",  # the sentence the report shows
)


@dataclass(frozen=True)
class WhatIf:
    """The headroom of each class and of the top classes repaired together."""

    classes: pd.DataFrame  # HEADROOM_COLUMNS, largest net headroom first
    joint_keys: tuple[str, ...] = ()
    joint_rescued: int = 0
    joint_broken: int = 0
    joint_net: int = 0
    joint_accuracy_delta: float = 0.0
    total_cases: int = 0  # every case of the replayed systems' traces
    replays: int = 0  # system runs the replays took
    not_replayable: dict[str, str] = field(default_factory=dict)  # trace id -> why

    def run_properties(self) -> dict[str, object]:
        return {
            "joint_keys": list(self.joint_keys),
            "joint_rescued": self.joint_rescued,
            "joint_broken": self.joint_broken,
            "joint_net": self.joint_net,
            "joint_accuracy_delta": self.joint_accuracy_delta,
            "total_cases": self.total_cases,
            "replays": self.replays,
            "not_replayable": [f"{t}: {why}" for t, why in sorted(self.not_replayable.items())],
        }


@dataclass(frozen=True)
class _Counts:
    rescued: int
    also_rescued: int
    broken: int
    still_lost: dict[str, int]
    replays: int


def _repairs(
    refs: Iterable[Sequence[str]], blamed: Mapping[tuple[str, str], str]
) -> list[BlamedOp]:
    out = []
    for trace_id, case_id in refs:
        op_id = blamed.get((trace_id, case_id))
        if op_id:
            out.append(BlamedOp(trace_id, case_id, op_id))
    return out


def _replay_all(
    replayer: ClassReplayer,
    repairs: Sequence[BlamedOp],
    members: set[tuple[str, str]],
    baselines: Mapping[str, Mapping[str, bool]],
) -> _Counts:
    """Replay every trace ``repairs`` touch once and count against the baselines."""
    by_trace: dict[str, list[BlamedOp]] = {}
    for repair in repairs:
        by_trace.setdefault(repair.trace_id, []).append(repair)
    rescued = also = broken = runs = 0
    lost: Counter[str] = Counter()
    for trace_id, trace_repairs in sorted(by_trace.items()):
        runs += replayer.cost(trace_id, trace_repairs)
        outcomes = replayer.replay(trace_id, trace_repairs)
        for case_id, before in baselines[trace_id].items():
            after = outcomes.get(case_id)
            if after is None:
                continue  # not re-answered: unchanged
            member = (trace_id, case_id) in members
            if after.passed and not before:
                rescued += member
                also += not member
            elif before and not after.passed:
                broken += 1
            elif member and not after.passed:
                lost[after.still_lost_at or "unknown"] += 1
    return _Counts(rescued, also, broken, dict(lost), runs)


def _fix_alone(replayer: ClassReplayer, repairs: Sequence[BlamedOp]) -> tuple[int, int]:
    """Cases each repair rescues on its own, and the system runs that took."""
    alone = spent = 0
    for repair in repairs:
        spent += replayer.cost(repair.trace_id, [repair])
        outcome = replayer.replay(repair.trace_id, [repair], {repair.case_id})
        alone += outcome[repair.case_id].passed
    return alone, spent


UNSUPPORTED = "unsupported"  # the case's evidence does not hold its gold answer
# The fix a class's error type names ("update fixes would rescue ..."), and the step that loses
# the rest ("retrieval also misses 8").
FIX_WORDS = {
    "ExtractionError": "extraction",
    "UpdateError": "update",
    "DeletionError": "deletion",
    "RetrievalError": "retrieval",
    "ResponseError": "answer-step",
}
STAGE_WORDS = {
    "ExtractionError": "extraction",
    "UpdateError": "an update",
    "DeletionError": "a deletion",
    "RetrievalError": "retrieval",
    "ResponseError": "the answer step (the evidence reached it)",
}
OTHER_REASONS = {
    UNSUPPORTED: "{n} have evidence that does not hold the gold answer",
    "unknown": "{n} are lost at a step the replay could not name",
}


def explain(error_type: str, cases: int, rescued: int, still_lost: Mapping[str, int]) -> str:
    """ "extraction fixes would rescue 3 of 13: retrieval also misses 8, ..." (the report's)."""
    fixes = FIX_WORDS.get(error_type, error_type)
    head = f"{fixes} fixes would rescue {rescued} of {cases}"
    if rescued == cases or not still_lost:
        return head
    parts = [
        OTHER_REASONS[kind].format(n=n)
        if kind in OTHER_REASONS
        else f"{STAGE_WORDS.get(kind, kind)} also misses {n}"
        for kind, n in sorted(still_lost.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return f"{head}: {', '.join(parts)}"


def _blamed(attributions: pd.DataFrame) -> dict[tuple[str, str], str]:
    return {
        (str(r["trace_id"]), str(r["case_id"])): str(r["op_id"])
        for r in attributions.to_dict(orient="records")
        if r.get("op_id")
    }


def _refs(row: Mapping[Hashable, object]) -> list[tuple[str, str]]:
    refs = row["case_refs"]
    assert isinstance(refs, list)
    return [(str(t), str(c)) for t, c in refs]


def what_if(
    classes: pd.DataFrame,
    attributions: pd.DataFrame,
    replayer: ClassReplayer,
    *,
    fix_alone: bool = True,
    joint_top: int = 3,
    only: Collection[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> WhatIf:
    """The headroom of every class of ``classes`` (``failure_classes`` rows) whose key is in
    ``only`` (all by default), and of the ``joint_top`` classes with the largest net headroom
    repaired together. ``attributions``: trace_id, case_id, op_id of every blamed case (the op
    each case's repair lands on). ``fix_alone`` costs one replay per case of the class.
    ``progress`` is called with each class's key once it is measured."""
    blamed = _blamed(attributions)
    traces = sorted({t for row in classes.to_dict("records") for t, _ in _refs(row)})
    refusals = {t: why for t in traces if (why := replayer.replayable(t)) is not None}
    baselines = {t: dict(replayer.baseline(t)) for t in traces if t not in refusals}
    rows: list[dict[str, object]] = []
    replays = 0
    repairs_of: dict[str, list[BlamedOp]] = {}
    members_of: dict[str, set[tuple[str, str]]] = {}
    for row in classes.to_dict(orient="records"):
        key = class_key(row)
        if only is not None and key not in only:
            continue
        refs = _refs(row)
        base = {
            "key": key,
            "system": row["system"],
            "op_name": row["op_name"],
            "error_type": row["error_type"],
            "cases": len(refs),
        }
        refused = sorted({t for t, _ in refs if t in refusals})
        if refused:  # why: once per trace, in ``not_replayable``
            rows.append(
                base
                | {"replayable": False, "replays": 0, "still_lost": {}}
                | {"why": f"cannot be replayed (trace {', '.join(refused)})"}
            )
            if progress is not None:
                progress(key)
            continue
        repairs = _repairs(refs, blamed)
        members = set(refs)
        try:
            counts = _replay_all(replayer, repairs, members, baselines)
            alone, spent = _fix_alone(replayer, repairs) if fix_alone else (None, 0)
        except NotReplayableError as exc:  # this class's ops: the other classes still measure
            rows.append(
                base
                | {"replayable": False, "replays": 0, "still_lost": {}}
                | {"why": f"cannot be measured: {exc}"}
            )
            if progress is not None:
                progress(key)
            continue
        repairs_of[key], members_of[key] = repairs, members
        spent += counts.replays
        replays += spent
        net = counts.rescued + counts.also_rescued - counts.broken
        if progress is not None:
            progress(key)
        rows.append(
            base
            | {
                "replayable": True,
                "rescued": counts.rescued,
                "also_rescued": counts.also_rescued,
                "broken": counts.broken,
                "net": net,
                "fix_alone": alone,
                "fix_alone_share": alone / len(refs) if alone is not None and refs else None,
                "still_lost": counts.still_lost,
                "replays": spent,
                "why": explain(
                    str(row["error_type"]), len(refs), counts.rescued, counts.still_lost
                ),
            }
        )
    total = sum(len(b) for b in baselines.values())
    frame = pd.DataFrame(rows, columns=list(HEADROOM_COLUMNS))
    if not frame.empty:
        frame["accuracy_delta"] = frame["net"].map(
            lambda n: float(n) / total if total and n == n else None
        )
        frame["order"] = frame["net"].fillna(-(10**9))
        frame = frame.sort_values(["order", "cases", "key"], ascending=[False, False, True])
        frame = frame.drop(columns="order").reset_index(drop=True)
    joint = [k for k in frame["key"] if k in repairs_of][:joint_top] if not frame.empty else []
    result = WhatIf(frame, total_cases=total, replays=replays, not_replayable=refusals)
    if len(joint) < 2:  # one class together is the class itself
        return result
    counts = _replay_all(
        replayer,
        [r for k in joint for r in repairs_of[k]],
        set().union(*(members_of[k] for k in joint)),
        baselines,
    )
    net = counts.rescued + counts.also_rescued - counts.broken
    return WhatIf(
        frame,
        joint_keys=tuple(joint),
        joint_rescued=counts.rescued + counts.also_rescued,
        joint_broken=counts.broken,
        joint_net=net,
        joint_accuracy_delta=net / total if total else 0.0,
        total_cases=total,
        replays=replays + counts.replays,
        not_replayable=refusals,
    )
