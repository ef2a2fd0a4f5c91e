"""A `bench make` set loads into Neo4j with every label on an operation of the right kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtrace.admin import delete_trace
from memtrace.bench.make import BenchOptions, make_bench
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo

pytestmark = pytest.mark.integration

LABELS = """
MATCH (c:Case {trace_id: $trace_id})-[l:LABELED]->(o:Operation)
RETURN l.error_type AS type, l.source AS source, o.kind AS kind, c.failed AS failed
"""
KIND = {
    "ExtractionError": "extraction",
    "UpdateError": "update",
    "DeletionError": "update",
    "RetrievalError": "retrieval",
    "ResponseError": "generation",
}


@pytest.mark.parametrize("fmt", ["native", "smartcomment"])
def test_bench_labels_land_on_operations_of_the_right_kind(
    db: Database, run_id: str, tmp_path: Path, fmt: str
) -> None:
    options = BenchOptions(faults=5, seed=2, format=fmt, prefix=f"{run_id}-")  # type: ignore[arg-type]
    report = make_bench(load_locomo(SAMPLE_PATH), tmp_path, options)
    trace_ids = [p.stem for p in report.files]
    try:
        load_paths(db, [str(p) for p in report.files], LoadOptions())
        rows = [row for t in trace_ids for row in db.run(LABELS, trace_id=t)]
        injected = [r for r in rows if r["source"] == "injected"]
        assert len(injected) == sum(report.injected.values()) + sum(report.collateral.values())
        assert {r["type"] for r in injected} == set(KIND)
        assert all(r["kind"] == KIND[r["type"]] and r["failed"] for r in rows)
    finally:
        for trace_id in trace_ids:
            delete_trace(db, trace_id)
