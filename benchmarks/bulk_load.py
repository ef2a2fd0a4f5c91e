"""Bulk import vs the Bolt loader vs Neo4j's own Cypher rate, same server, same run.

    .venv/bin/python benchmarks/bulk_load.py --messages 5400 54000 [--memory 1g]

(5,400 messages make about 100k elements, 54,000 about 1M, 162,000 about 3M.)

Starts a private managed server (temporary MEMTRACE_HOME borrowing the installed jars, free
ports, --memory heap and page cache). For each size a synthetic native trace is written to
benchmarks/out/ and, each in a child process:

  csv writer   validation + the CSV files alone (what `--bulk` runs before the import): its
               seconds and peak RSS (the goal: flat as the trace grows)
  bulk         `memtrace load --bulk FILE --json` into the empty database: whole command, and
               its phases (validate, write_files, stop, import, start, schema, case_texts)
  bolt         `memtrace load FILE --json` into the (again) empty database
  cypher       Neo4j alone, same schema: `UNWIND $rows CREATE (v:Variable) SET v = row` in
               batches of 5,000 and relationships between them by element id, combined in
               the trace's own node / relationship mix

The database is emptied between runs with an import of no data (stop, import, start).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from private_server import start_private_server
from synthetic import write_synthetic_trace

from memtrace.admin import init_schema
from memtrace.db import Database, connect
from memtrace.server import manager
from memtrace.server.config import parse_size
from memtrace.server.layout import ServerLayout

OUT = Path(__file__).resolve().parent / "out"
BATCH = 5_000
CSV_WRITER = """
import sys, tempfile
from pathlib import Path
from memtrace.loaders.bulk import write_files
from memtrace.loaders.load import LoadOptions, LoadSummary, validated
with tempfile.TemporaryDirectory() as folder, validated([sys.argv[1]], LoadOptions()) as found:
    write_files(found[0], LoadOptions(), Path(folder), LoadSummary())
