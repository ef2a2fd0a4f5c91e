"""A user's own system replayed through the plugin point, from the CLI, on the real Neo4j:
TripLog (tests/triplog_system.py, not a reference system) traced with memtrace.tracing, its
replayer named with --replayer or registered as an entry point; the replay judge names the
operation each failure's cause was written down for, the verdict says what the repair changed,
and the what-if and `bench natural` replay it too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import triplog_system
from click.testing import CliRunner

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.replay import can_replay
from memtrace.replay.hook import read_records

pytestmark = pytest.mark.integration
REPLAYER = "triplog_system:make_replayer"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@dataclass(frozen=True)
class Traced:
    trace_id: str
    path: Path
    ops: dict[str, str]  # replay step -> op id


@pytest.fixture
def traced(db: Database, run_id: str, tmp_path: Path) -> Iterator[Traced]:
    path = tmp_path / "traces" / f"{run_id}.jsonl"
    path.parent.mkdir()
    answers = triplog_system.write_trace(path, run_id)
    assert not any(passed for passed, _ in answers.values())  # every failure written down
    steps = {
        r["metadata"]["replay_step"]: r["id"]
        for r in read_records(path)
        if r["type"] == "operation" and "replay_step" in (r.get("metadata") or {})
    }
    load_paths(db, [str(path)], LoadOptions())
    try:
        yield Traced(run_id, path, steps)
    finally:
        db.run(
            "MATCH (w:WhatIf {run_id: $run_id}) OPTIONAL MATCH (w)-[:HAS_CLASS]->(c) "
            "DETACH DELETE w, c",
            run_id=run_id,
        )
        db.run("MATCH (a:Attribution {run_id: $run_id}) DETACH DELETE a", run_id=run_id)
        delete_trace(db, run_id)


def assert_planted(records: list[dict[str, Any]], traced: Traced) -> None:
    result = {str(r["case_id"]): r["error_attribution_result"] for r in records}
    blamed = {c: (found["op_id"], found["error_type"]) for c, found in result.items()}
    expected = {
        case_id: (traced.ops[step], error_type)
        for case_id, (step, error_type) in triplog_system.PLANTED.items()
    }
    assert blamed == expected


def test_the_replay_judge_names_the_planted_ops_through_replayer(traced: Traced) -> None:
    before = traced.path.read_bytes()
    args = ["attribute", "--trace", traced.trace_id, "--judge", "replay", "--no-write"]
    code, out = invoke(*args, "--replayer", REPLAYER, "--workers", "2", "--json")
    assert code == 0, out
    records = json.loads(out)
    assert_planted(records, traced)
    by_case = {r["case_id"]: r for r in records}
    changed = [c["changed"] for c in by_case["q-tea"]["counterfactuals"]["candidates"]]
    assert "kept the note 'tea shop opens at nine' instead of overwriting it" in changed
    assert "repaired by the system's oracle" not in out
    assert traced.path.read_bytes() == before  # a replay never writes the trace

    # without a replayer: the reason once, naming the way out
    code, out = invoke(*args)
    assert code != 0
    assert out.count("no replayer for system 'triplog'") == 1, out
    assert "--replayer module:attr" in out


def test_a_bad_replayer_spec_is_one_clear_error(traced: Traced) -> None:
    args = ["attribute", "--trace", traced.trace_id, "--judge", "replay", "--no-write"]
    code, out = invoke(*args, "--replayer", "triplog_system:no_such_factory")
    assert code != 0 and "has no 'no_such_factory'" in out and "Traceback" not in out
    code, out = invoke(*args, "--replayer", "triplog_system")
    assert code != 0 and "expected module:attr" in out


def test_an_entry_point_registers_the_replayer(
    traced: Traced, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not can_replay("triplog")
    # an installed package of the user's: its metadata, as pip writes it, on the path
    info = tmp_path / "site" / "triplog-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triplog\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[memtrace.replayers]\ntriplog = {REPLAYER}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert can_replay("triplog") and not can_replay("triplog", source="otlp")
    code, out = invoke(
        "attribute", "--trace", traced.trace_id, "--judge", "replay", "--no-write", "--json"
    )
    assert code == 0, out
    assert_planted(json.loads(out), traced)


def test_what_if_and_bench_natural_replay_the_users_system(traced: Traced, tmp_path: Path) -> None:
    run = traced.trace_id
    code, out = invoke(
        "attribute", "--trace", run, "--judge", "replay", "--run-id", run, "--replayer", REPLAYER
    )
    assert code == 0, out
    code, out = invoke(
        "patterns", "--run", run, "--what-if", "--replayer", REPLAYER, "--format", "json"
    )
    assert code == 0, out
    classes = {c["error_type"]: c for c in json.loads(out)["classes"]}
    # each class's repairs rescue its cases: the two overwrites together, the dropped clause
    assert classes["UpdateError"]["rescued"] == 2 and classes["UpdateError"]["broken"] == 0
    assert classes["ExtractionError"]["rescued"] == 1

    out_dir = tmp_path / "labelled"
    code, out = invoke(
        "bench", "natural", str(traced.path), "--out", str(out_dir), "--replayer", REPLAYER,
        "--json",
    )  # fmt: skip
    assert code == 0, out
    summary = json.loads(out)
    assert (summary["failed"], summary["labeled"], summary["errors"]) == (3, 3, 0)
    labels = {
        r["id"]: r["labels"][0] for r in read_records(out_dir / traced.path.name) if r.get("labels")
    }
    assert {c: (lab["op_id"], lab["error_type"]) for c, lab in labels.items()} == {
        c: (traced.ops[step], kind) for c, (step, kind) in triplog_system.PLANTED.items()
    }
    assert "labels" not in traced.path.read_text(encoding="utf-8")  # the copy is labelled
