"""The re-load swap's fallbacks on the real Neo4j: a swap the server refuses for its transaction
memory is rolled back and done in batches (loaders/load.py), and a staged copy that vanished
before the swap changes nothing (loaders/writer.py).

The refusal is raised inside the real swap transaction after every step of it ran on the server
(the old copy re-keyed to the retired id, the staged one to the trace id), as the server's own
``Neo.TransientError.General.MemoryPoolOutOfMemoryError``: what is checked is that the server
rolls all of it back and that memtrace's error translation and fallback take over. Making the
shared server itself run out of transaction memory would need a global setting that every other
writer shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from neo4j.exceptions import Neo4jError as DriverNeo4jError
from reload_checks import assert_exact, copies_left, graph_of

from memtrace.admin import delete_trace
from memtrace.cypher import Query, get_query
from memtrace.db import Database
from memtrace.errors import MemtraceError, TransactionTooLargeError
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.loaders.writer import begin_staged_copy, swap_in_staged_copy
from memtrace.taxonomy import staged_trace_id

pytestmark = pytest.mark.integration
SMALL = Path(__file__).resolve().parent.parent / "data" / "native" / "small.jsonl"
SMALL_COUNTS = {"operations": 7, "variables": 10, "cases": 1, "edges": 4, "labels": 1}
OUT_OF_MEMORY = "Neo.TransientError.General.MemoryPoolOutOfMemoryError"


def out_of_memory() -> DriverNeo4jError:
    """The error the server sends when a transaction exceeds its memory pool."""
    return DriverNeo4jError._hydrate_neo4j(code=OUT_OF_MEMORY, message="tx memory exceeded")


class RefusingSwaps(Database):
    """The real database; the one-transaction swap runs every step, then the server refuses it
    for memory (``refusals`` times)."""

    def __init__(self, db: Database, refusals: int = 1) -> None:
        super().__init__(db.driver, db.settings)
        self.refusals = refusals
        self.swaps: list[int] = []  # steps of each swap transaction tried

    def write_together(
        self,
        steps: Sequence[tuple[Query | str, dict[str, Any]]],
        check: Callable[[int, list[dict[str, Any]]], None] | None = None,
    ) -> list[list[dict[str, Any]]]:
        if steps[0][0] != get_query("load/swap_trace"):
            return super().write_together(steps, check)
        self.swaps.append(len(steps))
        refuse = self.refusals > 0 and len(steps) > 2  # the one-transaction swap
        self.refusals -= refuse

        def then_refuse(step: int, records: list[dict[str, Any]]) -> None:
            if check is not None:
                check(step, records)
            if refuse and step == len(steps) - 1:
                raise out_of_memory()

        return super().write_together(steps, then_refuse)


@pytest.fixture
def trace(db: Database, run_id: str) -> Iterator[str]:
    load_paths(db, [str(SMALL)], LoadOptions(trace_id=run_id))
    yield run_id
    delete_trace(db, run_id)


def test_a_refused_swap_changes_nothing(db: Database, trace: str) -> None:
    before = graph_of(db, trace)
    begin_staged_copy(db, trace, {"name": "staged"})
    refusing = RefusingSwaps(db)
    with pytest.raises(TransactionTooLargeError, match="MemoryPoolOutOfMemoryError"):
        swap_in_staged_copy(refusing, trace, {}, max_nodes=40_000)
    assert refusing.swaps == [5]  # swap, drop attributions, two re-keys, reviews: rolled back
    assert graph_of(db, trace) == before
    assert copies_left(db, trace) == {staged_trace_id(trace): ["staging"]}


def test_a_swap_refused_for_memory_is_done_in_batches(db: Database, trace: str) -> None:
    refusing = RefusingSwaps(db)
    load_paths(refusing, [str(SMALL)], LoadOptions(trace_id=trace, atomic_swap_nodes=40_000))
    assert refusing.swaps == [5, 2]  # refused, then the batches' last step
    assert_exact(db, trace, SMALL_COUNTS)


def test_a_staged_copy_that_vanished_before_the_swap_changes_nothing(
    db: Database, trace: str
) -> None:
    before = graph_of(db, trace)
    with pytest.raises(MemtraceError, match="staged copy vanished before the swap"):
        swap_in_staged_copy(db, trace, {}, max_nodes=40_000)
    assert graph_of(db, trace) == before
    assert copies_left(db, trace) == {}
    # a staged copy that is not complete yet is not swapped in either ('staging' only)
    begin_staged_copy(db, trace, {"name": "staged"})
    db.run("MATCH (t:Trace {id: $s}) SET t.load_state = 'loading'", s=staged_trace_id(trace))
    with pytest.raises(MemtraceError, match="vanished"):
        swap_in_staged_copy(db, trace, {}, max_nodes=40_000)
    assert graph_of(db, trace) == before
