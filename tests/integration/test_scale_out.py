"""A Neo4j that is not the managed one: a second local server with auth on, addressed with the
``neo4j://`` routing scheme. Two receivers given the same traces and several `attribute`
processes (sharded and not) write to it at once, and nothing is duplicated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_qa_app import traced_spans
from test_collect import graph_counts, wait_until
from test_managed_server import SMALL as SMALL_MEMORY
from test_managed_server import free_port, throwaway_layout

from memtrace.attribution.pipeline import Shard
from memtrace.collect.ingest import IngestOptions
from memtrace.collect.receiver import Receiver, ReceiverOptions
from memtrace.db import connect
from memtrace.errors import Neo4jAuthError
from memtrace.server import manager
from memtrace.server.config import ServerOptions
from memtrace.settings import LLMSettings, Neo4jSettings, Settings

pytestmark = pytest.mark.integration
MEMTRACE = str(Path(sys.executable).parent / "memtrace")


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A second server of our own (own home and ports, auth on), stopped afterwards."""
    layout = throwaway_layout(tmp_path_factory.mktemp("scale-out"))
    options = ServerOptions(
        bolt_port=free_port(), http_port=free_port(), auth=True, memory=SMALL_MEMORY
    )
    manager.start(layout, options, timeout=300)  # a shared, busy machine starts it slowly
    try:
        uri = f"neo4j://127.0.0.1:{options.bolt_port}"
        neo4j = Neo4jSettings(uri=uri, password=layout.read_password(), managed=False)
        yield Settings(home=layout.home, neo4j=neo4j, llm=LLMSettings())
    finally:
        manager.stop(layout)


def env_for(settings: Settings, home: Path) -> dict[str, str]:
    """What a user sets to point every command at that server (no MEMTRACE_HOME of it)."""
    password = settings.neo4j.password
    assert password is not None
    return {
        **os.environ,
        "MEMTRACE_HOME": str(home),  # a home without a managed server
        "NEO4J_URI": settings.neo4j.uri,
        "NEO4J_USER": "neo4j",
        "NEO4J_PASSWORD": password.get_secret_value(),
    }


def test_auth_is_on_and_a_wrong_password_is_refused(remote: Settings) -> None:
    wrong = remote.model_copy(update={"neo4j": remote.neo4j.model_copy(update={"password": None})})
    with pytest.raises(Neo4jAuthError), connect(wrong):
        pass


def test_two_receivers_and_three_attribute_processes_duplicate_nothing(
    remote: Settings, tmp_path: Path
) -> None:
    spans, trace_ids = traced_spans(8, tag="fan")
    receivers = [
        Receiver(
            remote,
            ReceiverOptions(
                port=0,
                grpc_port=None,
                spool_dir=tmp_path / f"spool{n}",
                ingest=IngestOptions(quiet_seconds=0.3),
            ),
            print,
        )
        for n in range(2)
    ]
    with receivers[0].serving_in_thread() as first, receivers[1].serving_in_thread() as second:

        def send(url: str) -> None:  # every span to both: a double delivery
            exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces")
            for start in range(0, len(spans), 6):
                assert exporter.export(spans[start : start + 6]) == SpanExportResult.SUCCESS

        senders = [threading.Thread(target=send, args=(url,)) for url in (first, second)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        wait_until(lambda: all(r.spool.pending()["traces"] == 0 for r in receivers), seconds=600)
    assert sum(r.status()["loaded_traces"] for r in receivers) >= 8
    with connect(remote) as db:
        counts = graph_counts(db, trace_ids)
        assert all(row["traces"] == 1 for row in counts.values()), counts
        assert all((row["ops"], row["duplicates"]) == (3, 0) for row in counts.values()), counts
        total = db.run("MATCH (t:Trace) RETURN count(t) AS n")[0]["n"]
        assert total == 8

    # three `attribute` processes at once: two shards and one over everything, one run id
    env = env_for(remote, tmp_path / "home")
    common = ["attribute", "--judge", "offline", "--run-id", "shared", "--json", "--workers", "2"]
    commands = [
        [MEMTRACE, *common, "--shard", "1/2"],
        [MEMTRACE, *common, "--shard", "2/2"],
        [MEMTRACE, *common],
    ]
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for command in commands
    ]
    outputs = [process.communicate(timeout=600) for process in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr.decode()
    shard_one, shard_two, everything = (
        {(r["trace_id"], r["case_id"]) for r in json.loads(stdout)} for stdout, _ in outputs
    )
    assert len(everything) == 4  # every other question is answered wrong
    # each shard holds exactly the cases of its traces (the SDK's trace ids are random, so the
    # 4 failed traces may all hash to one shard: 1 run in 8 did in CI)
    first_half = {case for case in everything if Shard(1, 2).holds(case[0])}
    assert shard_one == first_half
    assert shard_two == everything - first_half
    with connect(remote) as db:
        per_case = db.run(
            "MATCH (c:Case)-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: 'shared'}) "
            "RETURN c.trace_id AS trace_id, c.id AS case_id, count(a) AS n"
        )
    assert len(per_case) == 4
    assert all(row["n"] == 1 for row in per_case), per_case


def test_the_cli_reads_the_routing_address_from_the_environment(
    remote: Settings, tmp_path: Path
) -> None:
    env = env_for(remote, tmp_path / "home")
    result = subprocess.run(
        [MEMTRACE, "db", "stats", "--json"], env=env, capture_output=True, timeout=300
    )
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout)["counts"]
