"""The executed label: MemTrace's earliest decisive operation, run instead of imagined.

For a failed case with non-answer candidates C1..Cm in execution order and the answer op A:
``ok(i)`` is a replay with {Ci..Cm} repaired (ideal downstream) answered correctly; the original
run is ``ok(m+1) = False``. Ci is **decisive** when ``ok(i)`` and not ``ok(i+1)``. A replayer
that knows its system's construction steps (``Downstream``) also repairs every construction op
after Ci in ``ok(i)``: an op that is no candidate (it never saw the evidence) can still lose
what Ci's repair restored, and a downstream that loses it again is not ideal.

* ``ok(1)``: the earliest decisive Ci is the label (one exists: ok turns false by m+1); its
  error type is what Ci's repair restored.
* not ``ok(1)`` and no Ci decisive: every repair together leaves the answer wrong: ResponseError
  at A.
* not ``ok(1)`` but some Ci decisive: repairing fewer ops rescues the answer, repairing all does
  not (the repairs interact): **no single decisive op**; kept and counted, with no label.

Also per candidate, **fix alone**: a replay with only Ci repaired. Cost is counted in replays.
When Ci's repair changed nothing in a replay where every op before it ran as it did, Ci alone
is the original run (wrong) and is not replayed again. Pure: the replays come from a
``CaseReplayer`` passed in (``memtrace.replay.Replayer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol, get_args, runtime_checkable

from memtrace.taxonomy import ErrorType, default_error_type

Status = Literal["decisive", "response", "no_single"]
STATUSES: Final[tuple[Status, ...]] = get_args(Status)


class Change(Protocol):
    @property
    def op_id(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def error_type(self) -> ErrorType: ...


class ReplayedCase(Protocol):
    @property
    def passed(self) -> bool: ...
    @property
    def repaired(self) -> Sequence[Change]: ...


class CaseReplayer(Protocol):
    def replay(self, case_id: str, repaired: Sequence[str] = ()) -> ReplayedCase: ...


@runtime_checkable
class Downstream(Protocol):
    """A replayer that names the ops after an op that an ideal downstream repairs too."""

    def downstream(self, op_id: str) -> Sequence[str]: ...


@dataclass(frozen=True)
class Suspect:
    """A candidate op: its id and normalized kind (the attribution candidate, reduced)."""

    op_id: str
    kind: str


@dataclass(frozen=True)
class CandidateOutcome:
    op_id: str
    downstream: bool | None  # repaired with the ideal downstream: correct? (None: not run)
    alone: bool  # repaired alone, the rest as it ran: correct?
    decisive: bool
    changed: str  # what its repair added or kept ("" when nothing)
    error_type: ErrorType | None  # what its repair restored


@dataclass(frozen=True)
class ExecutedLabel:
    case_id: str
    status: Status
    op_id: str | None
    error_type: ErrorType | None
    reason: str
    outcomes: tuple[CandidateOutcome, ...]
    replays: int

    def as_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "op_id": self.op_id,
            "error_type": self.error_type,
            "replays": self.replays,
            "candidates": [
                {
                    "op_id": o.op_id,
                    "downstream": o.downstream,
                    "alone": o.alone,
                    "decisive": o.decisive,
                    "changed": o.changed,
                }
                for o in self.outcomes
            ],
        }


class _Runs:
    """Replays of one case by repaired set, each run once."""

    def __init__(self, replayer: CaseReplayer, case_id: str) -> None:
        self.replayer = replayer
        self.case_id = case_id
        self.done: dict[tuple[str, ...], ReplayedCase] = {}

    def __call__(self, ops: Sequence[str]) -> ReplayedCase:
        key = tuple(sorted(set(ops)))
        if key not in self.done:
            self.done[key] = self.replayer.replay(self.case_id, key)
        return self.done[key]

    def downstream(self, ops: Sequence[str]) -> ReplayedCase:
        """``ops`` (a candidate and every later one) repaired with the ideal downstream."""
        later = self.replayer.downstream(ops[0]) if isinstance(self.replayer, Downstream) else ()
        return self([*ops, *later])


def executed_label(
    replayer: CaseReplayer,
    case_id: str,
    suspects: Sequence[Suspect],
    answer_op: str | None,
    fix_alone: bool = True,
) -> ExecutedLabel:
    """The executed label of a failed case; ``suspects`` in execution order, answer op left out
    (it always runs for real)."""
    ops = [s.op_id for s in suspects if s.op_id != answer_op]
    kinds = {s.op_id: s.kind for s in suspects}
    runs = _Runs(replayer, case_id)
    m = len(ops)
    ok: dict[int, bool] = {m: False}  # index i: ops[i:] repaired; ops[m:] = the original run
    decisive: int | None = None
    if m:
        ok[0] = runs.downstream(ops).passed
        if ok[0]:  # scan for the first i where ops[i:] no longer rescues it
            for i in range(1, m + 1):
                if i not in ok:
                    ok[i] = runs.downstream(ops[i:]).passed
                if not ok[i]:
                    decisive = i - 1
                    break
        else:
            for i in range(1, m):
                ok[i] = runs.downstream(ops[i:]).passed
    transitions = [i for i in range(m) if i in ok and i + 1 in ok and ok[i] and not ok[i + 1]]
    changes = {c.op_id: c for run in runs.done.values() for c in run.repaired}
    outcomes = []
    for i, op in enumerate(ops):
        alone = _alone(runs, ops, i, ok, changes) if fix_alone else False
        change = changes.get(op)
        outcomes.append(
            CandidateOutcome(
                op_id=op,
                downstream=ok.get(i),
                alone=alone,
                decisive=i in transitions,
                changed=change.detail if change else "",
                error_type=change.error_type if change else None,
            )
        )
    replays = len(runs.done)
    if decisive is not None:
        op = ops[decisive]
        change = changes.get(op)
        error_type = change.error_type if change else default_error_type(kinds.get(op, "other"))
        reason = (
            f"replayed with {op} and its ideal downstream repaired, the answer is correct; "
            f"without {op}'s repair it is not ({change.detail if change else 'repaired'})"
        )
        return ExecutedLabel(case_id, "decisive", op, error_type, reason, tuple(outcomes), replays)
    if not transitions and answer_op is not None:
        reason = (
            f"with all {m} non-answer candidates and their ideal downstream repaired the answer is "
            "still wrong"
            if m
            else "no non-answer candidate: the answer op is the failed case's only suspect"
        )
        return ExecutedLabel(
            case_id, "response", answer_op, "ResponseError", reason, tuple(outcomes), replays
        )
    why = (
        "repairing every candidate leaves the answer wrong, yet repairing only later ones "
        "rescues it: the repairs interact and no single operation is decisive"
        if transitions
        else "no answer operation to blame"
    )
    return ExecutedLabel(case_id, "no_single", None, None, why, tuple(outcomes), replays)


def _alone(
    runs: _Runs, ops: Sequence[str], i: int, ok: dict[int, bool], changes: dict[str, Change]
) -> bool:
    """Ci repaired alone. Shared with a downstream replay when that repaired Ci alone (the
    cache); free (the original, wrong) when a replay in which every op before Ci ran as it did
    shows that Ci's repair changes nothing."""
    op = ops[i]
    if i in ok and op not in changes:
        return False
    return runs([op]).passed
