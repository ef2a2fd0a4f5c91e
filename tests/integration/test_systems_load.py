"""`memtrace run --load` end to end: a traced system's output becomes the documented graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database

pytestmark = pytest.mark.integration

PATH_TO_PREDICTION = """
MATCH (c:Case {trace_id: $trace_id})-[:QUERY]->(q:Variable)<-[:READS]-(search:Operation)
MATCH (c)-[:PREDICTION]->(p:Variable)<-[:WRITES]-(answer:Operation)
MATCH (answer)-[:DEPENDS_ON*1..]->(search)
RETURN count(DISTINCT c) AS reachable, collect(DISTINCT search.kind) AS kinds,
       collect(DISTINCT answer.kind) AS answer_kinds
"""


def test_run_and_load_mem0_sample(db: Database, run_id: str, tmp_path: Path) -> None:
    prefix = f"{run_id}-"
    trace_id = f"{prefix}mem0-locomo-1"
    try:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "mem0",
                "--out",
                str(tmp_path),
                "--conversations",
                "1",
                "--trace-prefix",
                prefix,
                "--load",
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["loaded"] == [trace_id]
        (row,) = db.run(
            "MATCH (t:Trace {id: $trace_id}) RETURN t.load_state AS state, t.n_cases AS cases",
            trace_id=trace_id,
        )
        assert row == {"state": "complete", "cases": summary["accuracy"]["all"]["total"]}
        (path,) = db.run(PATH_TO_PREDICTION, trace_id=trace_id)
        assert path["reachable"] == row["cases"]
        assert path["kinds"] == ["retrieval"] and path["answer_kinds"] == ["generation"]
        evidence = db.run(
            "MATCH (c:Case {trace_id: $trace_id})-[:EVIDENCE]->(m:Variable) "
            "RETURN DISTINCT m.category AS category",
            trace_id=trace_id,
        )
        assert evidence == [{"category": "message"}]
    finally:
        delete_trace(db, trace_id)
