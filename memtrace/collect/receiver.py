"""`memtrace collect`: the endpoints and the loader together, in one process.

OTLP/HTTP answers on uvicorn's event loop, OTLP/gRPC on grpcio's threads, both into one spool;
the loader runs on a thread of its own with its own Neo4j connection, so a slow or absent
database never blocks acknowledging spans (the spool's bound does, through 503s and
RESOURCE_EXHAUSTED). Both ports are bound before anything is announced, so a busy port is the
first thing said. Loopback only unless a token is set.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import quantiles
from typing import Any

import grpc

from memtrace.attribution.judges import Judge
from memtrace.attribution.model import Verdict
from memtrace.attribution.pipeline import (
    Options,
    failure_summary,
    run_attribution,
    untrailed_summary,
)
from memtrace.attribution.store import AttributionStore
from memtrace.collect.app import Limits, create_app
from memtrace.collect.grpc_endpoint import bind_grpc
from memtrace.collect.ingest import AfterLoad, Ingester, IngestOptions, Log
from memtrace.collect.spool import Spool, claim_spool
from memtrace.collect.store import failed_cases
from memtrace.db import Database, connect
from memtrace.errors import ConfigError, MemtraceError
from memtrace.serving import Running, is_loopback, prepare, running_in_thread
from memtrace.settings import Settings

DEFAULT_PORT = 4318  # OTLP/HTTP's registered port
DEFAULT_GRPC_PORT = 4317  # OTLP/gRPC's
GRPC_GRACE_SECONDS = 5.0  # calls in flight finish (their spans are spooled) before the stop
DEFAULT_SPOOL_BYTES = 256 * 1024 * 1024
TOKEN_ENV = "MEMTRACE_COLLECT_TOKEN"


@dataclass(frozen=True)
class ReceiverOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    grpc_port: int | None = DEFAULT_GRPC_PORT  # None: no gRPC endpoint
    spool_dir: Path | None = None  # default: $MEMTRACE_HOME/collect/spool
    spool_max_bytes: int = DEFAULT_SPOOL_BYTES
    token: str | None = None
    ingest: IngestOptions = field(default_factory=IngestOptions)
    limits: Limits = field(default_factory=Limits)


def default_spool(settings: Settings) -> Path:
    return settings.home / "collect" / "spool"


def check_exposure(host: str, token: str | None) -> None:
    """Off loopback the endpoint answers only with a token: refuse to start without one."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to receive spans on {host!r} without a token: set {TOKEN_ENV} (exporters "
            "then send the header 'Authorization: Bearer <token>'), or bind 127.0.0.1"
        )


class Receiver:
    def __init__(
        self,
        settings: Settings,
        options: ReceiverOptions,
        log: Log,
        after_load: AfterLoad | None = None,
    ) -> None:
        check_exposure(options.host, options.token)
        self.settings = settings
        self.options = options
        root = options.spool_dir or default_spool(settings)
        self.claim = claim_spool(root)  # before the spool reads its files: no one else does
        self.spool = Spool(root, options.spool_max_bytes)
        self.ingester = Ingester(self.spool, options.ingest, self.claim.owner, log, after_load)
        self.app = create_app(self.spool, options.token, self.status, options.host, options.limits)
        self.bound: Bound | None = None  # while serving_in_thread

    def status(self) -> dict[str, Any]:
        counters = self.ingester.counters
        latencies = list(counters.latencies)
        return {
            "loaded_traces": counters.loaded_traces,
            "loaded_spans": counters.loaded_spans,
            "rejected_traces": counters.rejected_traces,
            "load_errors": counters.load_errors,
            "loaded_files_kept": self.spool.kept_loaded(),
            "loaded_files_pruned": counters.pruned_traces,
            "seconds_after_last_span": _percentiles(latencies),
        }

    @contextmanager
    def loading(self) -> Iterator[None]:
        """Run the loader thread (and with ``after_load`` the attributing thread) for the
        duration of the block; at its end what was loaded is attributed before it returns."""
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=self.ingester.run,
                args=(lambda: connect(self.settings), stop),
                name="memtrace-collect-loader",
                daemon=True,
            )
        ]
        after_load = self.ingester.after_load
        if after_load is not None:
            threads.append(
                threading.Thread(
                    target=self.ingester.attributions.run,
                    args=(after_load, lambda: connect(self.settings), threads[0]),
                    name="memtrace-collect-attribute",
                    daemon=True,
                )
            )
        for thread in threads:
            thread.start()
        try:
            yield
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)

    def bind(self) -> Bound:
        """Bind the HTTP and gRPC ports (a busy one is a ``ConfigError``), serving nothing yet."""
        options = self.options
        running = prepare(self.app, options.host, options.port)
        if options.grpc_port is None:
            return Bound(running)
        try:
            server, port = bind_grpc(
                self.spool, options.token, options.host, options.grpc_port, options.limits
            )
        except ConfigError:
            running.sock.close()
            raise
        return Bound(running, server, port)

    def serve(self, bound: Bound) -> None:
        """Receive and load until Ctrl-C / SIGTERM (uvicorn stops on both, then gRPC stops)."""
        with self.loading(), bound.grpc_serving():
            bound.http.serve()

    @contextmanager
    def serving_in_thread(self) -> Iterator[str]:
        """Receive and load in background threads (tests, benchmarks); yields the HTTP base
        URL (``self.bound`` has the gRPC port)."""
        bound = self.bound = self.bind()
        with self.loading(), bound.grpc_serving(), running_in_thread(bound.http) as url:
            yield url


@dataclass
class Bound:
    """The receiver's bound ports, not yet serving."""

    http: Running
    grpc: grpc.Server | None = None
    grpc_port: int | None = None

    @contextmanager
    def grpc_serving(self) -> Iterator[None]:
        if self.grpc is None:
            yield
            return
        self.grpc.start()
        try:
            yield
        finally:
            self.grpc.stop(GRPC_GRACE_SECONDS).wait()


def _percentiles(values: list[float]) -> dict[str, float] | None:
    if len(values) < 2:
        return None
    cuts = quantiles(values, n=20, method="inclusive")
    return {"p50": round(cuts[9], 3), "p95": round(cuts[18], 3), "n": len(values)}


def attributing(judge: Judge, options: Options, run_id: str | None, log: Log) -> AfterLoad:
    """Attribute the failed cases of loaded traces (``memtrace collect --attribute``), so
    failure classes stay current: the cases of every trace loaded since the last call in one
    run; a failure is logged, the loading goes on."""

    def after_load(
        db: Database, trace_ids: list[str], new_cases: list[tuple[str, str]] | None
    ) -> None:
        store = AttributionStore(db)
        try:
            # a timeline's earlier cases were attributed when their requests came
            cases = failed_cases(db, trace_ids) if new_cases is None else new_cases
            if not cases:
                return
            run, verdicts = run_attribution(
                store, judge, options, cases=cases, run_id=run_id, workers=1
            )
        except MemtraceError as exc:
            log(f"attributing {len(trace_ids)} loaded trace(s) failed: {exc}")
            return
        by_trace: dict[str, list[Verdict]] = {}
        for verdict in verdicts:
            by_trace.setdefault(verdict.trace_id, []).append(verdict)
        for trace_id, of_trace in by_trace.items():
            log(f"attributed {len(of_trace)} failed case(s) of {trace_id} as run {run}")
            untrailed = untrailed_summary(of_trace)
            if untrailed:
                log(f"trace {trace_id}: {untrailed}")
            problems = failure_summary(of_trace)
            if problems:
                log(f"trace {trace_id}: {problems}")

    return after_load
