"""Failure patterns at scale: `memtrace patterns` and `memtrace report` over >= 10,000
attributed failed cases, as ratios to one `MATCH (a:Attribution) RETURN count(a)`.

    .venv/bin/python benchmarks/patterns.py --traces 50 --cases 220

1. Writes a synthetic attributed graph with UNWIND (no loader, no judge: the aggregates are what
   is measured): --traces complete traces of three systems, each with 100 messages, an
   extraction and an update operation per message (extraction reads a versioned prompt),
   --cases failed cases with a query, one or two evidence messages, a search (reads top_k) and
   an answer (reads a prompt), and one Attribution per case in one run, blaming an extraction,
   update, search or answer op (1% of the attributions failed).
2. Times, --repeat times each (median, after one warm-up): the baseline count query; the
   library call `failure_classes` (the query + shaping); the whole `memtrace patterns --format
   json` command in a child process (interpreter start and imports included); `make_report`
   in-process (every query, charts, HTML + Markdown written).
3. Deletes everything it wrote. JSON on stdout, then a Markdown table.

    .venv/bin/python benchmarks/patterns.py --fresh-start [--rounds 2] [--repeat 5]

instead starts a private managed server (temporary MEMTRACE_HOME borrowing the installed jars,
free ports, --memory heap and page cache), seeds it once and then, --rounds times and alternated,
stops it and starts it again with `memtrace neo4j start` and with `memtrace neo4j start
--no-warm-up`, each time timing the start command, the first `memtrace patterns --format json`
after it and the median of --repeat more. The baseline is the import of the command's modules
alone (`python -c "import memtrace.cli.patterns"`), timed in the same rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from private_server import start_private_server
from queries import benchmark_query

from memtrace import patterns
from memtrace.admin import delete_trace, init_schema
from memtrace.db import Database, connect
from memtrace.report.build import make_report
from memtrace.server import manager
from memtrace.server.config import ServerOptions, parse_size
from memtrace.server.layout import ServerLayout
from memtrace.settings import load_settings

SYSTEMS = ("mem0", "rag", "long-context")
MESSAGES = 100
BASELINE = "MATCH (a:Attribution) RETURN count(a) AS n"

TRACE = benchmark_query("patterns_seed_trace")
CASES = benchmark_query("patterns_seed_cases")

BLAME = (  # (op id prefix, error type, weight)
    ("ex", "ExtractionError", 4),
    ("up", "UpdateError", 3),
    ("s-", "RetrievalError", 2),
    ("qa-", "ResponseError", 1),
)
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")


def _case_rows(trace_index: int, cases: int) -> list[dict[str, Any]]:
    rows = []
    weights = [w for _, _, w in BLAME]
    for n in range(cases):
        cid = f"q{n}"
        message = (n * 7 + trace_index) % MESSAGES
        pick = (n * 13 + trace_index) % sum(weights)
        prefix, error_type = next(
            (p, e) for (p, e, _), edge in zip(BLAME, _edges(weights), strict=True) if pick < edge
        )
        op_id = f"{prefix}{message}" if prefix in ("ex", "up") else f"{prefix}{cid}"
        failed = n % 100 == 99  # 1% of the attributions failed
        rows.append(
            {
                "id": cid,
                "seq": 10_000 + 3 * n,
                "category": CATEGORIES[n % len(CATEGORIES)],
                "evidence": [f"m{message}"] + ([f"m{(message + 31) % MESSAGES}"] if n % 3 else []),
                "op_id": None if failed else op_id,
                "error_type": None if failed else error_type,
                "confidence": None if failed else 0.5 + (n % 5) / 10,
                "error": "synthetic failure" if failed else None,
            }
        )
    return rows


def _edges(weights: list[int]) -> list[int]:
    total, edges = 0, []
    for weight in weights:
        total += weight
        edges.append(total)
    return edges


def seed(db: Database, scope: str, traces: int, cases: int) -> tuple[str, list[str]]:
    run_id = f"{scope}-run"
    ids = []
    for i in range(traces):
        trace_id = f"{scope}-{i}"
        ids.append(trace_id)
        system = SYSTEMS[i % len(SYSTEMS)]
        db.run(TRACE, trace_id=trace_id, system=system, version=1 + i % 2, messages=MESSAGES)
        db.run(CASES, trace_id=trace_id, run_id=run_id, cases=_case_rows(i, cases))
    return run_id, ids


def timed(work: Callable[[], object], repeat: int, first: list[float] | None = None) -> float:
    started = time.perf_counter()
    work()  # warm-up: plans cached, pages in memory
    if first is not None:  # the warm-up's own time: what the first run on a fresh server pays
        first.append(time.perf_counter() - started)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


MEMTRACE = str(Path(sys.executable).parent / "memtrace")


def cli_patterns(run_id: str, env: dict[str, str] | None = None) -> None:
    command = [MEMTRACE, "patterns", "--run", run_id, "--format", "json"]
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        raise SystemExit(f"memtrace patterns failed: {result.stderr}")


def seconds_of(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def restart(
    layout: ServerLayout, options: ServerOptions, env: dict[str, str], warm_up: bool
) -> tuple[float, float]:
    """Stop the server, start it with `memtrace neo4j start`; the start command's seconds and
    the warm-up seconds it reports (0 without warm-up)."""
    assert options.memory is not None
    manager.stop(layout)
    command = [MEMTRACE, "neo4j", "start", "--bolt-port", str(options.bolt_port)]
    command += ["--http-port", str(options.http_port)]
    command += ["--heap", f"{options.memory.heap_bytes >> 20}m"]
    command += ["--page-cache", f"{options.memory.pagecache_bytes >> 20}m"]
    started = time.perf_counter()
    result = subprocess.run(
        command + ([] if warm_up else ["--no-warm-up"]),
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"memtrace neo4j start failed: {result.stdout}{result.stderr}")
    found = re.search(r"planned and run once in ([0-9.]+) s", result.stdout)
    if warm_up and found is None:
        raise SystemExit(f"no warm-up reported: {result.stdout}")
    return seconds, float(found.group(1)) if found else 0.0


def fresh_start(args: argparse.Namespace) -> None:
    """The first `memtrace patterns` after a server start, with and without the warm-up."""
    size = parse_size(args.memory)
    imports = [sys.executable, "-c", "import memtrace.cli, memtrace.cli.patterns"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memtrace-patterns-bench-") as tmp:
        server = start_private_server(Path(tmp), size)
        layout, options, env = server.layout, server.options, server.env
        try:
            with connect(server.settings) as db:
                init_schema(db)
                run_id, _ = seed(db, "fresh", args.traces, args.cases)
                attributed = db.run("MATCH (a:Attribution) RETURN count(a) AS n")[0]["n"]
            for round_number in range(args.rounds):
                for warm_up in (True, False):
                    load_before = os.getloadavg()[0]
                    start_s, warm_s = restart(layout, options, env, warm_up)
                    first = seconds_of(lambda: cli_patterns(run_id, env))
                    later = [
                        seconds_of(lambda: cli_patterns(run_id, env)) for _ in range(args.repeat)
                    ]
                    baseline = statistics.median(
                        seconds_of(lambda: subprocess.run(imports, check=True, env=env))
                        for _ in range(3)
                    )
                    row: dict[str, Any] = {
                        "round": round_number + 1,
                        "warm_up": warm_up,
                        "start_command_s": start_s,
                        "warm_up_s": warm_s,
                        "first_patterns_s": first,
                        "later_patterns_median_s": statistics.median(later),
                        "later_patterns_s": later,
                        "imports_s": baseline,
                        "load_before": load_before,
                        "load_after": os.getloadavg()[0],
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            manager.stop(layout)
    print(
        f"\n{attributed} attributed failed cases, {args.traces} traces\n\n"
        "| round | start | start command s | of which warm-up s | first `memtrace patterns` s "
        "| next runs, median s | imports alone s (baseline) | first / baseline | load avg |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    for row in rows:
        kind = "`memtrace neo4j start`" if row["warm_up"] else "`--no-warm-up`"
        print(
            f"| {row['round']} | {kind} | {row['start_command_s']:.1f} | {row['warm_up_s']:.1f} "
            f"| {row['first_patterns_s']:.2f} | {row['later_patterns_median_s']:.2f} "
            f"| {row['imports_s']:.2f} | {row['first_patterns_s'] / row['imports_s']:.2f} "
            f"| {row['load_before']:.1f}/{row['load_after']:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=50)
    parser.add_argument("--cases", type=int, default=220, help="failed cases per trace")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--fresh-start", action="store_true", help="time the first command after a start"
    )
    parser.add_argument("--rounds", type=int, default=2, help="with --fresh-start")
    parser.add_argument("--memory", default="1g", help="with --fresh-start: heap, page cache")
    args = parser.parse_args()
    if args.fresh_start:
        fresh_start(args)
        return
    scope = f"bp{uuid.uuid4().hex[:8]}"
    with connect(load_settings()) as db:
        init_schema(db)
        started = time.perf_counter()
        run_id, ids = seed(db, scope, args.traces, args.cases)
        seed_seconds = time.perf_counter() - started
        try:
            attributed = db.run(
                "MATCH (a:Attribution {run_id: $run_id}) RETURN count(a) AS n", run_id=run_id
            )[0]["n"]
            started = time.perf_counter()
            classes = patterns.failure_classes(db, run_id)
            first_library = time.perf_counter() - started
            baseline = timed(lambda: db.run(BASELINE), args.repeat)
            library = timed(lambda: patterns.failure_classes(db, run_id), args.repeat)
            first_command: list[float] = []
            command = timed(lambda: cli_patterns(run_id), args.repeat, first_command)
            with tempfile.TemporaryDirectory() as out:
                report = timed(lambda: make_report(db, run_id, Path(out)), args.repeat)
        finally:
            for trace_id in ids:
                delete_trace(db, trace_id)
    result = {
        "traces": args.traces,
        "attributed_failed_cases": attributed,
        "classes": len(classes),
        "seed_seconds": round(seed_seconds, 1),
        "load_average": os.getloadavg()[0],
        "baseline_count_s": baseline,
        "failure_classes_s": library,
        "patterns_command_s": command,
        "first_failure_classes_s": first_library,
        "first_patterns_command_s": first_command[0],
        "report_s": report,
        "ratio_failure_classes": library / baseline,
        "ratio_patterns_command": command / baseline,
        "ratio_report": report / baseline,
    }
    print(json.dumps(result, indent=2))
    print(
        f"\n| measure | median s | ratio to count(a) |\n|---|---|---|\n"
        f"| `MATCH (a:Attribution) RETURN count(a)` | {baseline:.4f} | 1 |\n"
        f"| `failure_classes` (library) | {library:.3f} | {library / baseline:.0f} |\n"
        f"| `memtrace patterns --format json` (process) | {command:.3f} | "
        f"{command / baseline:.0f} |\n"
        f"| `make_report` | {report:.3f} | {report / baseline:.0f} |\n"
        f"| first `failure_classes` after seeding (cold plans) | {first_library:.3f} | - |\n"
        f"| first `memtrace patterns` process after that | {first_command[0]:.3f} | - |\n"
        f"\n{attributed} attributed failed cases in {args.traces} traces, {len(classes)} "
        f"classes; load average {result['load_average']:.1f}"
    )


if __name__ == "__main__":
    main()
