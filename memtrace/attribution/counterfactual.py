"""The executed label: MemTrace's earliest decisive operation, run instead of imagined.

The paper's label assumes every step after the one it blames does its job, the answer step
included: an ideal answer step answers right whenever what the gold answer needs (the key
sentences of the case's evidence) is in its context. So for a failed case with non-answer
candidates C1..Cm in execution order and the answer op A, ``reach(i)`` is: a replay with
{Ci..Cm} repaired (ideal downstream) puts the evidence into the answer's context; the original
run is ``reach(m+1)``. Ci is **decisive** when ``reach(i)`` and not ``reach(i+1)``. A replayer
that knows its system's construction steps (``Downstream``) also repairs every construction op
after Ci: an op that is no candidate (it never saw the evidence) can still lose what Ci's repair
restored, and a downstream that loses it again is not ideal.

* ``reach(m+1)``: the evidence was in the answer's context in the run as it was: ResponseError
  at A (and only then).
* else ``reach(1)``: the earliest decisive Ci is the label; its error type is what Ci's repair
  restored.
* not ``reach(1)`` and no Ci decisive: no repair of the candidates restores the evidence
  (``unrestored``); not ``reach(1)`` but some Ci decisive: the repairs interact (``no_single``).
  Both are kept and counted, with no label.

Beside it, what **your answerer** does with each repair (it always runs for real): per
candidate ``downstream`` (Ci and the later ones repaired: answered right?), ``alone`` (only Ci
repaired), ``rescued`` (Ci is where the real answer turns right: ``downstream`` here and not
with only the later ones), and the label that reading gives (``with_your_answerer``: the
earliest rescuing Ci, else ResponseError). A replay whose system cannot say what reached the
context (``ReplayedCase.context`` is None: a replayer of your own that does not report it, or a
case whose evidence does not hold its gold answer) is read by its answer: both labels agree.

Cost is counted in replays. When Ci's repair changed nothing in a replay where every op before
it ran as it did, Ci alone is the original run (wrong) and is not replayed again. Pure: the
replays come from a ``CaseReplayer`` passed in (``memtrace.replay.Replayer``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol, get_args, runtime_checkable

from memtrace.taxonomy import ErrorType, default_error_type

Status = Literal["decisive", "response", "no_single", "unrestored"]
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
    @property
    def context(self) -> bool | None:
        """The evidence the gold answer needs reached the answer's context (None: unknown)."""
        ...


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
    context: bool | None  # Ci and the later ones repaired: the evidence reached the context?
    downstream: bool | None  # ... and your answerer answered right? (None: not run)
    alone: bool  # repaired alone, the rest as it ran: your answerer right?
    decisive: bool  # the label's: where the evidence first stays out of the context
    rescued: bool  # your answerer's: where the real answer first stays wrong
    changed: str  # what its repair added or kept ("" when nothing)
    error_type: ErrorType | None  # what its repair restored


@dataclass(frozen=True)
class AnswererLabel:
    """The label your answerer gives: the earliest candidate whose repair (with the later ones)
    makes the real answer right and without which it stays wrong; ResponseError when no repair
    rescues it."""

    status: Status
    op_id: str | None
    error_type: ErrorType | None


@dataclass(frozen=True)
class ExecutedLabel:
    case_id: str
    status: Status
    op_id: str | None
    error_type: ErrorType | None
    reason: str
    outcomes: tuple[CandidateOutcome, ...]
    replays: int
    answerer: AnswererLabel  # "rescued with your answerer"
    basis: Literal["context", "answer"] = "context"  # what ``reach`` read (module docstring)

    def as_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "op_id": self.op_id,
            "error_type": self.error_type,
            "basis": self.basis,
            "replays": self.replays,
            "with_your_answerer": {
                "status": self.answerer.status,
                "op_id": self.answerer.op_id,
                "error_type": self.answerer.error_type,
            },
            "candidates": [
                {
                    "op_id": o.op_id,
                    "context": o.context,
                    "downstream": o.downstream,
                    "alone": o.alone,
                    "decisive": o.decisive,
                    "rescued": o.rescued,
                    "changed": o.changed,
                }
                for o in self.outcomes
            ],
        }


class _Runs:
    """Replays of one case by repaired set, each run once."""

    def __init__(self, replayer: CaseReplayer, case_id: str, ops: Sequence[str]) -> None:
        self.replayer = replayer
        self.case_id = case_id
        self.ops = ops
        self.done: dict[tuple[str, ...], ReplayedCase] = {}

    def __call__(self, ops: Sequence[str]) -> ReplayedCase:
        key = tuple(sorted(set(ops)))
        if key not in self.done:
            self.done[key] = self.replayer.replay(self.case_id, key)
        return self.done[key]

    def key(self, i: int) -> tuple[str, ...]:
        """The repaired set of ``downstream(i)``: ``ops[i:]`` and the construction ops an ideal
        downstream repairs after ``ops[i]``."""
        ops = self.ops[i:]
        later = (
            self.replayer.downstream(ops[0])
            if ops and isinstance(self.replayer, Downstream)
            else ()
        )
        return tuple(sorted({*ops, *later}))

    def replayed(self, i: int) -> bool:
        return self.key(i) in self.done

    def downstream(self, i: int) -> ReplayedCase:
        """``ops[i:]`` (a candidate and every later one) repaired with the ideal downstream;
        ``i == len(ops)`` is the original run."""
        return self(self.key(i))


