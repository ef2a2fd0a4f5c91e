"""A user's first contact (issue 40), on the real Neo4j and through the CLI: PAMem
(tests/pamem_system.py, a rule-based personal-assistant memory written for these tests, not a
reference system) traced with memtrace.tracing, its replayer module in a folder of the user's
own, named from there with --replayer; its answer op has no replay step, as docs/replay.md
advises, and its traces carry no labels."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pamem_system
import pytest
from click.testing import CliRunner

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.cli.neo4j import warm_first_run
from memtrace.db import Database
from memtrace.loaders import warm
from memtrace.loaders.checks import check_records
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.loaders.native import read_native
from memtrace.replay.hook import read_records
from memtrace.settings import load_settings

pytestmark = pytest.mark.integration
REPLAYER = "pamem_replay:make_replayer"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@dataclass(frozen=True)
class Traced:
    trace_id: str
    path: Path
    ops: dict[str | None, str]  # replay step -> op id (None: the answer op of q-town)


@pytest.fixture
def user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's project folder, holding their replayer module, and memtrace run from it."""
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(Path(pamem_system.__file__), folder / "pamem_replay.py")
    monkeypatch.chdir(folder)
    yield folder
    sys.modules.pop("pamem_replay", None)
    if str(folder) in sys.path:
        sys.path.remove(str(folder))


@pytest.fixture
def traced(db: Database, run_id: str, user_folder: Path) -> Iterator[Traced]:
    path = user_folder / f"{run_id}.jsonl"
    answers = pamem_system.write_trace(path, run_id)
    assert sorted(c for c, passed in answers.items() if not passed) == sorted(pamem_system.PLANTED)
    records = read_records(path)
    steps: dict[str | None, str] = {
        r["metadata"]["replay_step"]: r["id"]
        for r in records
        if r["type"] == "operation" and "replay_step" in (r.get("metadata") or {})
    }
    responds = [r["id"] for r in records if r.get("name") == "pamem.respond"]
    steps[None] = responds[list(pamem_system.QUESTIONS).index("q-town")]
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


def test_a_users_system_gets_verdicts_what_if_and_labels(traced: Traced, tmp_path: Path) -> None:
    run = traced.trace_id
    code, out = invoke(
        "attribute", "--trace", run, "--judge", "replay", "--run-id", run, "--replayer", REPLAYER
    )
    assert code == 0, out
    # no case has a label: the hint leads to the classes and to review, not to a failing eval
    assert "memtrace eval --run-id" not in out and f"memtrace patterns --run {run}" in out
    code, out = invoke("eval", "--run-id", run)
    assert code != 0 and "attributed no case with a" in out

    code, out = invoke("patterns", "--run", run, "--format", "json")
    assert code == 0, out
    found = {(c["op_name"], c["error_type"], c["stage"]) for c in json.loads(out)}
    assert found == {
        ("pamem.take_note", "ExtractionError", "extraction"),
        ("pamem.consolidate", "UpdateError", "update"),
        ("pamem.forget", "DeletionError", "deletion"),  # its own stage, not update's
        ("pamem.recall", "RetrievalError", "retrieval"),
        ("pamem.respond", "ResponseError", "generation"),
    }
    code, out = invoke("patterns", "--run", run)
    assert code == 0 and "no optimizable input: the blamed operation reads no prompt" in out

    # the what-if measures every class, the answer op's by its oracle (the gold answer)
    code, out = invoke(
        "patterns", "--run", run, "--what-if", "--replayer", REPLAYER, "--format", "json"
    )
    assert code == 0, out
    classes = {c["error_type"]: c for c in json.loads(out)["classes"]}
    # a class repairs its blamed ops only: the skipped note and the overwrite are still not
    # recalled (bench natural below repairs their downstream too)
    assert {t: (c["replayable"], c["rescued"]) for t, c in classes.items()} == {
        "ExtractionError": (True, 0),
        "UpdateError": (True, 0),
        "DeletionError": (True, 1),
        "RetrievalError": (True, 1),
        "ResponseError": (True, 1),
    }, out
    assert classes["ResponseError"]["replays"] == 0  # nothing re-runs for the gold answer

    # explain: the answer told in a question is found by --evidence retrieved, the Browser
    # query starts from it, and the confidence says it is a prior here
    code, out = invoke("explain", "q-allergy", "--trace", run, "--evidence", "retrieved")
    assert code == 0, out
    assert ':param message_ids => ["msg-m2@1"];' in out
    assert "no retrieved message covers" not in out
    assert "confidence: not calibrated on pamem" in out
    code, out = invoke("explain", "q-allergy", "--trace", run, "--judge", "replay",
                       "--replayer", REPLAYER, "--json")  # fmt: skip
    assert code == 0, out
    assert json.loads(out)["confidence_scale"] == "observed"

    code, out = invoke("report", "--run", run, "--out", str(tmp_path / "report.html"))
    assert code == 0, out

    out_dir = tmp_path / "labelled"
    code, out = invoke(
        "bench", "natural", str(traced.path), "--out", str(out_dir), "--replayer", REPLAYER,
        "--json",
    )  # fmt: skip
    assert code == 0, out
    summary = json.loads(out)
    assert (summary["failed"], summary["labeled"], summary["errors"]) == (5, 5, 0), summary
    labels = {
        r["id"]: r["labels"][0] for r in read_records(out_dir / traced.path.name) if r.get("labels")
    }
    planted = {c: (traced.ops[s], t) for c, (s, t) in pamem_system.PLANTED.items()}
    assert {c: (lab["op_id"], lab["error_type"]) for c, lab in labels.items()} == planted


def test_replayer_module_outside_the_folder_is_one_clear_error(
    traced: Traced, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not the folder holding pamem_replay.py
    code, out = invoke(
        "attribute", "--trace", traced.trace_id, "--judge", "replay", "--no-write",
        "--replayer", "pamem_replay:make_replayer",
    )  # fmt: skip
    assert code != 0 and "Traceback" not in out
    assert "no module 'pamem_replay' in the current folder" in out and "PYTHONPATH" in out


def test_the_start_warms_the_first_load_and_attribute_and_leaves_nothing(db: Database) -> None:
    warm_first_run(db, load_settings())
    assert db.run("MATCH (t:Trace {id: $id}) RETURN t", id=warm.WARM_TRACE_ID) == []
    left = db.run("MATCH (n {trace_id: $id}) RETURN count(n) AS n", id=warm.WARM_TRACE_ID)
    assert left[0]["n"] == 0
    # the shipped trace is one a first run exercises: a failed case the offline judge blames
    assert check_records(record for _, record in read_native(warm.WARM_TRACE)) == []
