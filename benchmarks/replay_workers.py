"""Replay judge throughput with case workers: the natural failures of one traced run labelled
by replay (``bench natural``'s labelling step) with 1 and with N workers, on the same traces.

    nice -n 10 python benchmarks/replay_workers.py --systems mem0,evermemos --conversations 1-6

Needs the running Neo4j and LoCoMo under ../shared/data (or --data). Each system runs once,
offline, over the conversations (development data: never 7-10 here); its traces are labelled
once per worker count, in the same process, so the ratio compares like with like. Wall time is
the replay judge's own (load and re-load excluded), and so is the CPU time (all threads). Writes
traces under ids prefixed ``bench-workers-`` and deletes them afterwards. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from memtrace.admin import delete_trace
from memtrace.bench.natural import natural_labels
from memtrace.db import connect
from memtrace.settings import load_settings
from memtrace.systems.locomo import Subset, load_locomo
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
PREFIX = "bench-workers-"


def conversations(spec: str) -> tuple[str, ...]:
    first, _, last = spec.partition("-")
    numbers = range(int(first), int(last or first) + 1)
    if any(n >= 7 for n in numbers):
        raise SystemExit("conversations 7-10 are held out: not for this benchmark")
    return tuple(str(n) for n in numbers)


def measure(
    system: str, convs: list[Any], workers: list[int], folder: Path, prefix: str = PREFIX
) -> dict[str, Any]:
    paths = []
    for conv in convs:
        _, path = run_conversation(
            make_system(system, make_backend("offline")), conv, folder / "runs",
            prefix=prefix, clock=SimClock(),
        )  # fmt: skip
        assert path is not None
        paths.append(path)
    rows: dict[str, Any] = {}
    with connect(load_settings()) as db:
        try:
            for n in workers:
                report = natural_labels(db, paths, folder / f"w{n}", workers=n)
                summary = report.as_dict()
                rows[str(n)] = {
                    "failed": summary["failed"],
                    "labeled": summary["labeled"],
                    "errors": summary["errors"],
                    "replay_seconds": round(report.replay_seconds, 2),
                    "cases_per_second": round(summary["cases_per_second"], 2),
                    "cases_per_cpu_second": round(summary["cases_per_cpu_second"], 2),
                    "by_type": summary["by_type"],
                    "load_average": os.getloadavg(),
                }
        finally:
            for path in paths:
                delete_trace(db, path.stem)
    base = rows[str(workers[0])]["cases_per_second"]
    for row in rows.values():
        row["wall_ratio_to_first"] = round(row["cases_per_second"] / base, 2) if base else None
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default="mem0,evermemos")
    parser.add_argument("--conversations", default="1-6")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--prefix", default=PREFIX, help="trace id prefix (runs side by side)")
    args = parser.parse_args()
    convs = load_locomo(args.data, Subset(conversations=conversations(args.conversations)))
    workers = [int(n) for n in args.workers.split(",")]
    result: dict[str, Any] = {"load_average_start": os.getloadavg(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="memtrace-workers-") as tmp:
        for system in args.systems.split(","):
            result[system] = measure(system, convs, workers, Path(tmp) / system, args.prefix)
            print(json.dumps({system: result[system]}), flush=True)
    result["load_average_end"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
