"""The OTLP/gRPC trace endpoint: ``opentelemetry.proto.collector.trace.v1.TraceService/Export``.

It shares everything with the OTLP/HTTP endpoint (app.py) but the transport: the same decoding,
partial success and spool, so a span is acknowledged only once it is durable. As the OTLP
specification asks of gRPC: ``INVALID_ARGUMENT`` for a request that cannot be read (nothing of
it is kept), ``RESOURCE_EXHAUSTED`` with a ``RetryInfo`` while the spool is over its bound (the
exporters wait as told and send again), ``UNAVAILABLE`` when the spool cannot be written,
``UNAUTHENTICATED`` without the token (metadata ``authorization: Bearer <token>``). gzip is
gRPC's own message compression, which grpcio undoes before the handler runs.

The method is registered on raw bytes rather than through the generated servicer: the generated
one parses the request before our code runs, and grpcio answers a body it cannot parse with
``INTERNAL``, which exporters do not recognise as the client's error.
"""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NoReturn

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from memtrace.collect.app import Limits, success_message
from memtrace.collect.decode import BadRequest, ExportTraceServiceResponse, decode
from memtrace.collect.spool import Spool
from memtrace.errors import ConfigError

SERVICE = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"].full_name
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"  # where the OTLP exporters look for the delay
WORKERS = 8  # concurrent Export calls; each spends its time in fsync, not on the CPU


class _Refusal(Exception):
    """An Export call's answer other than OK: a gRPC status code and its message."""

    def __init__(self, code: grpc.StatusCode, message: str, retry_seconds: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.retry_seconds = retry_seconds


@dataclass
class TraceExport:
    """The Export method over ``spool``: bytes in, an ``ExportTraceServiceResponse`` out."""

    spool: Spool
    token: str | None
    limits: Limits

    def __call__(self, body: bytes, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        try:
            return self.answer(body, dict(context.invocation_metadata()))
        except _Refusal as refusal:
            _abort(context, refusal)

    def answer(self, body: bytes, metadata: dict[str, str | bytes]) -> ExportTraceServiceResponse:
        if self.token is not None:
            given = str(metadata.get("authorization", ""))
            if not secrets.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                raise _Refusal(
                    grpc.StatusCode.UNAUTHENTICATED,
                    "missing or wrong token (metadata authorization: Bearer ...)",
                )
        if self.spool.over_bound():
            raise _Refusal(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the spool holds over {self.spool.max_bytes} bytes not yet loaded; retry later",
                self.limits.retry_after_seconds,
            )
        try:
            decoded = decode(body, "protobuf")
        except BadRequest as exc:
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        try:
            self.spool.accept(decoded.groups)
        except OSError as exc:  # a full or read-only disk: nothing was acknowledged, retry
            raise _Refusal(
                grpc.StatusCode.UNAVAILABLE,
                f"cannot write the spool: {exc.strerror or exc}",
                self.limits.retry_after_seconds,
            ) from None
        return success_message(decoded)


def _abort(context: grpc.ServicerContext, refusal: _Refusal) -> NoReturn:
    if refusal.retry_seconds:
        info = RetryInfo(retry_delay=Duration(seconds=refusal.retry_seconds))
        context.set_trailing_metadata([(RETRY_INFO_KEY, info.SerializeToString())])
    context.abort(refusal.code, str(refusal))
    raise AssertionError("grpc's abort raises")  # pragma: no cover


def bind_grpc(
    spool: Spool, token: str | None, host: str, port: int, limits: Limits
) -> tuple[grpc.Server, int]:
    """A gRPC server with the Export method, bound to ``host:port`` (0: a free port) but not
    started; returns it and the port bound. A busy port is a ``ConfigError``, as for HTTP."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="memtrace-collect-grpc"),
        options=[
            ("grpc.max_receive_message_length", limits.max_body_bytes),
            ("grpc.so_reuseport", 0),  # a second receiver on the port is an error, not a sharer
        ],
    )
    handler = grpc.unary_unary_rpc_method_handler(
        TraceExport(spool, token, limits),
        request_deserializer=None,  # the raw bytes: decode() says what is wrong with them
        response_serializer=ExportTraceServiceResponse.SerializeToString,
    )
    service = grpc.method_handlers_generic_handler(SERVICE, {"Export": handler})
    server.add_generic_rpc_handlers((service,))
    address = f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if bound == 0:
        server.stop(None)
        raise ConfigError(
            f"cannot bind {host}:{port} for OTLP/gRPC (in use, or not an address here)"
        )
    return server, bound
