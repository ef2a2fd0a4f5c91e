"""Live OTLP ingestion (`memtrace collect`) against the file loader, same spans, same run.

    nice -n 10 .venv/bin/python benchmarks/collect_ingest.py --traces 60 --soak-seconds 600

On a private managed Neo4j (its own home and ports, stopped afterwards):

1. file loader: the traces of a small OpenInference-instrumented QA app (otlp_qa_app.py; 3 spans
   per trace) written as one OTLP JSON file per trace, loaded by ONE `load_paths` call (what
   `memtrace load DIR` does); spans / its seconds.
2. receiver: the same spans sent by the OpenTelemetry SDK's OTLP/HTTP exporter (protobuf, gzip)
   in batches of --batch spans to an in-process receiver (quiet period --quiet); spans / seconds
   from the first send until every trace is loaded. Export-to-queryable latency per trace: from
   its last span's arrival to the commit of its load (includes the quiet period).
3. soak (--soak-seconds > 0): `memtrace collect` as a child process fed one trace every
   --soak-interval seconds; its RSS and the files in its spool's loaded/ sampled every 5 s
   (bounded loop, loopback only); --soak-keep-loaded passes its --keep-loaded.

Rounds alternate which of 1 and 2 runs first (the second finds a warmer server); the ratio is
receiver / file loader per round, and its median. Prints JSON with the machine load (uptime).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_qa_app import as_otlp_json, traced_spans
from private_server import free_port, start_private_server

from memtrace.admin import delete_everything, init_schema
from memtrace.collect.decode import group_spans
from memtrace.collect.ingest import IngestOptions
from memtrace.collect.receiver import Receiver, ReceiverOptions
from memtrace.db import Database, connect
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.server import manager
from memtrace.settings import Settings

MEMTRACE = str(Path(sys.executable).parent / "memtrace")


def uptime() -> str:
    return Path("/proc/loadavg").read_text().split(" 1")[0].strip()


def file_loader(db: Database, spans: list[Any], folder: Path) -> dict[str, Any]:
    folder.mkdir()
    for group in group_spans(as_otlp_json(spans)).groups:
        (folder / f"{group.trace_id}.json").write_text(json.dumps(group.document))
    files = sorted(str(path) for path in folder.iterdir())
    started = time.perf_counter()
    summary = load_paths(db, files, LoadOptions(format="otlp"))
    seconds = time.perf_counter() - started
    return {
        "traces": len(summary.files),
        "seconds": round(seconds, 3),
        "spans_per_second": round(len(spans) / seconds, 1),
    }


def receiver_run(
    settings: Settings, spans: list[Any], folder: Path, batch: int, quiet: float
) -> dict[str, Any]:
    """Send, then wait until the receiver has loaded every trace. No poller queries Neo4j (it
    would load the server during this run only): the latencies are the receiver's own, from a
    trace's last span received to the commit of the load that made it queryable."""
    options = ReceiverOptions(
        port=0,
        grpc_port=None,
        spool_dir=folder / "spool",
        ingest=IngestOptions(quiet_seconds=quiet),
    )
    receiver = Receiver(settings, options, lambda message: print(message, file=sys.stderr))
    traces = len({span.context.trace_id for span in spans})
    with receiver.serving_in_thread() as url:
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", compression=Compression.Gzip)
        started = time.perf_counter()
        for start in range(0, len(spans), batch):
            assert exporter.export(spans[start : start + batch]) == SpanExportResult.SUCCESS
        while receiver.status()["loaded_traces"] < traces:
            time.sleep(0.05)
        seconds = time.perf_counter() - started
    status = receiver.status()
    latency = status["seconds_after_last_span"]
    return {
        "traces": traces,
        "seconds": round(seconds, 3),
        "spans_per_second": round(len(spans) / seconds, 1),
        "quiet_seconds": quiet,
        "latency_p50_s": latency["p50"],
        "latency_p95_s": latency["p95"],
        "receiver_status": status,
    }


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def soak(
    env: dict[str, str], folder: Path, seconds: float, interval: float, keep: float | None
) -> dict[str, Any]:
    port = free_port()
    loaded = folder / "soak" / "loaded"
    command = [
        MEMTRACE,
        "collect",
        "--port",
        str(port),
        "--no-grpc",
        "--spool",
        str(folder / "soak"),
        "--quiet-period",
        "0.5",
        *(["--keep-loaded", str(keep)] if keep is not None else []),
    ]
    log = folder / "soak.log"  # the receiver's own messages (a paused load says why)
    process = subprocess.Popen(command, env=env, stderr=log.open("wb"))
    try:
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=30)
        deadline = time.monotonic() + 120
        while True:  # wait for the endpoint
            warm, _ = traced_spans(1, tag="warm")
            if exporter.export(warm) == SpanExportResult.SUCCESS:
                break
            assert time.monotonic() < deadline, "the receiver did not start"
        samples: list[tuple[float, int, int]] = []  # seconds, RSS KiB, files in loaded/
        sent = refused = spans_sent = spans_acknowledged = 0
        started = time.monotonic()
        next_sample = started
        number = 0
        while time.monotonic() - started < seconds:  # bounded: --soak-seconds
            spans, _ = traced_spans(1, tag=f"soak{number}-")
            number += 1
            spans_sent += len(spans)
            if exporter.export(spans) == SpanExportResult.SUCCESS:
                sent += 1
                spans_acknowledged += len(spans)
            else:
                refused += 1
            if time.monotonic() >= next_sample:
                at = round(time.monotonic() - started, 1)
                samples.append((at, rss_kib(process.pid), sum(1 for _ in loaded.iterdir())))
                next_sample += 5
            time.sleep(interval)
        time.sleep(10)  # let the last traces pass the quiet period and load
        status = httpx.get(f"http://127.0.0.1:{port}/status", timeout=60).json()
        rss = [kib for _, kib, _ in samples]
        third = max(1, len(rss) // 3)
        minutes = [at / 60 for at, _, _ in samples]
        mib = [kib / 1024 for kib in rss]
        slope = statistics.linear_regression(minutes, mib).slope
        half = len(rss) // 2
        slope_late = statistics.linear_regression(minutes[half:], mib[half:]).slope
        paused = [line for line in log.read_text().splitlines() if "loading paused" in line]
        loaded_files = list(loaded.glob("*.json"))
        return {
            "seconds": seconds,
            "traces_sent": sent,
            "batches_refused": refused,
            "spans_sent": spans_sent,
            "spans_acknowledged": spans_acknowledged,
            "warm_up_spans_acknowledged": len(warm),  # also in receiver_status.loaded_spans
            "rss_mib_start": round(rss[0] / 1024, 1),
            "rss_mib_middle": round(rss[len(rss) // 2] / 1024, 1),
            "rss_mib_end": round(rss[-1] / 1024, 1),
            "rss_mib_slope_per_minute": round(slope, 3),
            "rss_mib_slope_per_minute_second_half": round(slope_late, 3),
            "rss_mib_first_third_mean": round(statistics.mean(rss[:third]) / 1024, 1),
            "rss_mib_last_third_mean": round(statistics.mean(rss[-third:]) / 1024, 1),
            "rss_mib_max": round(max(rss) / 1024, 1),
            "keep_loaded_seconds": keep,
            "spool_loaded_files_max": max(files for _, _, files in samples),
            "spool_loaded_files": len(loaded_files),
            "spool_loaded_bytes": sum(path.stat().st_size for path in loaded_files),
            "receiver_status": status,  # its latencies: last span received -> loaded
            "loading_paused": len(paused),
            "loading_paused_first": paused[:3],
            "samples": samples,
        }
    finally:
        process.terminate()  # our own child, by its handle
        process.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=60)
    parser.add_argument("--batch", type=int, default=30, help="spans per exporter request")
    parser.add_argument("--quiet", type=float, default=0.5, help="receiver quiet period, s")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--soak-seconds", type=float, default=0)
    parser.add_argument("--soak-interval", type=float, default=1.0)
    parser.add_argument("--soak-keep-loaded", type=float, help="the soak receiver's --keep-loaded")
    args = parser.parse_args()
    logging.getLogger("neo4j").setLevel(logging.ERROR)  # notifications are not results
    results: dict[str, Any] = {"uptime_before": uptime(), "pid": os.getpid(), "rounds": []}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        server = start_private_server(root / "neo4j", 512 * 2**20)
        try:
            with connect(server.settings) as db:
                init_schema(db)
                for number in range(args.rounds):
                    spans, _ = traced_spans(args.traces, tag=f"r{number}-")

                    def by_file(n: int = number, s: list[Any] = spans) -> dict[str, Any]:
                        return file_loader(db, s, root / f"files{n}")

                    def live_run(n: int = number, s: list[Any] = spans) -> dict[str, Any]:
                        folder = root / f"live{n}"
                        return receiver_run(server.settings, s, folder, args.batch, args.quiet)

                    # alternate which goes first: the second of a pair finds a warmer server
                    order = [by_file, live_run] if number % 2 == 0 else [live_run, by_file]
                    measured = []
                    for step in order:
                        measured.append(step())
                        delete_everything(db)
                        init_schema(db)
                    files, live = measured if number % 2 == 0 else measured[::-1]
                    ratio = live["spans_per_second"] / files["spans_per_second"]
                    results["rounds"].append(
                        {
                            "spans": len(spans),
                            "file_loader": files,
                            "receiver": live,
                            "ratio": round(ratio, 3),
                            "first": "file_loader" if number % 2 == 0 else "receiver",
                            "uptime": uptime(),
                        }
                    )
                    print(json.dumps(results["rounds"][-1]), file=sys.stderr)
            if args.soak_seconds > 0:
                results["soak"] = soak(
                    server.env, root, args.soak_seconds, args.soak_interval, args.soak_keep_loaded
                )
        finally:
            manager.stop(server.layout)
    results["uptime_after"] = uptime()
    ratios = [r["ratio"] for r in results["rounds"]]
    results["ratio_median"] = round(statistics.median(ratios), 3) if ratios else None
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
