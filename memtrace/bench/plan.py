"""Which faults to plant where: candidates from a fault-free baseline run.

A question is a target when the baseline answers it correctly with every evidence sentence in
the answer context. Construction faults (extraction, update, deletion) need a single evidence
message, so the label can name one operation; retrieval and response faults take any number.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Final, get_args

from memtrace.systems.core import ConversationRun, ErrorType, Fault, QuestionResult
from memtrace.systems.locomo import Conversation

TYPES: Final[tuple[ErrorType, ...]] = get_args(ErrorType)
LATER_MESSAGES = 10  # update/deletion faults strike at one of the next messages with facts


@dataclass(frozen=True, slots=True)
class Candidate:
    conv: int  # index into the conversation list
    fault: Fault


def is_target(result: QuestionResult) -> bool:
    return result.passed and bool(result.keys) and not result.missing


def candidates(
    index: int, conv: Conversation, base: ConversationRun, rng: random.Random
) -> dict[ErrorType, list[Candidate]]:
    order = [t.dia_id for s in conv.sessions for t in s.turns]
    position = {dia_id: i for i, dia_id in enumerate(order)}
    out: dict[ErrorType, list[Candidate]] = {t: [] for t in TYPES}

    def add(kind: ErrorType, case_id: str, anchor: str, keys: frozenset[str]) -> None:
        out[kind].append(Candidate(index, Fault("", kind, case_id, anchor, keys)))

    for result in base.results:
        if not is_target(result):
            continue
        keys = frozenset(result.keys)
        add("RetrievalError", result.case_id, result.case_id, keys)
        add("ResponseError", result.case_id, result.case_id, keys)
        if len(keys) != 1:
            continue
        dia_id = next(iter(keys)).split("#")[0]
        add("ExtractionError", result.case_id, dia_id, keys)
        later = [d for d in order[position[dia_id] + 1 :] if base.fact_counts.get(d)]
        if later:
            add("UpdateError", result.case_id, rng.choice(later[:LATER_MESSAGES]), keys)
            add("DeletionError", result.case_id, rng.choice(later[:LATER_MESSAGES]), keys)
    return out


class Selector:
    """Picks candidates round-robin over the five types, never two faults on one question,
    one evidence sentence or one (type, anchor)."""

    def __init__(self, pools: dict[ErrorType, list[Candidate]], total: int) -> None:
        self.pools = pools
        self.quota = {
            t: total // len(TYPES) + (i < total % len(TYPES)) for i, t in enumerate(TYPES)
        }
        self.used: set[tuple[int, str]] = set()
        self.count = 0

    def conflicts(self, c: Candidate) -> bool:
        f = c.fault
        marks = {(c.conv, f"case:{f.target}"), (c.conv, f"anchor:{f.type}:{f.anchor}")}
        marks |= {(c.conv, f"key:{k}") for k in f.sources}
        return bool(marks & self.used)

    def take(self, c: Candidate) -> Candidate:
        f = c.fault
        self.used |= {(c.conv, f"case:{f.target}"), (c.conv, f"anchor:{f.type}:{f.anchor}")}
        self.used |= {(c.conv, f"key:{k}") for k in f.sources}
        self.count += 1
        return replace(c, fault=replace(f, id=f"fault-{self.count:04d}"))

    def next(self, kind: ErrorType) -> Candidate | None:
        pool = self.pools[kind]
        while pool:
            candidate = pool.pop(0)
            if not self.conflicts(candidate):
                return candidate
        return None
