"""The replay judge and `bench natural` on the real Neo4j: verdicts with their replays, explain,
labels of source replay scored by `eval --labels replay`, imported traces refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths

pytestmark = pytest.mark.integration


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def locomo_subset(shared_data: Path) -> list[str]:
    """LoCoMo conversation 1 (development data), three sessions, 20 questions: failures."""
    data = str(shared_data / "locomo" / "locomo10.json")
    return ["--data", data, "--conversations", "1", "--sessions", "1,2,3", "--questions", "20"]


def test_attribute_with_the_replay_judge_and_explain(
    db: Database, run_id: str, tmp_path: Path, shared_data: Path
) -> None:
    code, out = invoke(
        "run", "mem0", *locomo_subset(shared_data), "--out", str(tmp_path), "--deterministic"
    )
    assert code == 0, out
    [path] = sorted(tmp_path.glob("*.jsonl"))
    load_paths(db, [str(path)], LoadOptions(trace_id=run_id))
    before = path.read_bytes()
    try:
        code, out = invoke(
            "attribute", "--trace", run_id, "--judge", "replay", "--run-id", run_id, "--json"
        )
        assert code == 0, out
        records = json.loads(out)
        assert records and all(r.get("error") is None for r in records)
        assert all(r["replays"] >= 1 for r in records)
        assert all(r["replays"] <= len(r["counterfactuals"]["candidates"]) + 2 for r in records)
        stored = db.run(
            "MATCH (a:Attribution {run_id: $r}) RETURN a.replays AS n, a.replay_outcomes AS o",
            r=run_id,
        )
        assert len(stored) == len(records) and all(row["n"] >= 1 for row in stored)
        case_id = records[0]["case_id"]
        code, out = invoke("explain", case_id, "--trace", run_id, "--judge", "replay")
        assert code == 0, out
        assert "replays (" in out and "alone" in out
        assert path.read_bytes() == before  # replays never write the trace
    finally:
        delete_trace(db, run_id)


@pytest.mark.parametrize("system", ["rag", "evermemos"])
def test_bench_natural_labels_are_scored_by_eval_labels_replay(
    db: Database, run_id: str, tmp_path: Path, shared_data: Path, system: str
) -> None:
    prefix = f"{run_id}-"
    code, out = invoke(
        "bench", "natural", "--system", system, *locomo_subset(shared_data), "--out", str(tmp_path),
        "--trace-prefix", prefix, "--json",
    )  # fmt: skip
    assert code == 0, out
    summary = json.loads(out)
    trace_id = f"{prefix}{system}-locomo-1"
    try:
        assert summary["failed"] == summary["labeled"] + summary["no_single_decisive"]
        rows = db.run(
            "MATCH (:Case {trace_id: $t})-[l:LABELED]->() RETURN l.source AS s", t=trace_id
        )
        assert len(rows) == summary["labeled"] and {r["s"] for r in rows} <= {"replay"}
        code, out = invoke("attribute", "--trace", trace_id, "--judge", "offline",
                           "--run-id", run_id)  # fmt: skip
        assert code == 0, out
        code, out = invoke("eval", "--run-id", run_id, "--labels", "replay", "--json")
        assert code == 0, out
        scored = json.loads(out)["summary"][0]
        assert scored["cases"] == summary["labeled"]
        code, out = invoke("eval", "--run-id", run_id, "--labels", "human")
        assert code != 0 and "nothing to score" in out
    finally:
        delete_trace(db, trace_id)


def test_an_imported_trace_is_refused_by_the_replay_judge(
    db: Database, run_id: str, tmp_path: Path
) -> None:
    code, out = invoke(
        "bench",
        "make",
        "--conversations",
        "1",
        "--faults",
        "2",
        "--format",
        "smartcomment",
        "--out",
        str(tmp_path),
    )
    assert code == 0, out
    [path] = sorted(tmp_path.glob("*.json"))
    load_paths(db, [str(path)], LoadOptions(trace_id=run_id))
    try:
        code, out = invoke("attribute", "--trace", run_id, "--judge", "replay", "--no-write")
        assert code != 0
        assert "imported from a smartcomment file" in out and "cannot be replayed" in out
    finally:
        delete_trace(db, run_id)
