"""Replaying a memory system of your own, traced with ``memtrace.tracing`` (docs/replay.md).

Two things make a system replayable:

1. Each operation a repair may address names its step in its metadata, a key that is the same
   logical step in every run: ``operation("extract", metadata={STEP: f"extract:{msg_id}"})``.
2. An object with ``replay(case_id, steps)`` (``ReplayableSystem``) answers one case again with
   the steps ``steps`` repaired: it re-runs what the case needs, corrects the output of each
   repaired step (its own oracle: it knows what a correct extraction or retrieval is for that
   case), judges the answer and returns ``Replayed(passed, prediction, changed)``, ``changed``
   saying per step what the repair changed (a 2-tuple ``(passed, prediction)`` is accepted too,
   but then memtrace can only say that the step was repaired). ``context`` says whether what
   the gold answer needs reached the answer's context: the executed label asks exactly that
   (an ideal answer step, ``memtrace.attribution.counterfactual``); left None, the label reads
   your answer instead.

memtrace finds that object through a factory ``(ReplayTrace) -> ReplayableSystem``: named on the
command line (``--replayer module:attr``) or registered by the system's name in the entry point
group ``memtrace.replayers`` (``memtrace.replay.plugins``). ``SystemReplayer`` then replays by op
id of the trace, as the engine's ``TraceReplayer`` does, so ``executed_label``, the replay judge
and class what-ifs work on it unchanged. A system that can replay many cases' repairs in one run
may also have ``replay_together(repaired, cases)`` (case id -> steps; answers by case id); else a
class what-if replays case by case.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from memtrace.errors import MemtraceError, NotReplayableError
from memtrace.patterns.headroom import ReplayedAnswer
from memtrace.replay.engine import CaseReplay
from memtrace.settings import Settings
from memtrace.systems.core import Repaired
from memtrace.taxonomy import ErrorType, default_error_type

STEP: Final = "replay_step"  # the operation metadata key naming its step


@dataclass(frozen=True, slots=True)
class Replayed:
    """One case answered again: judged correct or not, the answer, and per repaired step what
    its repair changed ("kept the fact 'Ana moved to Lisbon'")."""

    passed: bool
    prediction: str
    changed: Mapping[str, str] = field(default_factory=dict)
    context: bool | None = None  # the evidence reached the answer's context (None: not known)


class ReplayableSystem(Protocol):
    def replay(self, case_id: str, steps: frozenset[str]) -> Replayed | tuple[bool, str]: ...


@dataclass(frozen=True)
class ReplayTrace:
    """What a replayer factory gets: the trace (its native records, as in the file or rebuilt
    from the graph) and the settings."""

    trace_id: str
    system: str
    records: Sequence[Mapping[str, Any]]
    settings: Settings | None = None

    @property
    def metadata(self) -> Mapping[str, Any]:
        return self.records[0].get("metadata") or {} if self.records else {}


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a native trace file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise NotReplayableError(f"{path}: cannot read file: {exc.strerror or exc}") from None
    try:
        return [json.loads(line) for line in lines if line.strip()]
    except json.JSONDecodeError:
        raise NotReplayableError(
            f"{path}: not a native JSON Lines trace (an imported smartcomment or OTLP file "
            "cannot be replayed: it records what a system did, not how to run it again)"
        ) from None


def steps_of(records: Sequence[Mapping[str, Any]], where: str) -> dict[str, str]:
    """Op id -> step, from the operations' ``replay_step`` metadata."""
    steps = {}
    for record in records:
        step = (record.get("metadata") or {}).get(STEP)
        if record.get("type") == "operation" and isinstance(step, str):
            steps[str(record["id"])] = step
    if not steps:
        raise NotReplayableError(
            f"{where}: no operation names a replay step (metadata {STEP!r}); see docs/replay.md"
        )
    return steps


