"""`memtrace collect` beside Arize Phoenix on the same OTLP/HTTP stream, in one run.

    nice -n 10 .venv/bin/python benchmarks/collect_vs_phoenix.py \\
        --phoenix-python /work/wt/phoenix-venv/bin/python --traces 300 --rounds 3 --trickle 60

Phoenix is the benchmark's dependency, never memtrace's: install it into a virtualenv of its
own (``python -m venv phoenix-venv && phoenix-venv/bin/pip install arize-phoenix``) and pass
that interpreter as ``--phoenix-python``. Both run as child processes on loopback with free
ports: Phoenix with its default SQLite store in a temporary working directory (telemetry off),
memtrace as ``memtrace collect --quiet-period --quiet`` on a private managed Neo4j.

0. warm-up: --warmup traces to each, not counted (shown as ``warmup``): a freshly started JVM
   compiles its hot paths and Neo4j re-plans its queries while a new store grows from empty
   (rounds of 100 traces from a cold start, reference machine: 8.9, 20.1, then 55.8 spans/s).
1. rate (--rounds, alternating which goes first): the spans of --traces traces of a small
   OpenInference-instrumented QA app (otlp_qa_app.py, 3 spans per trace, fresh ids each round)
   sent by the SDK's OTLP/HTTP exporter (protobuf, gzip) in requests of --batch spans; spans /
   seconds from the first send until every span is queryable: in Phoenix's store (SQLite, the
   table its API reads), in Neo4j as :Operation nodes of complete traces.
2. trickle: --trickle traces, one per second, to each; per trace the seconds from its export's
   answer to its spans being queryable (polled every 20 ms); p50 / p95.

With --timelines the questions are asked by --users users (``user.id`` on each root span) and
memtrace runs ``collect --timelines``: each request is appended to its user's timeline, and a
span is queryable once its operation is in the timeline (the trickle appends to the timelines
the rounds made).

Prints JSON: per round both rates and memtrace / Phoenix, their median, the trickle latencies,
and the machine load (uptime) before and after.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_qa_app import traced_spans
from private_server import PrivateServer, free_port, start_private_server

from memtrace.admin import init_schema
from memtrace.db import Database, connect
from memtrace.loaders.otlp.timelines import timeline_trace_id
from memtrace.server import manager

MEMTRACE = str(Path(sys.executable).parent / "memtrace")
POLL_SECONDS = 0.02


def uptime() -> str:
    return Path("/proc/loadavg").read_text().split(" 1")[0].strip()


def hex_ids(spans: list[ReadableSpan]) -> list[str]:
    return sorted({format(span.context.trace_id, "032x") for span in spans if span.context})


def memtrace_keys(spans: list[ReadableSpan], timelines: bool) -> list[dict[str, str]]:
    """Each span's operation key in memtrace: its trace (``otlp-<OTel trace id>``, or with
    timelines its user's timeline) and its span id."""
    users = {
        span.context.trace_id: str(span.attributes["user.id"])
        for span in spans
        if span.context and span.attributes and "user.id" in span.attributes
    }
    keys = []
    for span in spans:
        assert span.context is not None
        trace = f"otlp-{span.context.trace_id:032x}"
        if timelines:
            trace = timeline_trace_id("user", users[span.context.trace_id])
        keys.append({"trace": trace, "span": f"{span.context.span_id:016x}"})
    return keys


@dataclass
class Target:
    """A running receiver: where to send, and how many of some spans it can answer."""

    name: str
    endpoint: str
    queryable: Callable[[list[ReadableSpan]], int]  # how many of these spans one can query now


