"""Class what-ifs over replayed traces: the ``ClassReplayer`` that
``memtrace.patterns.headroom`` (``patterns --what-if``, headroom routing in the optimizer) drives.

A class's what-if repairs the blamed operations of many cases at once and needs every answer of
the conversation again (a repaired memory can change other answers), so each trace's replayer
replays a set of blamed ops jointly (``JointReplayer``): the replay engine builds the memory once
with every repaired construction step and asks every question with its own case's repairs (one
system run); a user's own system (``memtrace.replay.hook``) replays case by case unless it can
do more.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memtrace.errors import NotReplayableError
from memtrace.patterns.headroom import BlamedOp, ReplayedAnswer


class JointReplayer(Protocol):
    """The replayer of one trace, as a class what-if uses it."""

    def recorded(self) -> Mapping[str, bool]:
        """Case id -> judged correct in the original run."""
        ...

    def joint_cost(self, repaired: Mapping[str, Collection[str]]) -> int:
        """System runs that ``replay_jointly(repaired)`` makes."""
        ...

    def replay_jointly(
        self,
        repaired: Mapping[str, Collection[str]],
        cases: Collection[str] | None = None,
        precise: bool = False,
    ) -> Mapping[str, ReplayedAnswer]:
        """Case id -> its answer after replaying with ``repaired`` (case id -> the op ids
        blamed for it, each repaired with its own case's oracle), for every case whose answer
        may have changed (only those in ``cases`` if given)."""
        ...


@dataclass
class WhatIfReplayer:
    """``patterns.headroom.ClassReplayer`` over the replayers of traces (``for_trace``, e.g.
    ``LoadedTraces(db).for_trace``; it raises ``NotReplayableError`` for a trace that cannot be
    replayed). ``precise_search``: a repaired search keeps only the results holding the
    evidence."""

    for_trace: Callable[[str], JointReplayer]
    precise_search: bool = False
    runs: int = 0  # system runs the replays made (what ``cost`` said of each)
    _refused: dict[str, str] = field(default_factory=dict)

    def replayable(self, trace_id: str) -> str | None:
        if trace_id not in self._refused:
            try:
                self.for_trace(trace_id)
            except NotReplayableError as exc:
                self._refused[trace_id] = str(exc)
        return self._refused.get(trace_id)

    def baseline(self, trace_id: str) -> Mapping[str, bool]:
        return self.for_trace(trace_id).recorded()

    def cost(self, trace_id: str, repairs: Sequence[BlamedOp]) -> int:
        return self.for_trace(trace_id).joint_cost(_by_case(repairs))

    def replay(
        self, trace_id: str, repairs: Sequence[BlamedOp], cases: Collection[str] | None = None
    ) -> Mapping[str, ReplayedAnswer]:
        replayer = self.for_trace(trace_id)
        repaired = _by_case(repairs)
        self.runs += replayer.joint_cost(repaired)
        return replayer.replay_jointly(repaired, cases, self.precise_search)


def _by_case(repairs: Sequence[BlamedOp]) -> dict[str, set[str]]:
    repaired: dict[str, set[str]] = {}
    for repair in repairs:
        repaired.setdefault(repair.case_id, set()).add(repair.op_id)
    return repaired
