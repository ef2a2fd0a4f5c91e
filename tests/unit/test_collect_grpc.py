"""The OTLP/gRPC endpoint offline (a real grpcio server on loopback, no Neo4j): the SDK's gRPC
exporter is acknowledged once its spans are spooled, and the status codes the OTLP
specification asks for (INVALID_ARGUMENT, RESOURCE_EXHAUSTED with RetryInfo, UNAUTHENTICATED);
a busy port is refused before the receiver announces anything."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_collect_core import TRACE_A, protobuf_request, request, span

from memtrace.cli import cli
from memtrace.collect.app import Limits
from memtrace.collect.decode import group_spans
from memtrace.collect.grpc_endpoint import RETRY_INFO_KEY, SERVICE, bind_grpc
from memtrace.collect.spool import Spool, claim_spool
from memtrace.errors import ConfigError

EXPORT = f"/{SERVICE}/Export"


@contextmanager
def endpoint(spool: Spool, token: str | None = None) -> Iterator[str]:
    server, port = bind_grpc(spool, token, "127.0.0.1", 0, Limits(max_body_bytes=1 << 20))
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait()


def export_raw(address: str, body: bytes, metadata: tuple[tuple[str, str], ...] = ()) -> object:
    """Send ``body`` as an Export request; return the response or the grpc.RpcError."""
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            EXPORT,
            request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        try:
            return call(body, metadata=metadata, timeout=10)
        except grpc.RpcError as error:
            return error


def sdk_spans(count: int) -> list[ReadableSpan]:
    captured = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(captured))
    tracer = provider.get_tracer("grpc-test")
    for number in range(count):
        with tracer.start_as_current_span(f"request-{number}"), tracer.start_as_current_span("llm"):
            pass
    return list(captured.get_finished_spans())


def test_the_sdk_grpc_exporter_is_acknowledged_once_its_spans_are_spooled(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**7)
    spans = sdk_spans(3)
    with endpoint(spool) as address:
        exporter = OTLPSpanExporter(
            endpoint=address, insecure=True, compression=grpc.Compression.Gzip
        )
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
    assert spool.pending()["traces"] == 3
    assert spool.pending()["spans"] == 6
    assert len(list((tmp_path / "batches").glob("*.jsonl"))) == 1


def test_a_malformed_request_is_invalid_argument_and_nothing_is_kept(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**7)
    with endpoint(spool) as address:
        error = export_raw(address, b"\x0a\xff")
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed protobuf" in error.details()
    assert list((tmp_path / "batches").iterdir()) == []


def test_a_span_that_cannot_be_loaded_is_rejected_alone_as_a_partial_success(
    tmp_path: Path,
) -> None:
    message = ExportTraceServiceRequest.FromString(protobuf_request())
    message.resource_spans[0].scope_spans[0].spans.add(
        trace_id=bytes(16), span_id=bytes.fromhex("00000000000000a9"), name="zero-trace"
    )
    spool = Spool(tmp_path, 10**7)
    with endpoint(spool) as address:
        answer = export_raw(address, message.SerializeToString())
    assert isinstance(answer, ExportTraceServiceResponse)
    assert answer.partial_success.rejected_spans == 1
    assert "traceId" in answer.partial_success.error_message
    assert spool.pending()["spans"] == 3


def test_over_its_bound_the_spool_answers_resource_exhausted_with_a_retry_delay(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path, 10)
    spool.accept(group_spans(request(span(TRACE_A, "00000000000000a1"))).groups)
    with endpoint(spool) as address:
        error = export_raw(address, protobuf_request())
    assert isinstance(error, grpc.RpcError)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    retry = RetryInfo.FromString(dict(error.trailing_metadata())[RETRY_INFO_KEY])
    assert retry.retry_delay.seconds == 5
    assert spool.pending()["spans"] == 1  # the refused request was not kept


def test_with_a_token_every_call_needs_it(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**7)
    with endpoint(spool, token="s3cret") as address:
        missing = export_raw(address, protobuf_request())
        wrong = export_raw(address, protobuf_request(), (("authorization", "Bearer nope"),))
        right = export_raw(address, protobuf_request(), (("authorization", "Bearer s3cret"),))
    for refused in (missing, wrong):
        assert isinstance(refused, grpc.RpcError)
        assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
    assert isinstance(right, ExportTraceServiceResponse)
    assert spool.pending()["spans"] == 3


def test_a_busy_grpc_port_is_a_config_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match="cannot bind"):
            bind_grpc(Spool(tmp_path, 10**7), None, "127.0.0.1", port, Limits())


@pytest.mark.parametrize("which", ["--port", "--grpc-port"])
def test_a_busy_port_fails_the_command_before_it_says_it_is_receiving(
    tmp_path: Path, which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMTRACE_HOME", str(tmp_path / "home"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        ports = {"--port": "0", "--grpc-port": "0", which: str(busy)}
        arguments = ["collect", "--spool", str(tmp_path / "spool")]
        for option, value in ports.items():
            arguments += [option, value]
        result = CliRunner().invoke(cli, arguments)
    assert result.exit_code != 0
    assert "cannot bind" in result.output
    assert "receiving" not in result.output


def test_one_spool_serves_one_receiver_at_a_time(tmp_path: Path) -> None:
    first = claim_spool(tmp_path)
    with pytest.raises(ConfigError, match="another receiver"):
        claim_spool(tmp_path)
    first.release()
    again = claim_spool(tmp_path)
    assert again.owner == first.owner  # the spool's identity, so a restart keeps its leases
    again.release()
