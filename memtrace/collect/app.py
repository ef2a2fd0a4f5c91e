"""The OTLP/HTTP trace endpoint (Starlette): ``POST /v1/traces`` and ``GET /status``.

As the OTLP/HTTP specification says: the answer is encoded as the request was (protobuf or JSON);
200 once every accepted span is durably spooled, with a partial success naming how many spans were
rejected and why; 400 with a ``google.rpc.Status`` for a body that cannot be read (nothing of it is
kept), 413 for one over the limit (compressed or once inflated); 503 with ``Retry-After`` while the
spool is over its bound (the exporter retries). A token, when set, is required as ``Authorization:
Bearer <token>``."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memtrace.collect.decode import (
    BadRequest,
    Decoded,
    Encoding,
    ExportTraceServiceResponse,
    MessageToDict,
    Status,
    TooLarge,
    decode,
    decompress,
    encoding_of,
)
from memtrace.collect.spool import Spool

LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
MAX_BODY_BYTES = 64 * 1024 * 1024  # compressed or not; the Collector's default batch is far less
# gRPC status codes, which OTLP/HTTP's Status body carries
INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE, UNAUTHENTICATED = 3, 8, 14, 16
MEDIA = {"protobuf": "application/x-protobuf", "json": "application/json"}


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = MAX_BODY_BYTES
    retry_after_seconds: int = 5


def create_app(
    spool: Spool,
    token: str | None,
    status: Callable[[], dict[str, Any]],
    bound_host: str = "127.0.0.1",
    limits: Limits = Limits(),
) -> Starlette:
    """The receiver app over ``spool``; ``status`` reports the loader's progress."""

    def refused(request: Request) -> Response | None:
        if token is None:
            return None
        given = request.headers.get("authorization", "")
        if secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return None
        return _error(
            "json", 401, UNAUTHENTICATED, "missing or wrong token (Authorization: Bearer ...)"
        )

    async def traces(request: Request) -> Response:
        denied = refused(request)
        if denied is not None:
            return denied
        try:
            encoding = encoding_of(request.headers.get("content-type"))
        except BadRequest as exc:
            return _error("json", 415, INVALID_ARGUMENT, str(exc))
        if spool.over_bound():
            return _error(
                encoding,
                503,
                UNAVAILABLE,
                f"the spool holds over {spool.max_bytes} bytes not yet loaded; retry later",
                {"Retry-After": str(limits.retry_after_seconds)},
            )
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limits.max_body_bytes:
                return _error(
                    encoding,
                    413,
                    INVALID_ARGUMENT,
                    f"body over the limit of {limits.max_body_bytes} bytes",
                )
        try:
            data = decompress(
                bytes(body), request.headers.get("content-encoding"), limits.max_body_bytes
            )
            decoded = await run_in_threadpool(decode, data, encoding)
        except TooLarge as exc:
            return _error(encoding, 413, INVALID_ARGUMENT, str(exc))
        except BadRequest as exc:
            return _error(encoding, 400, INVALID_ARGUMENT, str(exc))
        try:
            await run_in_threadpool(spool.accept, decoded.groups)
        except OSError as exc:  # a full or read-only disk: nothing was acknowledged, retry
            return _error(
                encoding,
                503,
                UNAVAILABLE,
                f"cannot write the spool: {exc.strerror or exc}",
                {"Retry-After": str(limits.retry_after_seconds)},
            )
        return _encoded(encoding, 200, success_message(decoded))

    async def status_page(request: Request) -> Response:
        denied = refused(request)
        if denied is not None:
            return denied
        return JSONResponse({"pending": spool.pending(), **status()})

    loopback = bound_host in LOOPBACK_HOSTS
    return Starlette(
        routes=[
            Route("/v1/traces", traces, methods=["POST"]),
            Route("/status", status_page, methods=["GET"]),
        ],
        middleware=[
            # no DNS rebinding of a loopback receiver; a remote one is reached by any name
            Middleware(
                TrustedHostMiddleware,
                allowed_hosts=[*LOOPBACK_HOSTS, bound_host] if loopback else ["*"],
            )
        ],
    )


def success_message(decoded: Decoded) -> ExportTraceServiceResponse:
    """The answer to a request whose spans are spooled: a partial success names the rejected."""
    response = ExportTraceServiceResponse()
    if decoded.rejected:
        response.partial_success.rejected_spans = decoded.rejected
        response.partial_success.error_message = (
            f"{decoded.rejected} span(s) rejected: " + "; ".join(decoded.reasons)
        )
    return response


def _error(
    encoding: Encoding,
    http_status: int,
    code: int,
    message: str,
    headers: dict[str, str] | None = None,
) -> Response:
    return _encoded(encoding, http_status, Status(code=code, message=message), headers)


def _encoded(
    encoding: Encoding,
    http_status: int,
    message: ExportTraceServiceResponse | Status,
    headers: dict[str, str] | None = None,
) -> Response:
    if encoding == "protobuf":
        content = message.SerializeToString()
    else:
        content = json.dumps(MessageToDict(message)).encode()
    return Response(content, http_status, headers, media_type=MEDIA[encoding])
