"""The replay hook for a system of your own, traced with ``memtrace.tracing``.

Two things make a system replayable:

1. Each operation a repair may address names its step in its metadata, a key that is the same
   logical step in every run: ``operation("extract", metadata={STEP: f"extract:{msg_id}"})``.
2. The system answers one case again with some steps repaired, by an object with
   ``replay(case_id, steps) -> (passed, prediction)`` (``ReplayableSystem``): it re-runs what the
   case needs, corrects the output of each step in ``steps`` (its own oracle: it knows what a
   correct extraction or retrieval is for that case) and judges the answer.

``SystemReplayer(trace_path, system)`` then replays by op id of the trace, as the reference
systems' ``Replayer`` does, so ``executed_label`` and the replay judge work on it unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Final, Protocol

from memtrace.errors import NotReplayableError
from memtrace.replay.engine import CaseReplay
from memtrace.systems.core import Repaired
from memtrace.taxonomy import ErrorType

STEP: Final = "replay_step"  # the operation metadata key naming its step


class ReplayableSystem(Protocol):
    def replay(self, case_id: str, steps: frozenset[str]) -> tuple[bool, str]: ...


def steps_of(path: Path) -> dict[str, str]:
    """Op id -> step, from the operations' ``replay_step`` metadata in a native trace."""
    steps = {}
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            step = (record.get("metadata") or {}).get(STEP) if isinstance(record, dict) else None
            if record.get("type") == "operation" and isinstance(step, str):
                steps[record["id"]] = step
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        raise NotReplayableError(f"{path}: not a native trace ({exc})") from None
    if not steps:
        raise NotReplayableError(
            f"{path}: no operation names a replay step (metadata {STEP!r}); "
            "see memtrace.replay.hook"
        )
    return steps


class SystemReplayer:
    """Replays a user's traced system by op id (``Replayer``'s interface)."""

    def __init__(
        self,
        path: Path,
        system: ReplayableSystem,
        error_types: Mapping[str, ErrorType] | None = None,
    ) -> None:
        """``error_types``: step prefix (``extract``) -> the error type its repair undoes."""
        self.steps = steps_of(path)
        self.system = system
        self.error_types = dict(error_types or {})
        self.replays = 0

    def replay(self, case_id: str, repaired: Collection[str] = ()) -> CaseReplay:
        unknown = [op for op in repaired if op not in self.steps]
        if unknown:
            raise NotReplayableError(f"operation {unknown[0]!r} names no replay step")
        steps = frozenset(self.steps[op] for op in repaired)
        self.replays += 1
        passed, prediction = self.system.replay(case_id, steps)
        changes = tuple(
            Repaired(self.steps[op], op, "repaired by the system's oracle", self._type(op))
            for op in repaired
        )
        return CaseReplay(case_id, passed, prediction, changes)

    def _type(self, op: str) -> ErrorType:
        prefix = self.steps[op].split(":", 1)[0]
        return self.error_types.get(prefix, "ResponseError")
