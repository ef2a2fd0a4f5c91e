"""The OTLP/HTTP receiver offline: decoding bodies, the durable spool, the endpoint's answers."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from google.rpc.status_pb2 import Status
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from starlette.testclient import TestClient

from memtrace.collect.app import Limits, create_app
from memtrace.collect.decode import BadRequest, decode, decompress, encoding_of, group_spans
from memtrace.collect.receiver import check_exposure
from memtrace.collect.spool import Spool, expired
from memtrace.errors import ConfigError

TRACE_A = "0af7651916cd43dd8448eb211c80319c"
TRACE_B = "4bf92f3577b34da6a3ce929d0e0e4736"


def span(trace: str, span_id: str, parent: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"op-{span_id[-2:]}",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000100000000",
        **extra,
    }


def request(*spans: dict[str, Any], service: str = "qa-app") -> dict[str, Any]:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "s"}, "spans": list(spans)}]}
        ]
    }


def protobuf_request() -> bytes:
    """Two traces, one root each, with attributes, as the SDK exporter encodes them."""
    spans = [
        Span(
            trace_id=bytes.fromhex(TRACE_A),
            span_id=bytes.fromhex("00f067aa0ba902b7"),
            name="qa",
            start_time_unix_nano=1,
            end_time_unix_nano=5,
            kind=Span.SPAN_KIND_SERVER,
            attributes=[KeyValue(key="input.value", value=AnyValue(string_value="hi"))],
        ),
        Span(
            trace_id=bytes.fromhex(TRACE_A),
            span_id=bytes.fromhex("00f067aa0ba902b8"),
            parent_span_id=bytes.fromhex("00f067aa0ba902b7"),
            name="llm",
            start_time_unix_nano=2,
            end_time_unix_nano=4,
        ),
        Span(
            trace_id=bytes.fromhex(TRACE_B),
            span_id=bytes.fromhex("1111111111111111"),
            parent_span_id=bytes.fromhex("2222222222222222"),
            name="child-of-elsewhere",
            start_time_unix_nano=2,
            end_time_unix_nano=4,
        ),
    ]
    message = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(
                    attributes=[KeyValue(key="service.name", value=AnyValue(string_value="x"))]
                ),
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    )
    encoded: bytes = message.SerializeToString()
    return encoded


# -- decoding -----------------------------------------------------------------------------------


def test_protobuf_is_grouped_by_trace_as_otlp_json_with_hex_ids() -> None:
    decoded = decode(protobuf_request(), "protobuf")
    groups = {group.trace_id: group for group in decoded.groups}
    assert set(groups) == {TRACE_A, TRACE_B}
    assert (groups[TRACE_A].spans, groups[TRACE_A].has_root) == (2, True)
    assert (groups[TRACE_B].spans, groups[TRACE_B].has_root) == (1, False)
    resource = groups[TRACE_A].document["resourceSpans"][0]
    assert resource["resource"]["attributes"][0]["value"] == {"stringValue": "x"}
    first, second = resource["scopeSpans"][0]["spans"]
    assert (first["spanId"], second["parentSpanId"]) == ("00f067aa0ba902b7", "00f067aa0ba902b7")
    assert first["kind"] == 2  # enums as integers, as OTLP JSON writes them
    assert first["attributes"] == [{"key": "input.value", "value": {"stringValue": "hi"}}]
    assert decoded.rejected == 0


def test_json_keeps_each_trace_under_its_own_resource_and_scope() -> None:
    body = request(span(TRACE_A, "00000000000000a1"), span(TRACE_B, "00000000000000b1"))
    body["resourceSpans"].append(
        request(span(TRACE_A, "00000000000000a2", "00000000000000a1"), service="other")[
            "resourceSpans"
        ][0]
    )
    decoded = decode(json.dumps(body).encode(), "json")
    a = next(group for group in decoded.groups if group.trace_id == TRACE_A)
    services = [
        r["resource"]["attributes"][0]["value"]["stringValue"] for r in a.document["resourceSpans"]
    ]
    assert services == ["qa-app", "other"]
    assert a.spans == 2


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"traceId": "0" * 32}, "traceId"),
        ({"spanId": "0" * 16}, "spanId"),
        ({"spanId": "xyz"}, "spanId"),
        ({"parentSpanId": "12"}, "parentSpanId"),
        ({"name": ""}, "no name"),
        ({"endTimeUnixNano": "1"}, "ends before it starts"),
        ({"startTimeUnixNano": "soon"}, "nanoseconds"),
    ],
)
def test_an_invalid_span_is_rejected_alone_with_its_reason(
    bad: dict[str, Any], reason: str
) -> None:
    body = request(span(TRACE_A, "00000000000000a1"), {**span(TRACE_A, "00000000000000a2"), **bad})
    decoded = group_spans(body)
    assert decoded.accepted == 1 and decoded.rejected == 1
    assert reason in decoded.reasons[0]


@pytest.mark.parametrize(
    ("body", "encoding", "problem"),
    [
        (b"\xff\xff\xff", "protobuf", "malformed protobuf"),
        (b'{"resourceSpans": [', "json", "malformed JSON"),
        (b"[1, 2]", "json", "expected a JSON object"),
        (b'{"resourceSpans": {}}', "json", "resourceSpans: expected a list"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": 3}]}]}', "json", "spans as a list"),
        (b"\xc3\x28", "json", "not UTF-8"),
    ],
)
def test_an_unreadable_body_is_a_bad_request_with_the_reason(
    body: bytes, encoding: str, problem: str
) -> None:
    with pytest.raises(BadRequest, match=problem):
        decode(body, encoding)  # type: ignore[arg-type]


def test_gzip_is_inflated_within_the_limit_and_broken_gzip_is_refused() -> None:
    data = json.dumps(request(span(TRACE_A, "00000000000000a1"))).encode()
    assert decompress(gzip.compress(data), "gzip", 10_000) == data
    with pytest.raises(BadRequest, match="malformed gzip"):
        decompress(b"not gzip at all", "gzip", 10_000)
    with pytest.raises(BadRequest, match="truncated"):
        decompress(gzip.compress(data)[:-6], "gzip", 10_000)
    with pytest.raises(BadRequest, match="over the limit"):
        decompress(gzip.compress(b"0" * 100_000), "gzip", 10_000)  # a small bomb
    with pytest.raises(BadRequest, match="Content-Encoding"):
        decompress(data, "br", 10_000)


def test_content_types() -> None:
    assert encoding_of("application/x-protobuf") == "protobuf"
    assert encoding_of("application/json; charset=utf-8") == "json"
    with pytest.raises(BadRequest, match="Content-Type"):
        encoding_of("text/plain")


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=300), encoding=st.sampled_from(["protobuf", "json"]))
def test_any_bytes_decode_or_are_a_bad_request(body: bytes, encoding: str) -> None:
    """Fuzzing: arbitrary bodies never raise anything but BadRequest."""
    try:
        decoded = decode(body, encoding)  # type: ignore[arg-type]
    except BadRequest as exc:
        assert str(exc)
    else:
        assert decoded.accepted + decoded.rejected >= 0


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200), cut=st.integers(min_value=0, max_value=40))
def test_any_damaged_gzip_inflates_or_is_a_bad_request(data: bytes, cut: int) -> None:
    compressed = bytearray(gzip.compress(data))
    if cut < len(compressed):
        compressed[cut] ^= 0xFF
    try:
        assert decompress(bytes(compressed), "gzip", 1_000) == data
    except BadRequest as exc:
        assert "gzip" in str(exc)


# -- the spool --------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def accept_json(spool: Spool, body: dict[str, Any]) -> None:
    spool.accept(group_spans(body).groups)


def test_a_trace_is_due_after_its_root_and_the_quiet_period(tmp_path: Path) -> None:
    clock = Clock()
    spool = Spool(tmp_path, 10**6, clock)
    accept_json(spool, request(span(TRACE_A, "00000000000000a2", "00000000000000a1")))
    clock.now += 10
    assert spool.due(5, 300, 10) == []  # no root yet
    accept_json(spool, request(span(TRACE_A, "00000000000000a1")))
    clock.now += 4
    assert spool.due(5, 300, 10) == []  # still within the quiet period
    clock.now += 1
    assert spool.due(5, 300, 10) == [TRACE_A]
    accept_json(spool, request(span(TRACE_B, "00000000000000b2", "00000000000000b1")))
    clock.now += 300
    assert spool.due(5, 300, 10) == [TRACE_A, TRACE_B]  # B: rootless, waited long enough


def test_assembly_keeps_each_span_once_and_late_spans_join_what_was_loaded(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path, 10**6, Clock())
    root = span(TRACE_A, "00000000000000a1")
    accept_json(spool, request(root))
    accept_json(spool, request(root, span(TRACE_A, "00000000000000a2", "00000000000000a1")))
    first = spool.assemble(TRACE_A)
    assert first.spans == 2
    spool.mark_loaded([first])
    assert spool.pending()["traces"] == 0
    assert list((tmp_path / "batches").iterdir()) == []  # consumed batches are deleted
    accept_json(spool, request(span(TRACE_A, "00000000000000a3", "00000000000000a1")))
    late = spool.assemble(TRACE_A)
    assert late.spans == 3  # the late span is loaded with the two before it
    document = json.loads(late.path.read_text())
    ids = [
        s["spanId"]
        for r in document["resourceSpans"]
        for sc in r["scopeSpans"]
        for s in sc["spans"]
    ]
    assert sorted(ids) == ["00000000000000a1", "00000000000000a2", "00000000000000a3"]


def test_a_restart_recovers_exactly_what_was_not_loaded(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**6, Clock())
    both = request(span(TRACE_A, "00000000000000a1"), span(TRACE_B, "00000000000000b1"))
    accept_json(spool, both)
    spool.mark_loaded([spool.assemble(TRACE_A)])
    (tmp_path / "batches" / "half-written.jsonl.tmp").write_text("{")  # never acknowledged
    again = Spool(tmp_path, 10**6, Clock())  # a new process over the same directory
    assert again.pending() == {"traces": 1, "spans": 1, "batches": 1, "bytes": again.pending_bytes}
    assert again.due(0, 300, 10) == [TRACE_B]
    again.mark_loaded([again.assemble(TRACE_B)])
    assert Spool(tmp_path, 10**6, Clock()).pending()["traces"] == 0
    assert sorted(p.name for p in (tmp_path / "loaded").iterdir()) == [
        f"{TRACE_A}.json",
        f"{TRACE_B}.json",
    ]


def test_spans_arriving_during_a_load_stay_pending(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**6, Clock())
    accept_json(spool, request(span(TRACE_A, "00000000000000a1")))
    assembled = spool.assemble(TRACE_A)
    accept_json(spool, request(span(TRACE_A, "00000000000000a2", "00000000000000a1")))
    spool.mark_loaded([assembled])
    assert spool.pending()["spans"] == 1
    assert spool.assemble(TRACE_A).spans == 2


def test_a_refused_trace_is_kept_with_its_reason(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**6, Clock())
    accept_json(spool, request(span(TRACE_A, "00000000000000a1")))
    spool.mark_rejected(spool.assemble(TRACE_A), "bad attribute")
    assert (tmp_path / "rejected" / f"{TRACE_A}.txt").read_text() == "bad attribute\n"
    assert (tmp_path / "rejected" / f"{TRACE_A}.json").exists()
    assert Spool(tmp_path, 10**6, Clock()).pending()["traces"] == 0
    # later spans of it set aside again are kept beside the first, never over it
    accept_json(spool, request(span(TRACE_A, "00000000000000a2", "00000000000000a1")))
    spool.mark_rejected(spool.assemble(TRACE_A), "again")
    assert (tmp_path / "rejected" / f"{TRACE_A}-2.txt").read_text() == "again\n"
    assert json.loads((tmp_path / "rejected" / f"{TRACE_A}.json").read_text()) == request(
        span(TRACE_A, "00000000000000a1")
    )
    assert (tmp_path / "rejected" / f"{TRACE_A}-2.json").exists()


def test_retention_takes_the_traces_loaded_by_the_cutoff_and_not_waiting_for_spans() -> None:
    loaded_at = [("a", 10.0), ("b", 20.0), ("c", 30.0), ("d", 40.0)]
    assert expired(loaded_at, set(), 25.0) == ["a", "b"]
    assert expired(loaded_at, {"a"}, 30.0) == ["b", "c"]  # a: a late span of it is pending
    assert expired(loaded_at, set(), 9.0) == []
    assert expired(loaded_at, {"d"}, 40.0) == ["a", "b", "c"]


@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(0, 100)), unique_by=lambda t: t[0]),
    st.sets(st.sampled_from("abcdefgh")),
    st.floats(0, 100),
)
def test_retention_never_takes_a_busy_or_recent_trace(
    entries: list[tuple[str, float]], busy: set[str], cutoff: float
) -> None:
    loaded_at = sorted(entries, key=lambda entry: entry[1])  # the order of loading
    taken = expired(loaded_at, busy, cutoff)
    assert taken == [t for t, when in loaded_at if when <= cutoff and t not in busy]


def test_a_loaded_trace_file_is_pruned_after_the_retention_unless_spans_wait(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path, 10**6, Clock())
    accept_json(
        spool, request(span(TRACE_A, "00000000000000a1"), span(TRACE_B, "00000000000000b1"))
    )
    spool.mark_loaded([spool.assemble(TRACE_A), spool.assemble(TRACE_B)])
    loaded = tmp_path / "loaded"
    assert spool.prune(60) == 0  # both were loaded just now
    assert spool.kept_loaded() == 2
    # a late span of A is pending: A's file is what it will be loaded with, so it stays
    accept_json(spool, request(span(TRACE_A, "00000000000000a2", "00000000000000a1")))
    assert spool.prune(60, now=time.time() + 61) == 1
    assert sorted(p.name for p in loaded.iterdir()) == [f"{TRACE_A}.json"]
    late = spool.assemble(TRACE_A)
    assert late.span_ids == {"00000000000000a1", "00000000000000a2"}
    spool.mark_loaded([late])
    assert spool.prune(60, now=time.time() + 61) == 1
    assert list(loaded.iterdir()) == []
    assert spool.kept_loaded() == 0


def test_a_restart_keeps_the_retention_of_files_loaded_before_it(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**6, Clock())
    accept_json(
        spool, request(span(TRACE_A, "00000000000000a1"), span(TRACE_B, "00000000000000b1"))
    )
    spool.mark_loaded([spool.assemble(TRACE_A)])
    spool.mark_loaded([spool.assemble(TRACE_B)])
    hour_ago = time.time() - 3600
    os.utime(tmp_path / "loaded" / f"{TRACE_A}.json", (hour_ago, hour_ago))
    again = Spool(tmp_path, 10**6, Clock())  # the load times come from the files
    assert again.kept_loaded() == 2
    assert again.prune(600) == 1
    assert sorted(p.name for p in (tmp_path / "loaded").iterdir()) == [f"{TRACE_B}.json"]
    # a late span of the pruned trace is no longer taken for a loaded trace's: it waits for
    # its root (or max-wait), and the ingester will find the graph holds more than it
    accept_json(again, request(span(TRACE_A, "00000000000000a2", "00000000000000a1")))
    assert again.due(0, 300, 10) == []


# -- the endpoint -----------------------------------------------------------------------------


def client(spool: Spool, token: str | None = None) -> TestClient:
    app = create_app(spool, token, lambda: {"loaded_traces": 0})
    return TestClient(app, base_url="http://127.0.0.1:4318")


def test_a_protobuf_batch_is_acknowledged_in_protobuf_after_it_is_spooled(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**6)
    answer = client(spool).post(
        "/v1/traces",
        content=gzip.compress(protobuf_request()),
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
    )
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(answer.content).HasField("partial_success")
    assert spool.pending()["spans"] == 3
    assert len(list((tmp_path / "batches").glob("*.jsonl"))) == 1


def test_rejected_spans_are_a_partial_success_with_the_reason(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**6)
    body = request(span(TRACE_A, "00000000000000a1"), span("0" * 32, "00000000000000a2"))
    answer = client(spool).post("/v1/traces", json=body)
    assert answer.status_code == 200
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedSpans"] in (1, "1")
    assert "traceId" in partial["errorMessage"]
    assert spool.pending()["spans"] == 1


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b"\x0a\xff", {"Content-Type": "application/x-protobuf"}, 400),
        (b"{nope", {"Content-Type": "application/json"}, 400),
        (b"xx", {"Content-Type": "application/json", "Content-Encoding": "gzip"}, 400),
        (b"{}", {"Content-Type": "text/plain"}, 415),
    ],
)
def test_a_malformed_body_gets_an_error_and_nothing_is_written(
    tmp_path: Path, content: bytes, headers: dict[str, str], status: int
) -> None:
    spool = Spool(tmp_path, 10**6)
    answer = client(spool).post("/v1/traces", content=content, headers=headers)
    assert answer.status_code == status
    if headers["Content-Type"] == "application/x-protobuf":
        assert "malformed protobuf" in Status.FromString(answer.content).message
    else:
        assert answer.json()["message"]
    assert list((tmp_path / "batches").iterdir()) == []


@pytest.mark.parametrize("coding", ["identity", "gzip"])
def test_a_body_over_the_limit_gets_413_compressed_or_once_inflated(
    tmp_path: Path, coding: str
) -> None:
    spool = Spool(tmp_path, 10**6)
    body = json.dumps(request(span(TRACE_A, "00000000000000a1"))).encode()
    limit = len(body) - 1
    app = create_app(spool, None, dict, limits=Limits(max_body_bytes=limit))
    headers = {"Content-Type": "application/json", "Content-Encoding": coding}
    content = gzip.compress(body) if coding == "gzip" else body
    assert len(content) <= limit or coding == "identity"
    answer = TestClient(app, base_url="http://127.0.0.1:4318").post(
        "/v1/traces", content=content, headers=headers
    )
    assert answer.status_code == 413
    assert "limit" in answer.json()["message"]
    assert list((tmp_path / "batches").iterdir()) == []


def test_over_its_bound_the_spool_answers_503_with_retry_after(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10)
    accept_json(spool, request(span(TRACE_A, "00000000000000a1")))  # more than 10 bytes
    answer = client(spool).post(
        "/v1/traces", content=protobuf_request(), headers={"Content-Type": "application/x-protobuf"}
    )
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "5"
    assert "retry later" in Status.FromString(answer.content).message
    assert spool.pending()["spans"] == 1  # the refused batch was not kept


def test_with_a_token_every_request_needs_it(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**6)
    app = client(spool, token="s3cret")
    body = request(span(TRACE_A, "00000000000000a1"))
    assert app.post("/v1/traces", json=body).status_code == 401
    assert app.get("/status").status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert app.post("/v1/traces", json=body, headers=wrong).status_code == 401
    right = {"Authorization": "Bearer s3cret"}
    assert app.post("/v1/traces", json=body, headers=right).status_code == 200
    assert app.get("/status", headers=right).json()["pending"]["spans"] == 1


def test_a_loopback_receiver_answers_loopback_host_names_only(tmp_path: Path) -> None:
    app = create_app(Spool(tmp_path, 10**6), None, dict)
    rebound = TestClient(app, base_url="http://attacker.example:4318")
    assert rebound.get("/status").status_code == 400


def test_off_loopback_a_token_is_required() -> None:
    check_exposure("127.0.0.1", None)
    check_exposure("0.0.0.0", "s3cret")
    with pytest.raises(ConfigError, match="MEMTRACE_COLLECT_TOKEN"):
        check_exposure("0.0.0.0", None)


def test_status_codes_in_json_answers_are_the_grpc_ones(tmp_path: Path) -> None:
    answer = client(Spool(tmp_path, 10**6)).post(
        "/v1/traces", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert MessageToDict(Status(code=3, message="x"))["code"] == answer.json()["code"] == 3


# -- the documentation's examples ---------------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "collect.md"


def doc_blocks(language: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return [block.split("```", 1)[0] for block in text.split(f"```{language}\n")[1:]]


def test_the_documented_commands_parse() -> None:
    from memtrace.cli.collect import collect_command

    commands = [
        line.split("#")[0].split()[1:]
        for block in doc_blocks("bash")
        for line in block.splitlines()
        if line.startswith("memtrace collect")
    ]
    assert len(commands) == 5  # three receivers, two of them with timelines
    for args in commands:
        collect_command.make_context("collect", args[1:])  # raises on an unknown option


def test_the_documented_collector_config_targets_the_receiver() -> None:
    import yaml

    from memtrace.collect.receiver import DEFAULT_PORT, TOKEN_ENV

    (config,) = [yaml.safe_load(block) for block in doc_blocks("yaml")]
    exporter = config["exporters"]["otlphttp/memtrace"]
    assert exporter["endpoint"] == f"http://127.0.0.1:{DEFAULT_PORT}"
    assert exporter["headers"]["Authorization"] == f"Bearer ${{env:{TOKEN_ENV}}}"
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["exporters"] == ["otlphttp/memtrace"]
    assert set(pipeline["receivers"]) <= set(config["receivers"])
    assert config["service"]["extensions"] == [exporter["sending_queue"]["storage"]]


def test_a_spool_that_cannot_be_written_answers_503_and_acknowledges_nothing(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path / "spool", 10**6)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    spool.batches = blocked  # every write under it fails, as on a full or read-only disk
    answer = client(spool).post("/v1/traces", json=request(span(TRACE_A, "00000000000000a1")))
    assert answer.status_code == 503
    assert "cannot write the spool" in answer.json()["message"]
    assert answer.headers["retry-after"] == "5"
    assert spool.pending()["spans"] == 0