class SystemReplayer:
    """Replays a user's traced system by op id (the engine's ``TraceReplayer`` interface)."""

    def __init__(
        self,
        trace: Path | Sequence[Mapping[str, Any]],
        system: ReplayableSystem,
        error_types: Mapping[str, ErrorType] | None = None,
    ) -> None:
        """``trace``: a native trace file or its records. ``error_types``: step prefix
        (``extract``) -> the error type its repair undoes (default: what the op's kind, or
        else its category, implies)."""
        records = read_records(trace) if isinstance(trace, Path) else list(trace)
        where = str(trace) if isinstance(trace, Path) else f"trace {_trace_id(records)!r}"
        self.steps = steps_of(records, where)
        self.system = system
        self.error_types = dict(error_types or {})
        operations = [r for r in records if r.get("type") == "operation"]
        self._kinds = {
            str(r["id"]): str(r.get("kind") or r.get("category") or "") for r in operations
        }
        self._names = {str(r["id"]): str(r.get("name") or "") for r in operations}
        self._recorded = {str(r["id"]): _passed(r) for r in records if r.get("type") == "case"}
        self.answer_ops = answer_ops(records)
        self.replays = 0
        self._lock = threading.Lock()

    def replay(self, case_id: str, repaired: Collection[str] = ()) -> CaseReplay:
        steps = self._steps(repaired)
        with self._lock:
            self.replays += 1
        try:
            raw = self.system.replay(case_id, frozenset(steps.values()))
        except MemtraceError:
            raise
        except Exception as exc:  # the user's code: this case's replay failed, say where
            name = type(self.system).__name__
            raise NotReplayableError(f"{name}.replay({case_id!r}) failed: {exc!r}") from exc
        answer = _replayed(raw)
        changes = self._changes(steps, answer, isinstance(raw, Replayed))
        return CaseReplay(case_id, answer.passed, answer.prediction, changes, answer.context)

    def _steps(self, repaired: Collection[str]) -> dict[str, str]:
        """Op id -> step of the ops ``repaired`` a replay re-runs (an answer op without a step
        is left out: its oracle is the gold answer, see ``replay_jointly``)."""
        unknown = [op for op in repaired if op not in self.steps and op not in self.answer_ops]
        if unknown:
            name = self._names.get(unknown[0], "")
            raise NotReplayableError(
                f"operation {unknown[0]!r} ({name}) names no replay step (metadata {STEP!r}), "
                "so no repair can address it; docs/replay.md"
            )
        return {op: self.steps[op] for op in repaired if op in self.steps}

    def _changes(
        self, steps: Mapping[str, str], answer: Replayed, described: bool
    ) -> tuple[Repaired, ...]:
        """What each repair changed: as ``Replayed.changed`` says (a step it leaves out changed
        nothing), or, for an answer that says nothing (a 2-tuple), only that it was repaired."""
        name = type(self.system).__name__
        unsaid = "repaired by {}.replay, which did not say what it changed".format
        return tuple(
            Repaired(step, op, answer.changed.get(step) or unsaid(name), self._type(op))
            for op, step in steps.items()
            if not described or answer.changed.get(step)
        )

    def _type(self, op: str) -> ErrorType:
        prefix = self.steps[op].split(":", 1)[0]
        return self.error_types.get(prefix) or default_error_type(self._kinds.get(op, ""))

    # -- class what-ifs (``memtrace.replay.what_if.JointReplayer``) -------------------------
    def recorded(self) -> Mapping[str, bool]:
        return self._recorded

    def joint_cost(self, repaired: Mapping[str, Collection[str]]) -> int:
        """One run when the system replays many cases together, else one per case; none for a
        case whose repair is its answer step's oracle."""
        rerun = [c for c, ops in repaired.items() if not any(op in self.answer_ops for op in ops)]
        together = hasattr(self.system, "replay_together")
        return min(1, len(rerun)) if together else len(rerun)

    def replay_jointly(
        self,
        repaired: Mapping[str, Collection[str]],
        cases: Collection[str] | None = None,
        precise: bool = False,
    ) -> Mapping[str, ReplayedAnswer]:
        """With ``replay_together`` every case it answers; else each case with its own repairs
        (the other cases are taken as unchanged). A case whose blamed op is its answer op (with
        no step, as docs/replay.md advises) gets the answer step's oracle, as the engine's
        systems do: the gold answer, correct by the case's own definition; no other answer can
        change with it, and nothing is re-run for it."""
        wanted = set(self._recorded) if cases is None else set(cases)
        answered = {c for c, ops in repaired.items() if any(op in self.answer_ops for op in ops)}
        out = {c: ReplayedAnswer(True) for c in answered & wanted}
        steps = {
            c: frozenset(self._steps(ops).values())
            for c, ops in repaired.items()
            if c not in answered
        }
        steps = {c: s for c, s in steps.items() if s}
        wanted -= answered
        if not steps or not wanted:
            return out
        together = getattr(self.system, "replay_together", None)
        if together is not None:
            answers = together(steps, wanted)
            with self._lock:
                self.replays += 1
            return out | {c: ReplayedAnswer(_replayed(a).passed) for c, a in answers.items()}
        replayed = {c: self.replay(c, repaired[c]).passed for c in steps if c in wanted}
        return out | {c: ReplayedAnswer(passed) for c, passed in replayed.items()}


def answer_ops(records: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The answer operations of a trace's cases, without a replay step: per case, a generation
    op (its kind, as loaded, or its category) that reads its question or writes its prediction
    (as attribution finds a case's answer op, ``case_anchor.cypher``)."""
    cases = [r for r in records if r.get("type") == "case"]
    asked = {str(c.get("query")) for c in cases}
    predicted = {str(c.get("prediction")) for c in cases if c.get("prediction")}
    return frozenset(
        str(r["id"])
        for r in records
        if r.get("type") == "operation"
        and "generation" in (r.get("kind"), r.get("category"))
        and STEP not in (r.get("metadata") or {})
        and (asked & set(r.get("reads") or ()) or predicted & set(r.get("writes") or ()))
    )


def _replayed(answer: Replayed | tuple[bool, str]) -> Replayed:
    if isinstance(answer, Replayed):
        return answer
    passed, prediction = answer
    return Replayed(bool(passed), str(prediction))


def _passed(case: Mapping[str, Any]) -> bool:
    """Judged correct in the original run (as the loader reads a case: ``failed``, else a
    judge score of 0 failed); an unscored case did not pass."""
    if case.get("failed") is not None:
        return not case["failed"]
    score = case.get("judge_score")
    return score is not None and float(score) != 0.0


def _trace_id(records: Sequence[Mapping[str, Any]]) -> str:
    return str(records[0].get("id")) if records else ""
