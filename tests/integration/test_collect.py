"""`memtrace collect` with the real OpenTelemetry SDK exporter sending to it and the real Neo4j:
traces load as `memtrace load` loads them, late spans and retried batches create no duplicate,
failed cases are attributed as they land, the spool's loaded/ is pruned without a late span ever
shrinking its trace, and a SIGKILL loses no acknowledged span."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_qa_app import as_otlp_json, traced_spans
from test_managed_server import free_port

from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.pipeline import Options
from memtrace.collect.ingest import IngestOptions
from memtrace.collect.receiver import Receiver, ReceiverOptions, attributing
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.settings import load_settings

pytestmark = pytest.mark.integration
MEMTRACE = str(Path(sys.executable).parent / "memtrace")


def wait_until(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def graph_counts(db: Database, trace_ids: list[str]) -> dict[str, dict[str, int]]:
    """Per otel trace id: Trace nodes, operations, and operations sharing a span id."""
    rows = db.run(
        "UNWIND $ids AS id "
        "OPTIONAL MATCH (t:Trace {id: 'otlp-' + id, load_state: 'complete'}) "
        "OPTIONAL MATCH (o:Operation {trace_id: 'otlp-' + id}) "
        "WITH id, count(DISTINCT t) AS traces, count(o) AS ops, count(DISTINCT o.id) AS distinct "
        "RETURN id, traces, ops, ops - distinct AS duplicates",
        ids=trace_ids,
    )
    return {row["id"]: row for row in rows}


def delete_traces(db: Database, trace_ids: list[str]) -> None:
    """Every node of these traces, in one query per 20 traces (faster than one by one)."""
    for start in range(0, len(trace_ids), 20):
        ids = [f"otlp-{trace_id}" for trace_id in trace_ids[start : start + 20]]
        db.run("MATCH (n) WHERE n.trace_id IN $ids DETACH DELETE n", ids=ids)
        db.run("MATCH (t:Trace) WHERE t.id IN $ids DETACH DELETE t", ids=ids)
        leases = trace_ids[start : start + 20]
        db.run("MATCH (l:CollectorLease) WHERE l.trace_id IN $ids DELETE l", ids=leases)


@pytest.fixture
def cleanup(db: Database) -> Iterator[list[str]]:
    trace_ids: list[str] = []
    yield trace_ids
    delete_traces(db, trace_ids)


QUICK = IngestOptions(quiet_seconds=0.3)


def receiver(spool: Path, ingest: IngestOptions = QUICK) -> Receiver:
    options = ReceiverOptions(port=0, grpc_port=0, spool_dir=spool, ingest=ingest)
    return Receiver(load_settings(), options, print)


def test_the_sdk_exporter_sends_and_the_traces_load_with_their_cases(
    db: Database, tmp_path: Path, cleanup: list[str]
) -> None:
    spans, trace_ids = traced_spans(6, tag="sdk")
    cleanup.extend(trace_ids)
    collector = receiver(tmp_path / "spool")
    judge, options = OfflineJudge(), Options()
    collector.ingester.after_load = attributing(judge, options, None, print)
    with collector.serving_in_thread() as url:
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", compression=Compression.Gzip)
        assert exporter.export(spans[:7]) == SpanExportResult.SUCCESS
        assert exporter.export(spans[7:]) == SpanExportResult.SUCCESS
        # the same spans again as JSON, as a retrying client would: they are loaded once
        body = json.dumps(as_otlp_json(spans[:4])).encode()
        answer = httpx.post(
            f"{url}/v1/traces",
            content=gzip.compress(body),
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        assert answer.status_code == 200, answer.text
        wait_until(
            lambda: (
                collector.spool.pending()["traces"] == 0
                and collector.status()["loaded_traces"] >= 6
            )
        )
    counts = graph_counts(db, trace_ids)
    assert all(row["traces"] == 1 and row["duplicates"] == 0 for row in counts.values()), counts
    assert all(row["ops"] == 3 for row in counts.values()), counts
    cases = db.run(
        "UNWIND $ids AS id MATCH (:Trace {id: 'otlp-' + id})-[:HAS_CASE]->(c:Case) "
        "OPTIONAL MATCH (c)-[:HAS_ATTRIBUTION]->(a:Attribution) "
        "RETURN id, c.id AS case, c.failed AS failed, count(a) AS attributions",
        ids=trace_ids,
    )
    assert len(cases) == 6
    assert sum(1 for case in cases if case["failed"]) == 3
    # each failed case was attributed once as its trace landed; passed cases were not
    assert sorted(case["attributions"] for case in cases) == [0, 0, 0, 1, 1, 1]


def leases(db: Database, trace_ids: list[str]) -> int:
    rows = db.run(
        "MATCH (l:CollectorLease) WHERE l.trace_id IN $ids RETURN count(l) AS n", ids=trace_ids
    )
    return int(rows[0]["n"])


def test_the_sdk_grpc_exporter_sends_and_the_traces_load_once_leaving_no_lease(
    db: Database, tmp_path: Path, cleanup: list[str]
) -> None:
    spans, trace_ids = traced_spans(5, tag="grpc")
    cleanup.extend(trace_ids)
    collector = receiver(tmp_path / "spool")
    with collector.serving_in_thread():
        assert collector.bound is not None and collector.bound.grpc_port
        exporter = GrpcSpanExporter(
            endpoint=f"127.0.0.1:{collector.bound.grpc_port}",
            insecure=True,
            compression=grpc.Compression.Gzip,
        )
        assert exporter.export(spans[:8]) == SpanExportResult.SUCCESS
        assert exporter.export(spans[8:]) == SpanExportResult.SUCCESS
        assert exporter.export(spans[:4]) == SpanExportResult.SUCCESS  # a retry: loaded once
        exporter.shutdown()
        wait_until(
            lambda: (
                collector.spool.pending()["traces"] == 0
                and collector.status()["loaded_traces"] >= 5
            )
        )
    counts = graph_counts(db, trace_ids)
    assert all(row["traces"] == 1 and row["duplicates"] == 0 for row in counts.values()), counts
    assert all(row["ops"] == 3 for row in counts.values()), counts
    assert leases(db, trace_ids) == 0  # a spent lease is deleted, not left behind


def test_a_late_span_reloads_its_trace_with_the_spans_before_it(
    db: Database, tmp_path: Path, cleanup: list[str]
) -> None:
    spans, trace_ids = traced_spans(1, tag="late")
    cleanup.extend(trace_ids)
    collector = receiver(tmp_path / "spool")
    late = next(span for span in spans if span.name == "generate")
    early = [span for span in spans if span is not late]
    with collector.serving_in_thread() as url:
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces")
        assert exporter.export(early) == SpanExportResult.SUCCESS
        wait_until(lambda: collector.status()["loaded_traces"] == 1)
        assert graph_counts(db, trace_ids)[trace_ids[0]]["ops"] == 2
        assert exporter.export([late]) == SpanExportResult.SUCCESS
        wait_until(lambda: collector.status()["loaded_traces"] == 2)
    row = graph_counts(db, trace_ids)[trace_ids[0]]
    assert (row["traces"], row["ops"], row["duplicates"]) == (1, 3, 0)


def test_loaded_files_are_pruned_and_a_span_after_that_is_set_aside_not_loaded_over_its_trace(
    db: Database, tmp_path: Path, cleanup: list[str]
) -> None:
    spans, trace_ids = traced_spans(8, tag="prune")
    cleanup.extend(trace_ids)
    late = next(span for span in spans[:3] if span.name == "generate")  # of the first trace
    ingest = IngestOptions(quiet_seconds=0.3, max_wait_seconds=1, keep_loaded_seconds=0)
    collector = receiver(tmp_path / "spool", ingest)
    loaded, rejected = tmp_path / "spool" / "loaded", tmp_path / "spool" / "rejected"
    with collector.serving_in_thread() as url:
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces")
        sent = [span for span in spans if span is not late]
        for start in range(0, len(sent), 5):  # batches that split traces
            assert exporter.export(sent[start : start + 5]) == SpanExportResult.SUCCESS
        wait_until(lambda: collector.status()["loaded_traces"] >= 8)
        # nothing kept once loaded: the bound is 0 files
        wait_until(lambda: collector.status()["loaded_files_kept"] == 0)
        assert list(loaded.iterdir()) == []
        assert collector.status()["loaded_files_pruned"] == 8
        assert exporter.export([late]) == SpanExportResult.SUCCESS
        wait_until(lambda: collector.status()["rejected_traces"] == 1)
        assert collector.spool.pending()["traces"] == 0
    counts = graph_counts(db, trace_ids)
    # the late span did not replace its trace by itself: the two spans loaded before remain
    assert (counts[trace_ids[0]]["traces"], counts[trace_ids[0]]["ops"]) == (1, 2)
    assert all(counts[t]["ops"] == 3 and counts[t]["duplicates"] == 0 for t in trace_ids[1:])
    reason = (rejected / f"{trace_ids[0]}.txt").read_text()
    assert "--keep-loaded" in reason, reason
    kept = json.loads((rejected / f"{trace_ids[0]}.json").read_text())
    kept_ids = [
        s["spanId"] for r in kept["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]
    ]
    assert kept_ids == [format(late.context.span_id, "016x")]  # set aside, not dropped
    assert list(loaded.iterdir()) == []


def test_the_graph_spans_lookup_seeks_each_traces_key_instead_of_scanning(db: Database) -> None:
    """It runs before every load: a scan of every :Operation would grow with the database."""
    query = get_query("collect/graph_spans")
    with db.driver.session(database=db.database) as session:
        plan = session.run(f"EXPLAIN {query.text}", trace_ids=["otlp-x"]).consume().plan
    assert plan is not None
    operators: list[str] = []
    stack = [plan]
    while stack:
        step = stack.pop()
        operators.append(str(step["operatorType"]).split("@")[0])
        stack.extend(step.get("children", []))
    assert "NodeUniqueIndexSeek" in operators, operators
    assert not any("Scan" in operator for operator in operators), operators


def _start(spool: Path, port: int, *options: str) -> subprocess.Popen[bytes]:
    command = [
        MEMTRACE,
        "collect",
        "--port",
        str(port),
        "--spool",
        str(spool),
        "--grpc-port",
        str(free_port()),
        "--quiet-period",
        "0.5",
        *options,
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/status").status_code == 200:
                return process
        except httpx.TransportError:
            pass
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the receiver did not start"
        time.sleep(0.2)


@pytest.mark.parametrize(
    "options",
    [(), ("--keep-loaded", "0")],
    ids=["default-retention", "loaded-files-pruned-at-once"],
)
def test_sigkill_during_ingestion_loses_no_acknowledged_span_and_duplicates_none(
    db: Database, tmp_path: Path, cleanup: list[str], options: tuple[str, ...]
) -> None:
    spans, trace_ids = traced_spans(24, tag="kill")
    cleanup.extend(trace_ids)
    spool, port = tmp_path / "spool", free_port()
    endpoint = f"http://127.0.0.1:{port}/v1/traces"
    batches = [spans[i : i + 6] for i in range(0, len(spans), 6)]
    acknowledged: list[ReadableSpan] = []
    unanswered: list[list[ReadableSpan]] = []
    process = _start(spool, port, *options)
    try:
        exporter = OTLPSpanExporter(endpoint=endpoint, timeout=2)
        for number, batch in enumerate(batches):
            if number == len(batches) // 2:
                os.kill(process.pid, signal.SIGKILL)  # our own receiver, by its pid
                process.wait()
            if exporter.export(batch) == SpanExportResult.SUCCESS:
                acknowledged.extend(batch)
            else:
                unanswered.append(batch)
        assert unanswered, "the kill should have refused at least one batch"
        process = _start(spool, port, *options)
        exporter = OTLPSpanExporter(endpoint=endpoint, timeout=10)
        for batch in unanswered:  # what a retrying client (a Collector's queue) sends again
            assert exporter.export(batch) == SpanExportResult.SUCCESS
        # and one batch the receiver already acknowledged, as if its answer had been lost
        assert exporter.export(batches[0]) == SpanExportResult.SUCCESS

        def idle() -> bool:
            status = httpx.get(f"http://127.0.0.1:{port}/status").json()
            return bool(status["pending"]["traces"] == 0)

        wait_until(idle, 600)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
    counts = graph_counts(db, trace_ids)
    loaded = {
        (trace_id, span_id["id"])
        for trace_id in trace_ids
        for span_id in db.run(
            "MATCH (o:Operation {trace_id: $id}) RETURN o.id AS id", id=f"otlp-{trace_id}"
        )
    }
    sent = {
        (format(context.trace_id, "032x"), format(context.span_id, "016x"))
        for context in (span.get_span_context() for span in acknowledged)
        if context is not None
    }
    assert sent <= loaded  # every acknowledged span is in the graph
    assert all(row["traces"] == 1 and row["duplicates"] == 0 for row in counts.values()), counts
    assert sum(row["ops"] for row in counts.values()) == len(spans)  # each span exactly once
    print(
        f"crash: {len(sent)} spans acknowledged, {len(loaded)} loaded, "
        f"{sum(row['duplicates'] for row in counts.values())} duplicates"
    )


def test_a_receiver_killed_during_a_load_is_taken_over_by_its_restart_within_seconds(
    db: Database, tmp_path: Path, cleanup: list[str]
) -> None:
    """SIGKILL while a load holds its leases: the restarted receiver (same spool) loads every
    acknowledged span once within the quiet period + 10 s, and leaves no lease behind."""
    spans, trace_ids = traced_spans(16, tag="midload")
    cleanup.extend(trace_ids)
    spool, port = tmp_path / "spool", free_port()
    endpoint = f"http://127.0.0.1:{port}/v1/traces"
    process = _start(spool, port)
    try:
        exporter = OTLPSpanExporter(endpoint=endpoint, timeout=10)
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        deadline = time.monotonic() + 30
        while leases(db, trace_ids) == 0:  # the loader holds leases only while it loads
            assert time.monotonic() < deadline, "no load was seen in progress"
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)  # our own receiver, by its pid
        process.wait()
        held = leases(db, trace_ids)
        assert held > 0  # killed mid-load: its leases are still there
        process = _start(spool, port)
        restarted = time.monotonic()  # answering: what comes now is the takeover

        def all_loaded() -> bool:
            counts = graph_counts(db, trace_ids)
            return sum(row["ops"] for row in counts.values()) == len(spans) and all(
                row["traces"] == 1 for row in counts.values()
            )

        wait_until(all_loaded, 120)
        took = time.monotonic() - restarted
        wait_until(lambda: leases(db, trace_ids) == 0, 10)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
    counts = graph_counts(db, trace_ids)
    assert all(row["duplicates"] == 0 and row["ops"] == 3 for row in counts.values()), counts
    print(f"mid-load kill: {held} lease(s) held, all {len(spans)} spans loaded {took:.1f} s after")
    assert took <= 0.5 + 10, took
