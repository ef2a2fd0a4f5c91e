"""Neo4j itself killed (SIGKILL to the managed server's pid) in the middle of a load or of an
attribution run, then restarted: the load re-runs to exact counts, the attributions of finished
cases are kept and `attribute --resume` does the rest; nothing is duplicated.

The server is a throwaway one in a temporary home on free ports; only the pid this test started
is ever killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from reload_checks import assert_exact, copies_left, graph_of
from synthetic import write_synthetic_trace
from test_managed_server import free_port, throwaway_layout

from memtrace.db import Database, connect
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.server import manager
from memtrace.server.config import MIB, MemoryPlan, ServerOptions
from memtrace.server.layout import ServerLayout
from memtrace.settings import LLMSettings, Neo4jSettings, Settings
from memtrace.taxonomy import staged_trace_id

pytestmark = pytest.mark.integration
MEMTRACE = str(Path(sys.executable).parent / "memtrace")

COUNT_BY_LABEL = "MATCH (n {trace_id: $t}) RETURN labels(n)[0] AS label, count(*) AS n"
COUNT_BY_TYPE = "MATCH (a {trace_id: $t})-[r]->() RETURN type(r) AS type, count(*) AS n"
DUPLICATE_IDS = """
MATCH (n {trace_id: $t}) WHERE n.id IS NOT NULL
WITH labels(n)[0] AS label, n.id AS id, count(*) AS n WHERE n > 1
RETURN count(*) AS duplicates
"""


class Server:
    """A throwaway managed server that the test may kill and start again."""

    def __init__(self, layout: ServerLayout) -> None:
        self.layout = layout
        self.options = ServerOptions(
            bolt_port=free_port(),
            http_port=free_port(),
            auth=False,
            memory=MemoryPlan(heap_bytes=512 * MIB, pagecache_bytes=128 * MIB),
        )

    def start(self) -> None:
        manager.start(self.layout, self.options)

    def kill(self) -> None:
        pid = manager.running_pid(self.layout)
        assert pid is not None, "the throwaway server is not running"
        os.kill(pid, signal.SIGKILL)  # this test's own server, by its pid
        deadline = time.monotonic() + 30
        while manager.running_pid(self.layout) is not None and time.monotonic() < deadline:
            time.sleep(0.1)

    @property
    def settings(self) -> Settings:
        uri = f"bolt://127.0.0.1:{self.options.bolt_port}"
        return Settings(home=self.layout.home, neo4j=Neo4jSettings(uri=uri), llm=LLMSettings())

    def env(self) -> dict[str, str]:
        env = {**os.environ, "MEMTRACE_HOME": str(self.layout.home)}
        env["NEO4J_URI"] = self.settings.neo4j.uri
        env.pop("NEO4J_PASSWORD", None)
        return env


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    own = Server(throwaway_layout(tmp_path_factory.mktemp("crash")))
    own.start()
    yield own
    manager.stop(own.layout)


def _counts(db: Database, trace_id: str) -> tuple[dict[str, int], dict[str, int]]:
    labels = {r["label"]: r["n"] for r in db.run(COUNT_BY_LABEL, t=trace_id)}
    types = {r["type"]: r["n"] for r in db.run(COUNT_BY_TYPE, t=trace_id)}
    return labels, types


def _wait_for(
    db_settings: Settings, trace_id: str, variables: int, process: subprocess.Popen[bytes]
) -> None:
    query = "MATCH (v:Variable {trace_id: $t}) RETURN count(v) AS n"
    deadline = time.monotonic() + 180
    with connect(db_settings) as db:
        while time.monotonic() < deadline:
            if db.run(query, t=trace_id)[0]["n"] >= variables:
                return
            assert process.poll() is None, "the load ended before Neo4j could be killed"
            time.sleep(0.05)
    pytest.fail(f"the load did not reach {variables} variables in time")


def test_neo4j_killed_mid_load_then_a_rerun_gives_exact_counts(
    server: Server, tmp_path: Path
) -> None:
    trace_id = "crash-load"
    path = tmp_path / "big.jsonl"
    expected = write_synthetic_trace(path, trace_id, messages=6000)
    load = subprocess.Popen(
        [MEMTRACE, "load", str(path), "--batch-size", "200"],
        env=server.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(server.settings, trace_id, 1000, load)
        server.kill()
        killed = time.monotonic()
        # The driver retries the batch being written for up to 30 s before giving up.
        _, stderr = load.communicate(timeout=400)
        print(f"load exited {time.monotonic() - killed:.1f} s after the kill")
    finally:
        if load.poll() is None:
            load.kill()
    assert load.returncode != 0, "a load whose server died must not exit 0"
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")[-2000:]
    assert b"error:" in stderr

    server.start()
    with connect(server.settings) as db:
        state = db.run("MATCH (t:Trace {id: $id}) RETURN t.load_state AS s", id=trace_id)
        assert [row["s"] for row in state] == ["loading"]  # the killed load is visible as such
        load_paths(db, [str(path)], LoadOptions())
        labels, types = _counts(db, trace_id)
        assert labels["Operation"] == expected["operations"]
        assert labels["Variable"] == expected["variables"]
        assert labels["Case"] == expected["cases"]
        assert types["FLOWS_TO"] == expected["edges"]
        assert db.run(DUPLICATE_IDS, t=trace_id)[0]["duplicates"] == 0
        state = db.run("MATCH (t:Trace {id: $id}) RETURN t.load_state AS s", id=trace_id)
        assert [row["s"] for row in state] == ["complete"]


def test_neo4j_killed_mid_reload_keeps_the_old_copy(server: Server, tmp_path: Path) -> None:
    trace_id = "crash-reload"
    path = tmp_path / "big.jsonl"
    expected = write_synthetic_trace(path, trace_id, messages=6000)
    with connect(server.settings) as db:
        load_paths(db, [str(path)], LoadOptions())
        old = graph_of(db, trace_id)
    staged = staged_trace_id(trace_id)
    reload = subprocess.Popen(
        [MEMTRACE, "load", str(path), "--batch-size", "200"],
        env=server.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(server.settings, staged, 1000, reload)
        server.kill()
        _, stderr = reload.communicate(timeout=400)
    finally:
        if reload.poll() is None:
            reload.kill()
    assert reload.returncode != 0, "a re-load whose server died must not exit 0"
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")[-2000:]

    server.start()
    with connect(server.settings) as db:
        assert graph_of(db, trace_id) == old  # the complete copy survived, exactly
        assert copies_left(db, trace_id) == {staged: ["staging"]}
    env = server.env()
    attributed = subprocess.run(
        [MEMTRACE, "attribute", "--trace", trace_id, "--judge", "offline", "--no-write"],
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert attributed.returncode == 0, attributed.stderr.decode(errors="replace")[-2000:]
    stats = subprocess.run([MEMTRACE, "db", "stats"], env=env, capture_output=True, timeout=60)
    assert staged.encode() in stats.stdout and b"re-load copy" in stats.stdout
    with connect(server.settings) as db:
        load_paths(db, [str(path)], LoadOptions())
        assert_exact(db, trace_id, expected)


ATTRIBUTIONS = """
MATCH (c:Case {trace_id: $t})-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $r})
RETURN c.id AS case_id, a.created_at AS created_at, properties(a).error AS error
"""


def test_neo4j_killed_mid_attribution_keeps_finished_cases(
    server: Server, shared_data: Path
) -> None:
    trace_id, run_id = "crash-graph", "crash-run"
    source = shared_data / "smartcomment" / "locomo_locomo-1.json"
    failed_cases = 34  # tests/integration/test_load.py
    with connect(server.settings) as db:
        load_paths(db, [str(source)], LoadOptions(trace_id=trace_id))
    command = [MEMTRACE, "attribute", "--trace", trace_id, "--judge", "offline"]
    command += ["--run-id", run_id, "--workers", "1"]
    attribute = subprocess.Popen(
        command, env=server.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        with connect(server.settings) as db:
            while len(db.run(ATTRIBUTIONS, t=trace_id, r=run_id)) < 8:
                assert attribute.poll() is None, "the attribution ended before Neo4j was killed"
                assert time.monotonic() < deadline, "no verdict was written in time"
                time.sleep(0.05)
        server.kill()
        _, stderr = attribute.communicate(timeout=400)
    finally:
        if attribute.poll() is None:
            attribute.kill()
    assert attribute.returncode != 0, "an attribution whose server died must not exit 0"
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")[-2000:]

    server.start()
    with connect(server.settings) as db:
        kept = {
            row["case_id"]: row["created_at"] for row in db.run(ATTRIBUTIONS, t=trace_id, r=run_id)
        }
        assert 8 <= len(kept) < failed_cases
    resumed = subprocess.run(
        [*command, "--resume"], env=server.env(), capture_output=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr.decode(errors="replace")[-2000:]
    with connect(server.settings) as db:
        rows = db.run(ATTRIBUTIONS, t=trace_id, r=run_id)
    assert len(rows) == failed_cases  # one verdict per failed case: nothing duplicated
    assert len({row["case_id"] for row in rows}) == failed_cases
    assert all(row["error"] is None for row in rows)
    after = {row["case_id"]: row["created_at"] for row in rows}
    assert all(after[case] == created for case, created in kept.items())  # kept, not redone