@contextmanager
def phoenix(python: str, folder: Path) -> Iterator[Target]:
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (folder / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=log
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/healthz", process, folder / "phoenix.log")
        database = folder / "phoenix.db"

        def queryable(spans: list[ReadableSpan]) -> int:
            trace_ids = hex_ids(spans)
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as store:
                marks = ",".join("?" * len(trace_ids))
                row = store.execute(
                    "SELECT count(*) FROM spans s JOIN traces t ON s.trace_rowid = t.id "
                    f"WHERE t.trace_id IN ({marks})",
                    trace_ids,
                ).fetchone()
            return int(row[0])

        yield Target("phoenix", f"http://127.0.0.1:{port}/v1/traces", queryable)
    finally:
        process.terminate()  # our own child, by its handle
        process.wait(timeout=120)


@contextmanager
def memtrace(
    server: PrivateServer, db: Database, folder: Path, quiet: float, timelines: bool
) -> Iterator[Target]:
    port = free_port()
    command = [MEMTRACE, "collect", "--port", str(port), "--no-grpc", "--spool", str(folder)]
    command += ["--quiet-period", str(quiet)] + (["--timelines"] if timelines else [])
    folder.mkdir(parents=True)
    log_path = folder.parent / f"{folder.name}.log"
    process = subprocess.Popen(command, env=server.env, stderr=log_path.open("wb"))
    try:
        _wait_for(f"http://127.0.0.1:{port}/status", process, log_path)

        def queryable(spans: list[ReadableSpan]) -> int:
            rows = db.run(
                "UNWIND $keys AS key MATCH (t:Trace {id: key.trace, load_state: 'complete'}) "
                "MATCH (o:Operation {trace_id: t.id, id: key.span}) RETURN count(o) AS n",
                keys=memtrace_keys(spans, timelines),
            )
            return int(rows[0]["n"])

        yield Target("memtrace", f"http://127.0.0.1:{port}/v1/traces", queryable)
    finally:
        process.terminate()
        process.wait(timeout=120)


def _wait_for(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not come up:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def rate(target: Target, spans: list[ReadableSpan], batch: int) -> dict[str, Any]:
    exporter = OTLPSpanExporter(endpoint=target.endpoint, compression=Compression.Gzip, timeout=60)
    started = time.perf_counter()
    for start in range(0, len(spans), batch):
        assert exporter.export(spans[start : start + batch]) == SpanExportResult.SUCCESS
    sent = time.perf_counter() - started
    while target.queryable(spans) < len(spans):
        time.sleep(0.2)
    seconds = time.perf_counter() - started
    return {
        "spans": len(spans),
        "send_seconds": round(sent, 3),
        "seconds": round(seconds, 3),
        "spans_per_second": round(len(spans) / seconds, 1),
    }


def trickle(target: Target, count: int, tag: str, users: list[str]) -> dict[str, Any]:
    exporter = OTLPSpanExporter(endpoint=target.endpoint, timeout=60)
    latencies = []
    for number in range(count):
        asker = [users[number % len(users)]] if users else []
        spans, _ = traced_spans(1, tag=f"{tag}{number}-", users=asker)
        tick = time.perf_counter()
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        answered = time.perf_counter()
        while target.queryable(spans) < len(spans):
            time.sleep(POLL_SECONDS)
        latencies.append(time.perf_counter() - answered)
        time.sleep(max(0.0, 1.0 - (time.perf_counter() - tick)))
    cuts = statistics.quantiles(latencies, n=20, method="inclusive")
    return {"traces": count, "p50_s": round(cuts[9], 3), "p95_s": round(cuts[18], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phoenix-python", required=True, help="python of Phoenix's virtualenv")
    parser.add_argument("--traces", type=int, default=300)
    parser.add_argument("--batch", type=int, default=30, help="spans per exporter request")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=200, help="traces to each, not counted")
    parser.add_argument("--trickle", type=int, default=60, help="traces at one per second")
    parser.add_argument("--quiet", type=float, default=0.5, help="memtrace's quiet period, s")
    parser.add_argument("--timelines", action="store_true", help="collect --timelines")
    parser.add_argument("--users", type=int, default=10, help="with --timelines: timelines")
    args = parser.parse_args()
    users = [f"user{number}" for number in range(args.users)] if args.timelines else []
    logging.getLogger("neo4j").setLevel(logging.ERROR)
    results: dict[str, Any] = {
        "uptime_before": uptime(),
        "quiet_seconds": args.quiet,
        "timelines": args.timelines,
        "rounds": [],
    }
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        server = start_private_server(root / "neo4j", 512 * 2**20)
        try:
            with (
                connect(server.settings) as db,
                phoenix(args.phoenix_python, _folder(root / "phoenix")) as peer,
            ):
                init_schema(db)
                with memtrace(server, db, root / "spool", args.quiet, args.timelines) as ours:
                    if args.warmup:
                        results["warmup"] = {
                            target.name: rate(
                                target,
                                traced_spans(args.warmup, f"w{target.name}-", users)[0],
                                args.batch,
                            )
                            for target in (ours, peer)
                        }
                    for number in range(args.rounds):
                        order = [ours, peer] if number % 2 == 0 else [peer, ours]
                        measured = {}
                        for target in order:
                            tag = f"r{number}{target.name}-"
                            spans, _ = traced_spans(args.traces, tag=tag, users=users)
                            measured[target.name] = rate(target, spans, args.batch)
                        ratio = (
                            measured["memtrace"]["spans_per_second"]
                            / measured["phoenix"]["spans_per_second"]
                        )
                        results["rounds"].append(
                            {
                                **measured,
                                "ratio": round(ratio, 3),
                                "first": order[0].name,
                                "uptime": uptime(),
                            }
                        )
                        print(json.dumps(results["rounds"][-1]), file=sys.stderr)
                    if args.trickle > 1:
                        results["trickle"] = {
                            target.name: trickle(target, args.trickle, f"t{target.name}-", users)
                            for target in (ours, peer)
                        }
        finally:
            manager.stop(server.layout)
    results["uptime_after"] = uptime()
    ratios = [r["ratio"] for r in results["rounds"]]
    results["ratio_median"] = round(statistics.median(ratios), 3) if ratios else None
    print(json.dumps(results, indent=2))


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


if __name__ == "__main__":
    main()
