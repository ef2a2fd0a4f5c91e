"""The offline judge on a fresh `memtrace bench make` benchmark (our fault injector's labels)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from memtrace.attribution.graph import TraceReader
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.run import Options, analyse_case
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.loaders.schema import delete_trace

pytestmark = pytest.mark.integration


def test_offline_judge_on_a_bench_make_set(db: Database, tmp_path: Path) -> None:
    args = ["bench", "make", "--conversations", "1", "--faults", "10", "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    [path] = sorted(tmp_path.glob("*.jsonl"))
    trace_id = f"t{uuid.uuid4().hex[:10]}-bench"
    load_paths(db, [str(path)], LoadOptions(trace_id=trace_id))
    try:
        rows = db.run(
            "MATCH (c:Case {trace_id: $t})-[l:LABELED]->(o) "
            "RETURN c.id AS case_id, o.id AS op_id, l.error_type AS error_type",
            t=trace_id,
        )
        assert len(rows) >= 5
        reader = TraceReader(db)
        hits = types = 0
        for row in rows:
            verdict = analyse_case(reader, OfflineJudge(), trace_id, row["case_id"], Options())
            hits += verdict.verdict.op_id == row["op_id"]
            types += verdict.verdict.error_type == row["error_type"]
        assert hits / len(rows) >= 0.9
        assert types / len(rows) >= 0.95
    finally:
        delete_trace(db, trace_id)
