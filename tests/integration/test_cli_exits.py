"""Honest exits: work not done exits non-zero with one clear line, and every `--json` output
parses with a strict JSON parser (no NaN)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from interrupt import interrupt_load
from synthetic import write_synthetic_trace

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths

pytestmark = pytest.mark.integration
SMALL = Path(__file__).resolve().parent.parent / "data" / "native" / "small.jsonl"


def _refuse(constant: str) -> Any:
    raise ValueError(f"not strict JSON: {constant}")


def strict(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def loaded(db: Database, run_id: str) -> Iterator[str]:
    load_paths(db, [str(SMALL)], LoadOptions(trace_id=run_id))
    yield run_id
    delete_trace(db, run_id)
    db.run("MATCH (a:Attribution) WHERE a.run_id STARTS WITH $r DETACH DELETE a", r=run_id)


def test_missing_or_loading_trace_is_refused(db: Database, run_id: str) -> None:
    missing = invoke("attribute", "--trace", f"{run_id}-typo", "--judge", "offline")
    assert missing.exit_code == 1
    assert f"no trace '{run_id}-typo'" in error_line(missing)
    db.run("CREATE (:Trace {id: $id, load_state: 'loading'})", id=run_id)
    try:
        loading = invoke("attribute", "--trace", run_id, "--judge", "offline")
        assert loading.exit_code == 1
        line = error_line(loading)
        assert "is loading" in line
        assert f"memtrace db delete --trace {run_id}" in line
        stats = invoke("db", "stats")
        assert run_id in stats.output
        assert "loading" in stats.output
    finally:
        delete_trace(db, run_id)


def test_unknown_run_and_missing_trace_delete_exit_non_zero(run_id: str) -> None:
    unknown = invoke("eval", "--run-id", f"{run_id}-none")
    assert unknown.exit_code == 1
    assert f"no attribution run '{run_id}-none'" in error_line(unknown)
    gone = invoke("db", "delete", "--trace", f"{run_id}-none")
    assert gone.exit_code == 1
    assert "not found, nothing deleted" in error_line(gone)
    no_run = invoke("db", "delete", "--run", f"{run_id}-none")
    assert no_run.exit_code == 1


def test_every_case_failing_exits_non_zero_with_the_whole_reason(loaded: str) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-test"}
    result = invoke(
        "attribute", "--trace", loaded, "--judge", "llm", "--run-id", f"{loaded}-llm", env=env
    )
    assert result.exit_code == 1
    line = error_line(result)
    assert line.startswith("error: nothing attributed: 1 of 1 cases failed: LLM request to")
    assert "http://127.0.0.1:9/v1 (model" in line  # the reason whole, not cut at 40 characters


def test_every_json_output_is_strict(loaded: str, tmp_path: Path) -> None:
    run = f"{loaded}-offline"
    outputs = {
        "load": invoke("load", "--dry-run", "--json", str(SMALL)),
        "db stats": invoke("db", "stats", "--json"),
        "neo4j status": invoke("neo4j", "status", "--json"),
        "attribute": invoke(
            "attribute", "--trace", loaded, "--judge", "offline", "--run-id", run, "--json"
        ),
        "eval": invoke("eval", "--run-id", run, "--trace", loaded, "--json"),
        "explain": invoke("explain", "q-1", "--trace", loaded, "--judge", "offline", "--json"),
        "bench make": invoke(
            "bench", "make", "--system", "mem0", "--faults", "4", "--out", str(tmp_path), "--json"
        ),
    }
    for name, result in outputs.items():
        assert result.exit_code == 0, (name, result.output, result.stderr)
        strict(result.stdout)
    evaluation = strict(outputs["eval"].stdout)
    whole = next(r for r in evaluation["summary"] if r["method"] == "baseline:whole-trace")
    assert whole["op_accuracy"] is None
    assert "not measured" in whole["note"]
    bench = strict(outputs["bench make"].stdout)
    assert sum(bench["asked"].values()) == 4
    for kind, asked in bench["asked"].items():
        assert bench["planted"][kind] <= asked
        assert (bench["planted"][kind] < asked) == (kind in bench["shortfalls"])


def test_ctrl_c_during_a_load_names_the_trace_left_loading(
    db: Database, run_id: str, tmp_path: Path
) -> None:
    path = tmp_path / "big.jsonl"
    write_synthetic_trace(path, run_id, messages=4000)
    try:
        returncode, stderr = interrupt_load(db, path, run_id)
        assert returncode == 1
        line = next(x for x in stderr.splitlines() if x.startswith("error:"))
        assert f"interrupted: trace '{run_id}' was left 'loading'" in line
        assert f"memtrace db delete --trace {run_id}" in line
        assert "Aborted!" not in stderr
        stats = invoke("db", "stats")
        assert "not completely loaded" in stats.output
        assert run_id in stats.output.split("not completely loaded")[1]
    finally:
        delete_trace(db, run_id)
