"""Load throughput: our batched loader vs a naive loader, and loader RSS as files grow.

    .venv/bin/python benchmarks/load_throughput.py --messages 5400 54000 162000 \
        --naive-elements 3000

(5,400 messages make about 100k elements, 54,000 about 1M, 162,000 about 3M.)

For each size a synthetic native trace is written to benchmarks/out/, loaded by `memtrace-load`
in a child process (elements/s from its summary, peak RSS from the child's rusage), then deleted
(each size --repeat times; the load average is recorded next to each run, the machine is shared).
The naive loader (one MERGE per node / relationship, each in its own transaction) runs on the
first records of the smallest file until it has written --naive-elements elements; its rate is
per element, so it extrapolates linearly. Results go to stdout as JSON and a Markdown table,
followed by the growth of peak RSS from the smallest to the largest trace (the goal: flat).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from synthetic import write_synthetic_trace

from memtrace.admin import delete_trace, init_schema
from memtrace.db import Database, connect
from memtrace.loaders.native import read_native
from memtrace.settings import load_settings

OUT = Path(__file__).resolve().parent / "out"


def run_loader(path: Path, batch_size: int) -> dict[str, Any]:
    command = "from memtrace.cli.load import load_command; load_command()"
    args = [sys.executable, "-c", command, str(path), "--json", "--batch-size", str(batch_size)]
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stdout = process.stdout.read() if process.stdout else b""
    stderr = process.stderr.read() if process.stderr else b""
    if status != 0:
        raise SystemExit(f"loader failed: {stderr.decode(errors='replace')}")
    summary = json.loads(stdout)
    elements = summary["nodes_written"] + summary["relationships_written"]
    return {
        "elements": elements,
        "seconds": summary["seconds"],
        "wall_seconds": round(wall, 2),
        "elements_per_second": round(elements / summary["seconds"]),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "file_mb": round(path.stat().st_size / 2**20, 1),
    }


def naive_load(db: Database, path: Path, trace_id: str, budget: int) -> dict[str, Any]:
    """One MERGE per record element, each in its own transaction."""
    elements = 0
    started = time.perf_counter()

    def one(query: str, **params: Any) -> None:
        nonlocal elements
        db.run(query, trace_id=trace_id, **params)
        elements += 1

    for _, record in read_native(path):
        if elements >= budget:
            break
        if record.type == "variable":
            one(
                "MERGE (v:Variable {trace_id: $trace_id, id: $id}) SET v.name = $name, "
                "v.value = $value, v.created_at = $created_at",
                id=record.id,
                name=record.name,
                value=record.value,
                created_at=record.created_at,
            )
        elif record.type == "operation":
            one(
                "MERGE (o:Operation {trace_id: $trace_id, id: $id}) SET o.name = $name",
                id=record.id,
                name=record.name,
            )
            for rel, targets in (("READS", record.reads), ("WRITES", record.writes)):
                for var in targets:
                    one(
                        "MERGE (o:Operation {trace_id: $trace_id, id: $op}) "
                        "MERGE (v:Variable {trace_id: $trace_id, id: $var}) "
                        f"MERGE (o)-[:{rel}]->(v)",
                        op=record.id,
                        var=var,
                    )
        elif record.type == "edge":
            one(
                "MERGE (s:Variable {trace_id: $trace_id, id: $source}) "
                "MERGE (t:Variable {trace_id: $trace_id, id: $target}) "
                "MERGE (s)-[:FLOWS_TO {edge_id: $id}]->(t)",
                id=record.id,
                source=record.source,
                target=record.target,
            )
    seconds = time.perf_counter() - started
    return {
        "elements": elements,
        "seconds": round(seconds, 2),
        "elements_per_second": round(elements / seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[5400, 54000])
    parser.add_argument("--naive-elements", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    results: list[dict[str, Any]] = []
    with connect(load_settings()) as db:
        init_schema(db)
        for messages in args.messages:
            trace_id = f"bench-load-{messages}"
            path = OUT / f"{trace_id}.jsonl"
            write_synthetic_trace(path, trace_id, messages)
            for _ in range(args.repeat):
                delete_trace(db, trace_id)
                load_before = os.getloadavg()[0]
                result = {"messages": messages, **run_loader(path, args.batch_size)}
                result["load_avg"] = f"{load_before:.1f}/{os.getloadavg()[0]:.1f}"
                delete_trace(db, trace_id)
                results.append(result)
                print(json.dumps(result), file=sys.stderr)
        naive_id = f"bench-naive-{args.messages[0]}"
        delete_trace(db, naive_id)
        naive = naive_load(
            db, OUT / f"bench-load-{args.messages[0]}.jsonl", naive_id, args.naive_elements
        )
        delete_trace(db, naive_id)
    ours = results[-1]["elements_per_second"]
    smallest = min(r["peak_rss_mb"] for r in results if r["messages"] == args.messages[0])
    largest = max(r["peak_rss_mb"] for r in results if r["messages"] == args.messages[-1])
    report = {
        "loader": results,
        "naive": naive,
        "speedup_vs_naive": round(ours / naive["elements_per_second"], 1),
        "rss_growth": round(largest / smallest, 3),
    }
    print(json.dumps(report, indent=2))
    print(
        "\n| messages | file MB | elements | seconds | elements/s | peak RSS MB "
        "| load avg before/after |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['messages']:,} | {r['file_mb']} | {r['elements']:,} | {r['seconds']} | "
            f"{r['elements_per_second']:,} | {r['peak_rss_mb']} | {r['load_avg']} |"
        )
    print(
        f"\nnaive: {naive['elements']:,} elements in {naive['seconds']} s = "
        f"{naive['elements_per_second']:,} elements/s; ours (largest) / naive = "
        f"{report['speedup_vs_naive']}x"
    )
    print(
        f"peak RSS: {smallest} MB at {args.messages[0]:,} messages, {largest} MB at "
        f"{args.messages[-1]:,} messages: {report['rss_growth']}x"
    )


if __name__ == "__main__":
    main()
