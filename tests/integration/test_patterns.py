"""Failure patterns against hand-computed counts on a seeded database (tests/patterns_seed.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from patterns_seed import Seed, seed, unseed

from memtrace.db import Database
from memtrace.patterns import CLASS_COLUMNS, failure_classes

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def seeded(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seed]:
    s = seed(db, tmp_path_factory.mktemp("seed"), f"p{uuid.uuid4().hex[:10]}")
    yield s
    unseed(db, s)


def test_failure_classes_match_hand_counts(db: Database, seeded: Seed) -> None:
    classes = failure_classes(db, seeded.run1)
    assert list(classes.columns) == list(CLASS_COLUMNS)
    rows = {(r.system, r.op_name, r.error_type): r for r in classes.itertuples()}
    assert len(rows) == 3
    extraction = rows[("mem0", "memory_system.extract_facts", "ExtractionError")]
    assert extraction.cases == 2
    assert extraction.failures == 4  # q1..q4: the failed attribution of q4 counts too
    assert extraction.share_of_failures == pytest.approx(0.5)
    assert (extraction.blamed_operations, extraction.executions) == (1, 2)
    assert extraction.share_of_executions == pytest.approx(0.5)
    assert extraction.median_confidence == pytest.approx(0.8)
    assert extraction.inputs == ["extract-prompt@1"]
    assert extraction.prompts == ["extract-prompt"] and extraction.parameters == []
    assert extraction.optimizable
    assert extraction.op_kind == "extraction" and extraction.stage == "extraction"
    assert extraction.case_ids == ["q1", "q2"] and extraction.example_cases == ["q1", "q2"]
    assert extraction.trace_ids == [seeded.mem0]

    update = rows[("mem0", "memory_system.update_memory_decision", "UpdateError")]
    assert update.cases == 1 and update.share_of_failures == pytest.approx(0.25)
    assert update.inputs == [] and not update.optimizable  # reads no prompt or parameter
    assert update.share_of_executions == pytest.approx(1.0)

    retrieval = rows[("rag", "memory_system.search_vector_store", "RetrievalError")]
    assert (retrieval.cases, retrieval.failures, retrieval.executions) == (2, 2, 2)
    assert retrieval.share_of_failures == pytest.approx(1.0)
    assert retrieval.share_of_executions == pytest.approx(1.0)
    assert retrieval.inputs == ["top_k@1"] and retrieval.parameters == ["top_k"]
    assert retrieval.stage == "retrieval" and retrieval.median_confidence == pytest.approx(0.7)
    # most cases first; ties by system then op name
    assert list(classes["cases"]) == [2, 2, 1]
    assert list(classes["system"]) == ["mem0", "rag", "mem0"]


def test_failure_class_filters(db: Database, seeded: Seed) -> None:
    only_rag = failure_classes(db, seeded.run1, system="rag")
    assert list(only_rag["system"]) == ["rag"]
    updates = failure_classes(db, seeded.run1, error_type="UpdateError")
    assert list(updates["op_name"]) == ["memory_system.update_memory_decision"]
    assert updates.loc[0, "share_of_failures"] == pytest.approx(0.25)  # still out of all four
    frequent = failure_classes(db, seeded.run1, min_count=2)
    assert sorted(frequent["cases"]) == [2, 2]
    assert failure_classes(db, "no-such-run").empty
    assert list(failure_classes(db, "no-such-run").columns) == list(CLASS_COLUMNS)
