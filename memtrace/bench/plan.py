"""Which faults to plant where: candidates from a fault-free baseline run.

A question is a target when the baseline answers it correctly with every evidence sentence in
the answer context. Construction faults (extraction, update, deletion) need a single evidence
message, so the label can name one operation; retrieval and response faults take any number.

Each system gets the fault types its pipeline can have, as its class declares them
(``System.fault_types``, collected in ``systems/registry.py:FAULT_TYPES``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from memtrace.errors import ConfigError
from memtrace.systems.core import RERANK_ANCHOR, ConversationRun, Fault, QuestionResult
from memtrace.systems.locomo import Conversation
from memtrace.systems.registry import FAULT_TYPES
from memtrace.taxonomy import ERROR_TYPES, ErrorType

TYPES: Final[tuple[ErrorType, ...]] = ERROR_TYPES
LATER_MESSAGES = 10  # update/deletion faults strike at one of the next messages with facts
LATER_SESSIONS = 3  # long-context: the window update of one of the next sessions trims it


@dataclass(frozen=True, slots=True)
class FaultSite:
    conv: int  # index into the conversation list
    fault: Fault


def is_target(result: QuestionResult) -> bool:
    return result.passed and bool(result.keys) and not result.missing


def system_types(system: str, requested: Sequence[str] | None = None) -> tuple[ErrorType, ...]:
    """The fault types to plant in ``system``: ``requested`` (checked) or all it can have."""
    if system not in FAULT_TYPES:
        raise ConfigError(
            f"bench make: unknown system {system!r} (expected one of {', '.join(FAULT_TYPES)})"
        )
    allowed = FAULT_TYPES[system]
    if requested is None:
        return allowed
    for kind in requested:
        if kind not in allowed:
            raise ConfigError(
                f"bench make: system {system!r} cannot have a {kind} (its pipeline has "
                f"{', '.join(allowed)})"
            )
    return tuple(t for t in allowed if t in requested)


def candidates(
    system: str, index: int, conv: Conversation, base: ConversationRun, rng: random.Random
) -> dict[ErrorType, list[FaultSite]]:
    order = [t.dia_id for s in conv.sessions for t in s.turns]
    position = {dia_id: i for i, dia_id in enumerate(order)}
    session_of = {t.dia_id: n for n, s in enumerate(conv.sessions) for t in s.turns}
    out: dict[ErrorType, list[FaultSite]] = {t: [] for t in FAULT_TYPES[system]}

    def add(kind: ErrorType, case_id: str, anchor: str, keys: frozenset[str]) -> None:
        if kind in out:
            out[kind].append(FaultSite(index, Fault("", kind, case_id, anchor, keys)))

    for result in base.results:
        if not is_target(result):
            continue
        keys = frozenset(result.keys)
        add("RetrievalError", result.case_id, result.case_id, keys)
        if system == "evermemos":
            add("RetrievalError", result.case_id, f"{RERANK_ANCHOR}{result.case_id}", keys)
        add("ResponseError", result.case_id, result.case_id, keys)
        if len(keys) != 1:
            continue
        dia_id = next(iter(keys)).split("#")[0]
        if system == "long-context":  # anchor: the first message of a later, trimming session
            later_sessions = [s.turns[0].dia_id for s in conv.sessions[session_of[dia_id] + 1 :]]
            if later_sessions:
                anchor = rng.choice(later_sessions[:LATER_SESSIONS])
                add("UpdateError", result.case_id, anchor, keys)
            continue
        add("ExtractionError", result.case_id, dia_id, keys)
        later = [d for d in order[position[dia_id] + 1 :] if base.fact_counts.get(d)]
        if later:
            add("UpdateError", result.case_id, rng.choice(later[:LATER_MESSAGES]), keys)
            add("DeletionError", result.case_id, rng.choice(later[:LATER_MESSAGES]), keys)
    return out


class Selector:
    """Picks candidates round-robin over the types of ``pools``, never two faults on one question,
    one evidence sentence or one (type, anchor)."""

    def __init__(self, pools: dict[ErrorType, list[FaultSite]], total: int) -> None:
        self.pools = pools
        types = list(pools)
        self.quota = {
            t: total // len(types) + (i < total % len(types)) for i, t in enumerate(types)
        }
        self.used: set[tuple[int, str]] = set()
        self.count = 0

    def conflicts(self, c: FaultSite) -> bool:
        f = c.fault
        marks = {(c.conv, f"case:{f.target}"), (c.conv, f"anchor:{f.type}:{f.anchor}")}
        marks |= {(c.conv, f"key:{k}") for k in f.sources}
        return bool(marks & self.used)

    def take(self, c: FaultSite) -> FaultSite:
        f = c.fault
        self.used |= {(c.conv, f"case:{f.target}"), (c.conv, f"anchor:{f.type}:{f.anchor}")}
        self.used |= {(c.conv, f"key:{k}") for k in f.sources}
        self.count += 1
        return replace(c, fault=replace(f, id=f"fault-{self.count:04d}"))

    def next(self, kind: ErrorType) -> FaultSite | None:
        pool = self.pools[kind]
        while pool:
            candidate = pool.pop(0)
            if not self.conflicts(candidate):
                return candidate
        return None
