"""Timelines: the notes service of tests/timeline_app.py, traced per request as a web service is,
captured once; its requests loaded as timelines (from one file per request, and live through
`memtrace collect` over OTLP/HTTP and OTLP/gRPC with the SDK's exporters) give the verdicts of
its one-trace load, the seven planted failures of tests/data/timelines/planted.json (written
before memtrace read a capture) are attributed right, trails cross requests, and failure
classes group across requests. The figures are recorded in docs/trace-format.md."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_collect import receiver, wait_until
from timeline_app import (
    ANSWER_PROMPT,
    DECIDE_PROMPT,
    EXTRACT_PROMPT,
    Replies,
    capture,
    messages,
    questions,
    run_timeline_app,
)

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.collect.ingest import IngestOptions
from memtrace.db import Database
from memtrace.integrations.otel import write_otlp_json
from memtrace.loaders.append import append_files
from memtrace.loaders.load import LoadOptions
from memtrace.loaders.otlp.spans import Span, read_spans
from memtrace.loaders.otlp.timelines import DEFAULT_GROUPING

pytestmark = pytest.mark.integration

MIRA, THEO = "timeline:user:mira", "timeline:user:theo"
# planted failures attributed right (error type and operation), of 7; 7 of 7 from every source
RIGHT = 7
CROSSING = 3  # verdicts blaming an operation of an earlier request (extract / decide)


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def verdicts(trace_id: str) -> dict[str, tuple[str, str]]:
    """`memtrace attribute --judge offline --no-write`: case -> (error type, blamed op id)."""
    found = _invoke("attribute", "--trace", trace_id, "--judge", "offline", "--no-write", "--json")
    return {
        r["case_id"]: (
            r["error_attribution_result"]["error_type"],
            r["error_attribution_result"]["op_id"],
        )
        for r in found
    }


def expected(spans: list[Span]) -> dict[str, tuple[str, str, bool]]:
    """Per planted failure: (error type, the span to blame, whether it is in an earlier request
    than the question), found in the capture by what planted.json says."""

    def prompt(span: Span) -> str:
        return str(span.attributes.get("gen_ai.input.messages", ""))

    def chat(*parts: str) -> Span:
        return next(s for s in spans if all(json.dumps(p)[1:-1] in prompt(s) for p in parts))

    found = {}
    for case_id, question in questions().items():
        blamed = question.get("blamed")
        if blamed is None:
            continue
        (root,) = [s for s in spans if s.attributes.get("memtrace.case.id") == case_id]
        asked_in = [s for s in spans if s.trace_id == root.trace_id]
        step = blamed["step"]
        if step == "extract":
            span = chat(EXTRACT_PROMPT, blamed["message"])
        elif step == "decide":
            span = chat(DECIDE_PROMPT, f"New fact: {messages()[blamed['message']]['fact']}")
        elif step == "search":
            span = next(s for s in asked_in if s.name == "search_memory memories")
        else:
            span = next(s for s in asked_in if ANSWER_PROMPT in prompt(s))
        found[case_id] = (blamed["error_type"], span.span_id, span.trace_id != root.trace_id)
    return found


def scored(got: dict[str, tuple[str, str]], truth: dict[str, tuple[str, str, bool]]) -> list[str]:
    return [case for case, (kind, op, _) in truth.items() if got.get(case) == (kind, op)]


@pytest.fixture
def captured(fake_openai: FakeOpenAI, tmp_path: Path) -> tuple[Path, list[Path]]:
    fake_openai.responder = Replies()
    return capture(fake_openai.base_url, tmp_path)


@pytest.fixture
def traces(db: Database, run_id: str) -> Iterator[list[str]]:
    made = [MIRA, THEO]
    for trace_id in made:
        delete_trace(db, trace_id)
    yield made
    for trace_id in made:
        delete_trace(db, trace_id)


def test_files_as_timelines_give_the_verdicts_of_the_one_trace_load(
    db: Database, captured: tuple[Path, list[Path]], traces: list[str], run_id: str
) -> None:
    whole, files = captured
    one_trace = f"{run_id}-one"
    traces.append(one_trace)
    _invoke("load", str(whole), "--trace-id", one_trace, "--json")
    loaded = _invoke("load", *map(str, files), "--timelines", "--json")
    by_trace = {f["trace_id"]: f for f in loaded["files"]}
    assert sorted(by_trace) == [MIRA, THEO]  # two users, their requests interleaved
    assert (by_trace[MIRA]["requests"], by_trace[THEO]["requests"]) == (18, 3)
    # a message request asks no case, evidence said in another request is found there, a
    # search reading memories another request stored sees memories
    codes = {x["code"] for f in loaded["files"] for x in f["findings"]}
    assert not codes & {"no-cases", "no-evidence", "no-memories"}, codes
    truth = expected(read_spans(whole))
    timeline, one = verdicts(MIRA), verdicts(one_trace)
    assert timeline == one
    assert len(scored(timeline, truth)) >= RIGHT, (timeline, truth)
    crossing = [case for case in scored(timeline, truth) if truth[case][2]]
    assert len(crossing) == CROSSING
    # the blamed op of a crossing trail is in another request (session) than the case
    rows = db.run(
        "MATCH (:Trace {id: $id})-[:HAS_CASE]->(c:Case)-[:PREDICTION]->(:Variable)"
        "<-[:WRITES]-(:Operation)-[:IN_SESSION]->(s:Session) "
        "RETURN c.id AS case, s.id AS request, c.user_id AS user, c.session_id AS session",
        id=MIRA,
    )
    asked_in = {row["case"]: row["request"] for row in rows}
    assert {row["user"] for row in rows} == {"mira"}
    assert {row["session"] for row in rows} == {"mira-web-2"}
    blamed_in = {
        row["id"]: row["request"]
        for row in db.run(
            "MATCH (o:Operation {trace_id: $id})-[:IN_SESSION]->(s) "
            "RETURN o.id AS id, s.id AS request",
            id=MIRA,
        )
    }
    assert all(blamed_in[timeline[case][1]] != asked_in[case] for case in crossing)
    # a re-sent request is not appended twice
    again = _invoke("load", *map(str, files), "--timelines", "--json")
    assert [(f["requests"], f["already_there"]) for f in again["files"]] == [(0, 18), (0, 3)]
    assert verdicts(MIRA) == timeline


def test_appended_one_request_at_a_time_the_classes_group_across_requests(
    db: Database, captured: tuple[Path, list[Path]], traces: list[str], run_id: str
) -> None:
    whole, files = captured
    options = LoadOptions(grouping=DEFAULT_GROUPING, requests_per_append=1)
    summary = append_files(db, [str(f) for f in files], options)
    assert sum(f.requests or 0 for f in summary.files) == 21
    truth = expected(read_spans(whole))
    timeline = verdicts(MIRA)
    assert len(scored(timeline, truth)) >= RIGHT, (timeline, truth)
    # one system prompt per step, whatever the request: one variable each
    prompts = db.run(
        "MATCH (v:Variable {trace_id: $id, category: 'prompt'}) RETURN count(v) AS n", id=MIRA
    )
    assert prompts[0]["n"] == 3
    written = CliRunner().invoke(
        cli, ["attribute", "--trace", MIRA, "--judge", "offline", "--run-id", run_id]
    )
    assert written.exit_code == 0, written.output
    try:
        classes = _invoke("patterns", "--run", run_id, "--format", "json")
        sizes = sorted(int(c["cases"]) for c in classes)
        # extraction, update, deletion: one case each; both retrieval misses one class (one
        # search op name and prompt), both wrong answers one class
        assert sizes == [1, 1, 1, 2, 2], classes
    finally:
        CliRunner().invoke(cli, ["db", "delete", "--run", run_id])


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_live_timelines_through_collect_give_the_same_verdicts(
    db: Database,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    traces: list[str],
    run_id: str,
    protocol: str,
) -> None:
    fake_openai.responder = Replies()
    collector = receiver(
        tmp_path / "spool", IngestOptions(quiet_seconds=0.3, grouping=DEFAULT_GROUPING)
    )
    copy = InMemorySpanExporter()
    with collector.serving_in_thread() as url:
        assert collector.bound is not None and collector.bound.grpc_port
        grpc_port = collector.bound.grpc_port

        def exporter() -> Any:
            if protocol == "http":
                return OTLPSpanExporter(endpoint=f"{url}/v1/traces")
            return GrpcSpanExporter(
                endpoint=f"127.0.0.1:{grpc_port}", insecure=True, compression=grpc.Compression.Gzip
            )

        run_timeline_app(
            fake_openai.base_url, [SimpleSpanProcessor(copy), SimpleSpanProcessor(exporter())]
        )
        wait_until(
            lambda: (
                collector.spool.pending()["traces"] == 0
                and collector.status()["loaded_traces"] >= 21
            )
        )
        # a client re-sending a request it already sent (its answer lost): appended once
        spans = copy.get_finished_spans()
        first = next(
            s.context.trace_id for s in spans if (s.attributes or {}).get("user.id") == "mira"
        )
        resend = exporter()
        assert resend.export([s for s in spans if s.context.trace_id == first]).name == "SUCCESS"
        resend.shutdown()
        wait_until(
            lambda: (
                collector.spool.pending()["traces"] == 0
                and collector.status()["loaded_traces"] >= 22
            )
        )
        assert collector.status()["rejected_traces"] == 0
    whole = write_otlp_json(copy.get_finished_spans(), tmp_path / "all.json")
    one_trace = f"{run_id}-one"
    traces.append(one_trace)
    _invoke("load", str(whole), "--trace-id", one_trace, "--json")
    truth = expected(read_spans(whole))
    timeline = verdicts(MIRA)
    assert timeline == verdicts(one_trace)
    assert len(scored(timeline, truth)) >= RIGHT, (timeline, truth)
    state = db.run(
        "MATCH (t:Trace {id: $id}) RETURN t.n_requests AS requests, t.user_id AS user", id=MIRA
    )
    assert state == [{"requests": 18, "user": "mira"}]  # the re-sent request added nothing
