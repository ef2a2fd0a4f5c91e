"""`memtrace collect --attribute`: from a trace's last span to its failed case attributed.

    nice -n 10 .venv/bin/python benchmarks/collect_attribute_latency.py --rate 6 --seconds 120

The goal (docs/DEVELOPERS' performance goals): p95 <= the quiet period + 5 s at 6 traces/s.
``memtrace collect --attribute --judge offline --quiet-period --quiet`` runs as a child process
on a private managed Neo4j (loopback, free ports). The QA app of otlp_qa_app.py (3 spans per
trace, every other answer wrong) is sent one trace per request by the SDK's OTLP/HTTP exporter,
--rate traces per second for --seconds, after --warmup seconds at that rate that are not
counted (a freshly started JVM compiles its hot paths, Neo4j re-plans while the store grows
from empty). Per failed trace: the seconds from its export's answer
(its last span is in) until an :Attribution hangs off its failed case, polled every 0.1 s in one
query for all outstanding traces. Prints JSON: p50 / p95 / max, the goal, traces sent and
attributed, the achieved send rate and the machine load (uptime).

With --timelines the questions are asked by --users users (``user.id`` on each root span) and the
receiver runs with ``--timelines``: each request is appended to its user's timeline and only the
failed case it brought is attributed.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_qa_app import traced_spans
from private_server import free_port, start_private_server

from memtrace.admin import init_schema
from memtrace.db import Database, connect
from memtrace.loaders.otlp.timelines import timeline_trace_id
from memtrace.server import manager

MEMTRACE = str(Path(sys.executable).parent / "memtrace")
ATTRIBUTED = (
    "UNWIND $keys AS key MATCH (c:Case {trace_id: key.trace, id: key.case, failed: true}) "
    "WHERE EXISTS { (c)-[:HAS_ATTRIBUTION]->(:Attribution) } RETURN DISTINCT key.id AS id"
)


def uptime() -> str:
    return Path("/proc/loadavg").read_text().split(" 1")[0].strip()


def attributed(
    db: Database,
    waiting: dict[str, float],
    keys: dict[str, dict[str, str]],
    latencies: list[float],
) -> None:
    """Move the waiting traces whose failed case is attributed now into ``latencies``."""
    if not waiting:
        return
    now = time.perf_counter()
    for row in db.run(ATTRIBUTED, keys=[keys[trace_id] for trace_id in waiting]):
        latencies.append(now - waiting.pop(row["id"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=6.0, help="traces per second")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--quiet", type=float, default=5.0, help="the receiver's quiet period")
    parser.add_argument("--drain", type=float, default=120.0, help="wait after the last send")
    parser.add_argument(
        "--warmup", type=float, default=30.0, help="seconds sent at the rate first, not counted"
    )
    parser.add_argument("--timelines", action="store_true", help="collect --timelines")
    parser.add_argument("--users", type=int, default=10, help="with --timelines: timelines")
    args = parser.parse_args()
    logging.getLogger("neo4j").setLevel(logging.ERROR)
    count = int(args.rate * args.seconds)
    users = [f"user{number}" for number in range(args.users)] if args.timelines else []
    spans, trace_ids = traced_spans(count, tag="attr-", users=users)
    warm_spans, warm_ids = traced_spans(int(args.rate * args.warmup), tag="warm-", users=users)
    warm: list[list[Any]] = [[] for _ in warm_ids]
    for span in warm_spans:
        warm[warm_ids.index(format(span.context.trace_id, "032x"))].append(span)
    by_trace: dict[str, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(format(span.context.trace_id, "032x"), []).append(span)
    # each question's failed case, where the receiver puts it (otlp_qa_app's case ids)
    keys = {
        trace_id: {
            "id": trace_id,
            "trace": timeline_trace_id("user", users[number % len(users)])
            if users
            else f"otlp-{trace_id}",
            "case": f"qattr-{number}",
        }
        for number, trace_id in enumerate(trace_ids)
    }
    results: dict[str, Any] = {
        "uptime_before": uptime(),
        "quiet_seconds": args.quiet,
        "timelines": args.timelines,
        "warmup_traces": len(warm),
    }
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        server = start_private_server(root / "neo4j", 512 * 2**20)
        port = free_port()
        command = [MEMTRACE, "collect", "--port", str(port), "--no-grpc"]
        command += ["--spool", str(root / "spool"), "--quiet-period", str(args.quiet)]
        command += ["--attribute", "--judge", "offline"]
        command += ["--timelines"] if args.timelines else []
        log = root / "collect.log"
        process = subprocess.Popen(command, env=server.env, stderr=log.open("wb"))
        try:
            with connect(server.settings) as db:
                init_schema(db)
                deadline = time.monotonic() + 180
                while True:
                    try:
                        if httpx.get(f"http://127.0.0.1:{port}/status").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                    time.sleep(0.2)
                exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
                warm_started = time.perf_counter()
                for number, spans_of_one in enumerate(warm):
                    time.sleep(max(0.0, warm_started + number / args.rate - time.perf_counter()))
                    assert exporter.export(spans_of_one) == SpanExportResult.SUCCESS
                waiting: dict[str, float] = {}
                latencies: list[float] = []
                started = time.perf_counter()
                next_poll = started
                for number, trace_id in enumerate(trace_ids):
                    due = started + number / args.rate
                    while time.perf_counter() < due:
                        if time.perf_counter() >= next_poll:
                            attributed(db, waiting, keys, latencies)
                            next_poll = time.perf_counter() + 0.1
                        time.sleep(min(0.01, max(0.0, due - time.perf_counter())))
                    assert exporter.export(by_trace[trace_id]) == SpanExportResult.SUCCESS
                    if number % 2 == 1:  # otlp_qa_app: every other answer is wrong
                        waiting[trace_id] = time.perf_counter()
                sent_seconds = time.perf_counter() - started
                failed = len(waiting) + len(latencies)
                end = time.perf_counter() + args.drain
                while waiting and time.perf_counter() < end:
                    attributed(db, waiting, keys, latencies)
                    time.sleep(0.1)
        finally:
            process.terminate()  # our own child, by its handle
            process.wait(timeout=120)
            manager.stop(server.layout)
    cuts = statistics.quantiles(latencies, n=20, method="inclusive") if len(latencies) > 1 else []
    results.update(
        {
            "traces_sent": count,
            "send_rate": round(count / sent_seconds, 2),
            "failed_traces": failed,
            "attributed": len(latencies),
            "not_attributed_after_drain": failed - len(latencies),
            "p50_s": round(cuts[9], 2) if cuts else None,
            "p95_s": round(cuts[18], 2) if cuts else None,
            "max_s": round(max(latencies), 2) if latencies else None,
            "goal_p95_s": args.quiet + 5,
            "uptime_after": uptime(),
        }
    )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
