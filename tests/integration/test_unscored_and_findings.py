"""Unscored is not passed, and the load says what will degrade attribution (issue 30), on the
real Neo4j with the diary assistant of tests/diary_system.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from diary_system import Mistakes, run_diary

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database

pytestmark = pytest.mark.integration


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def traces(db: Database, run_id: str) -> Iterator[str]:
    yield run_id
    for suffix in ("-none", "-some"):
        delete_trace(db, run_id + suffix)
    db.run("MATCH (a:Attribution) WHERE a.run_id STARTS WITH $r DETACH DELETE a", r=run_id)


def test_every_case_unscored_exits_non_zero_with_the_reason(traces: str, tmp_path: Path) -> None:
    trace_id = traces + "-none"
    path = tmp_path / "none.jsonl"
    run_diary(path, Mistakes(scored=0), trace_id=trace_id)
    loaded = invoke("load", str(path), "--json")
    assert loaded.exit_code == 0, loaded.output  # the graph is fine; the load says what it lacks
    summary = json.loads(loaded.stdout)
    assert summary["problems"] == {"error": 1, "warning": 0}
    assert summary["files"][0]["findings"][0]["code"] == "unscored-cases"
    assert "unscored-cases" in loaded.stderr and "fix: give each case judge_score=" in (
        loaded.stderr
    )
    result = invoke("attribute", "--trace", trace_id, "--judge", "offline", "--no-write")
    assert result.exit_code == 1
    assert f"nothing to attribute in trace '{trace_id}': 2 of 2 cases have no score" in (
        result.stderr
    )
    assert "q-pet, q-town" in result.stderr
    assert "no failed cases" not in result.output


def test_some_cases_unscored_are_counted_named_and_in_the_json(traces: str, tmp_path: Path) -> None:
    trace_id = traces + "-some"
    path = tmp_path / "some.jsonl"
    run_diary(path, Mistakes(scored=1), trace_id=trace_id)
    assert invoke("load", str(path)).exit_code == 0
    args = ["attribute", "--trace", trace_id, "--judge", "offline", "--run-id", traces]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "1 of 2 cases have no score" in result.stderr and "q-town" in result.stderr
    records = json.loads(invoke(*args, "--no-write", "--json").stdout)
    assert [(r["case_id"], r.get("unscored", False)) for r in records] == [
        ("q-pet", False),
        ("q-town", True),
    ]
    assert records[1]["error_attribution_result"] is None