"""
NODES = "UNWIND $rows AS row CREATE (v:Variable) SET v = row RETURN collect(elementId(v)) AS ids"
RELATIONSHIPS = (
    "UNWIND $pairs AS pair MATCH (a:Variable) WHERE elementId(a) = pair[0] "
    "MATCH (b:Variable) WHERE elementId(b) = pair[1] CREATE (a)-[:FLOWS_TO {edge_id: pair[2]}]->(b)"
)


def child(args: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    """Run ``args``; return its wall seconds and stdout."""
    started = time.perf_counter()
    result = subprocess.run(args, capture_output=True, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{args[:4]} failed: {result.stderr.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - started, result.stdout


def peak_rss_child(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS MB of one child (its own process; rusage of that pid)."""
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        err = process.stderr.read() if process.stderr else b""
        raise SystemExit(f"csv writer failed: {err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def load(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    command = "from memtrace.cli.load import load_command; load_command()"
    wall, out = child([sys.executable, "-c", command, *args, "--json"], env)
    summary: dict[str, Any] = json.loads(out)
    summary["wall_seconds"] = wall
    summary["elements"] = summary["nodes_written"] + summary["relationships_written"]
    return summary


def import_phases(layout: ServerLayout) -> list[str]:
    """The importer's own phase times (its log), to set against the JVM's start around them."""
    text = (layout.logs / "import.log").read_text(encoding="utf-8", errors="replace")
    return [line.strip() for line in text.splitlines() if "COMPLETED" in line or "DONE" in line]


def empty_database(layout: ServerLayout) -> None:
    """Back to an empty database, quickly: stop, import nothing, start."""
    options = manager.restart_options(layout)
    manager.stop(layout)
    header = layout.import_dir / "bench-empty.csv"
    header.write_text(":ID\n", encoding="utf-8")
    manager.import_full(layout, "neo4j", [f"--nodes={header}"])
    header.unlink()
    manager.start(layout, options)


def cypher_rate(db: Database, nodes: int, node_share: float) -> dict[str, float]:
    """Neo4j's own rate for ``nodes`` Variable nodes and as many relationships, same schema."""
    init_schema(db)
    rows = [
        {
            "trace_id": "ceiling",
            "id": f"var-{i}",
            "name": f"memory_{i % 100}",
            "version": 1,
            "category": "memory",
            "value": f"the text of memory number {i}",
            "created_at": "2026-01-01T00:00:00Z",
            "ts": 1_700_000_000_000_000 + i,
            "seq": i,
        }
        for i in range(nodes)
    ]
    ids: list[str] = []
    started = time.perf_counter()
    for first in range(0, nodes, BATCH):
        result = db.write_batch(NODES, rows=rows[first : first + BATCH])
        ids.extend(result.records[0]["ids"])
    node_rate = nodes / (time.perf_counter() - started)
    pairs = [[ids[i], ids[(i * 7 + 1) % nodes], f"e-{i}"] for i in range(nodes)]
    started = time.perf_counter()
    for first in range(0, nodes, BATCH):
        db.write_batch(RELATIONSHIPS, pairs=pairs[first : first + BATCH])
    rel_rate = nodes / (time.perf_counter() - started)
    mix = 1 / (node_share / node_rate + (1 - node_share) / rel_rate)
    return {"nodes_per_s": node_rate, "relationships_per_s": rel_rate, "trace_mix_per_s": mix}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[5400, 54000])
    parser.add_argument("--memory", default="1g", help="server heap and page cache, each")
    parser.add_argument("--ceiling-nodes", type=int, default=100_000)
    args = parser.parse_args()
    size = parse_size(args.memory)
    OUT.mkdir(exist_ok=True)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memtrace-bulk-bench-") as tmp:
        server = start_private_server(Path(tmp), size)
        layout, env, settings = server.layout, server.env, server.settings
        try:
            for messages in args.messages:
                path = OUT / f"bench-load-{messages}.jsonl"
                if not path.exists():
                    write_synthetic_trace(path, f"bench-load-{messages}", messages)
                row: dict[str, Any] = {"messages": messages, "file_mb": path.stat().st_size >> 20}
                row["load_before"] = os.getloadavg()[0]
                csv_s, csv_mb = peak_rss_child([sys.executable, "-c", CSV_WRITER, str(path)], env)
                row["csv_writer"] = {"seconds": csv_s, "peak_rss_mb": csv_mb}
                row["bulk"] = load(["--bulk", str(path)], env)
                row["bulk"].pop("import_command")
                row["import_log"] = import_phases(layout)
                empty_database(layout)
                row["bolt"] = load([str(path)], env)
                empty_database(layout)
                elements = row["bolt"]["elements"]
                share = row["bolt"]["nodes_written"] / elements
                with connect(settings) as db:
                    row["cypher"] = cypher_rate(db, args.ceiling_nodes, share)
                empty_database(layout)
                row["load_after"] = os.getloadavg()[0]
                results.append(row)
                print(json.dumps(row, default=str), flush=True)
        finally:
            manager.stop(layout)
    print_table(results)


def print_table(results: list[dict[str, Any]]) -> None:
    print(
        "\n| elements | bulk s | bulk el/s | import s | bolt s | bolt el/s | cypher el/s "
        "| bulk / bolt | bolt / cypher | CSV writer s | CSV writer peak RSS MB | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in results:
        bulk, bolt, cypher = row["bulk"], row["bolt"], row["cypher"]
        bulk_rate = bulk["elements"] / bulk["seconds"]
        bolt_rate = bolt["elements"] / bolt["seconds"]
        ceiling = cypher["trace_mix_per_s"]
        print(
            f"| {bulk['elements']:,} | {bulk['seconds']:.1f} | {bulk_rate:,.0f} "
            f"| {bulk['phases']['import']:.1f} | {bolt['seconds']:.1f} | {bolt_rate:,.0f} "
            f"| {ceiling:,.0f} | {bulk_rate / bolt_rate:.2f}x | {bolt_rate / ceiling:.2f} "
            f"| {row['csv_writer']['seconds']:.1f} | {row['csv_writer']['peak_rss_mb']:.1f} "
            f"| {row['load_before']:.1f}/{row['load_after']:.1f} |"
        )
    for row in results:
        phases = ", ".join(f"{k} {v:.1f}" for k, v in row["bulk"]["phases"].items())
        print(f"{row['bulk']['elements']:,} elements, bulk phases (s): {phases}")
        print(f"  neo4j-admin import: {'; '.join(row['import_log'])}")


if __name__ == "__main__":
    main()
