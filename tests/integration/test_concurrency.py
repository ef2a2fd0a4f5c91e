"""Concurrent work on one database: two `memtrace load` processes of different traces at once,
and a load while an attribution runs on another trace. Both finish, every count exact."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from synthetic import write_synthetic_trace

from memtrace.admin import delete_trace
from memtrace.db import Database

pytestmark = pytest.mark.integration
MEMTRACE = str(Path(sys.executable).parent / "memtrace")
COUNT_BY_LABEL = "MATCH (n {trace_id: $t}) RETURN labels(n)[0] AS label, count(*) AS n"
FLOWS = "MATCH ({trace_id: $t})-[r:FLOWS_TO]->() RETURN count(r) AS n"


@pytest.fixture
def traces(db: Database) -> Iterator[list[str]]:
    trace_ids: list[str] = []
    yield trace_ids
    for trace_id in trace_ids:
        delete_trace(db, trace_id)
        db.run("MATCH (a:Attribution {trace_id: $t}) DETACH DELETE a", t=trace_id)


def _env(db: Database) -> dict[str, str]:
    env = {**os.environ, "NEO4J_URI": db.settings.uri, "NEO4J_DATABASE": db.database}
    env["NEO4J_USER"] = db.settings.user
    if db.settings.password is not None:
        env["NEO4J_PASSWORD"] = db.settings.password.get_secret_value()
    return env


def _start(db: Database, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [MEMTRACE, *args], env=_env(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-2000:]
    return out


def _assert_exact(db: Database, trace_id: str, expected: dict[str, int]) -> None:
    labels = {r["label"]: r["n"] for r in db.run(COUNT_BY_LABEL, t=trace_id)}
    assert labels["Operation"] == expected["operations"]
    assert labels["Variable"] == expected["variables"]
    assert labels["Case"] == expected["cases"]
    assert db.run(FLOWS, t=trace_id)[0]["n"] == expected["edges"]
    state = db.run("MATCH (t:Trace {id: $id}) RETURN t.load_state AS s", id=trace_id)
    assert [row["s"] for row in state] == ["complete"]


def test_two_loads_of_different_traces_at_once(
    db: Database, run_id: str, traces: list[str], tmp_path: Path
) -> None:
    expected = {}
    for name in ("a", "b"):
        trace_id = f"{run_id}-{name}"
        traces.append(trace_id)
        expected[trace_id] = write_synthetic_trace(
            tmp_path / f"{name}.jsonl", trace_id, messages=1500, seed=len(name) + ord(name)
        )
    loads = [
        _start(db, "load", str(tmp_path / f"{name}.jsonl"), "--batch-size", "500")
        for name in ("a", "b")
    ]
    for process in loads:
        _finish(process)
    for trace_id, counts in expected.items():
        _assert_exact(db, trace_id, counts)


def test_a_load_while_an_attribution_runs_on_another_trace(
    db: Database, run_id: str, traces: list[str], tmp_path: Path, shared_data: Path
) -> None:
    graph, loading = f"{run_id}-graph", f"{run_id}-big"
    traces.extend([graph, loading])
    source = shared_data / "smartcomment" / "locomo_locomo-1.json"
    _finish(_start(db, "load", str(source), "--trace-id", graph))
    expected = write_synthetic_trace(tmp_path / "big.jsonl", loading, messages=8000)
    load = _start(db, "load", str(tmp_path / "big.jsonl"), "--batch-size", "500")
    deadline = time.monotonic() + 120
    query = "MATCH (v:Variable {trace_id: $t}) RETURN count(v) AS n"
    while db.run(query, t=loading)[0]["n"] == 0 and time.monotonic() < deadline:
        assert load.poll() is None, "the load ended before the attribution started"
        time.sleep(0.05)
    attribution = _start(
        db, "attribute", "--trace", graph, "--judge", "offline", "--run-id", run_id
    )
    _finish(attribution)
    overlapped = load.poll() is None
    _finish(load)
    _assert_exact(db, loading, expected)
    written = db.run(
        "MATCH (a:Attribution {run_id: $r, trace_id: $t}) RETURN count(a) AS n",
        r=run_id,
        t=graph,
    )[0]["n"]
    assert written == 34  # every failed case of locomo-1 (tests/integration/test_load.py)
    assert overlapped, "the attribution finished after the load; nothing ran concurrently"