def _first_turn(m: int, holds: Callable[[int], bool]) -> tuple[dict[int, bool], int | None]:
    """``holds(i)`` as far as needed (i = m: the original run) and the first i with
    ``holds(i)`` and not ``holds(i + 1)`` (None when it holds for the original run, or never).
    A repair only restores: when all candidates repaired do not hold, the original does not
    either, and is not replayed for it."""
    seen: dict[int, bool] = {}

    def at(i: int) -> bool:
        if i not in seen:
            seen[i] = holds(i)
        return seen[i]

    if not m:
        at(m)
        return seen, None
    if at(0):
        return seen, next((i - 1 for i in range(1, m + 1) if not at(i)), None)
    if any([at(i) for i in range(1, m)]):  # the repairs interact: where does it turn?
        at(m)
    else:
        seen[m] = False
    return seen, None


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
    runs = _Runs(replayer, case_id, ops)
    m = len(ops)

    def by_answer() -> bool:
        return any(run.context is None for run in runs.done.values())

    def reaches(i: int) -> bool:
        if i == m and m and by_answer():
            return False  # read by the answer: the original one is wrong (a failed case)
        run = runs.downstream(i)
        return run.passed if run.context is None else run.context

    reach, first = _first_turn(m, reaches)
    right, rescuer = _first_turn(m, lambda i: i < m and runs.downstream(i).passed)
    basis: Literal["context", "answer"] = "answer" if by_answer() else "context"
    changes = {c.op_id: c for run in runs.done.values() for c in run.repaired}

    def turns(seen: dict[int, bool]) -> list[int]:
        return [i for i in range(m) if seen.get(i) and seen.get(i + 1) is False]

    decisive, rescued = turns(reach), turns(right)
    outcomes = []
    for i, op in enumerate(ops):
        change = changes.get(op)
        outcomes.append(
            CandidateOutcome(
                op_id=op,
                context=reach.get(i),
                downstream=right.get(i),
                alone=_alone(runs, ops, i, changes) if fix_alone else False,
                decisive=i in decisive,
                rescued=i in rescued,
                changed=change.detail if change else "",
                error_type=change.error_type if change else None,
            )
        )

    def type_of(op: str) -> ErrorType:
        change = changes.get(op)
        return change.error_type if change else default_error_type(kinds[op])

    answerer = (
        AnswererLabel("decisive", ops[rescuer], type_of(ops[rescuer]))
        if rescuer is not None
        else AnswererLabel("response", answer_op, "ResponseError")
        if answer_op is not None and not rescued
        else AnswererLabel("no_single", None, None)
    )

    def labelled(
        status: Status, reason: str, op: str | None = None, error_type: ErrorType | None = None
    ) -> ExecutedLabel:
        done = tuple(outcomes)
        return ExecutedLabel(
            case_id, status, op, error_type, reason, done, len(runs.done), answerer, basis
        )

    if first is not None:
        op = ops[first]
        change = changes.get(op)
        held, lost = (
            ("the answer is correct", "it is not")
            if basis == "answer"
            else ("the evidence reaches the answer's context", "it does not")
        )
        reason = (
            f"replayed with {op} and its ideal downstream repaired, {held}; without {op}'s "
            f"repair {lost} ({change.detail if change else 'repaired'})"
        )
        return labelled("decisive", reason, op, type_of(op))
    if answer_op is None:
        return labelled("no_single", "no answer operation to blame")
    if reach.get(m):
        reason = (
            "the evidence was in the answer's context in the run as it was, and the answer is wrong"
        )
        return labelled("response", reason, answer_op, "ResponseError")
    if decisive:
        reason = (
            "repairing every candidate leaves the evidence out of the answer's context, yet "
            "repairing only later ones puts it there: the repairs interact and no single "
            "operation is decisive"
        )
        return labelled("no_single", reason)
    if basis == "answer":
        reason = (
            f"with all {m} non-answer candidates and their ideal downstream repaired the answer "
            "is still wrong (what reached the answer's context is not known: read by the answer)"
        )
        return labelled("response", reason, answer_op, "ResponseError")
    reason = (
        f"with all {m} non-answer candidates and their ideal downstream repaired the evidence "
        "still does not reach the answer's context"
        if m
        else "no non-answer candidate, and the evidence was not in the answer's context"
    )
    return labelled("unrestored", reason)


def _alone(runs: _Runs, ops: Sequence[str], i: int, changes: dict[str, Change]) -> bool:
    """Ci repaired alone. Shared with a downstream replay when that repaired Ci alone (the
    cache); free (the original, wrong) when a replay in which every op before Ci ran as it did
    shows that Ci's repair changes nothing."""
    op = ops[i]
    if runs.replayed(i) and op not in changes:
        return False
    return runs([op]).passed
