"""Tracing overhead of the offline mem0 system: tracing on vs off, and the disabled API's cost.

    .venv/bin/python benchmarks/tracing_overhead.py [--data PATH] [--conversations 1,2] [--repeat 5]

Three CPU timings of the same run (median of --repeat, interleaved so noise hits all):
  stripped - the tracing calls replaced by bare no-op functions (no tracing code at all),
  off      - the real tracing API with no active tracer (what users pay when tracing is off),
  on       - traced into a native JSONL file (wall clock, buffered writer, fsync on close).
The overheads are the median of the per-repeat ratios (on/off and off/stripped of the same
repeat), which other load on the machine disturbs less than a ratio of medians; the load
average is printed with them. Plus a micro-benchmark of one @operation-decorated call with
tracing off vs the plain function.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memtrace.systems import base, mem0, params
from memtrace.systems.locomo import SAMPLE_PATH, Subset, load_locomo
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.runner import run_conversation
from memtrace.tracing import OFF, Registered, operation

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
API = ("operation", "session", "variable", "read", "edge", "mutation", "delete", "case")


def _noop(*args: Any, **kwargs: Any) -> Any:
    return OFF


@contextlib.contextmanager
def _null_context(*args: Any, **kwargs: Any) -> Iterator[None]:
    yield None


@contextlib.contextmanager
def stripped() -> Iterator[None]:
    """Replace the tracing names the systems imported with bare no-ops."""
    saved: list[tuple[Any, str, Any]] = []
    for module in (base, mem0, params):
        for name in API:
            if hasattr(module, name):
                saved.append((module, name, getattr(module, name)))
                fake = _null_context if name in ("operation", "session") else _noop
                setattr(module, name, fake)
    for method in ("get", "read"):  # prompts and parameters registered once per trace
        saved.append((Registered, method, getattr(Registered, method)))
        setattr(Registered, method, _noop)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def timed(run: Callable[[], None]) -> float:
    """CPU seconds of this process (user + system): steadier than wall time on a shared box."""
    started = time.process_time()
    run()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=LOCOMO if LOCOMO.exists() else SAMPLE_PATH)
    parser.add_argument("--conversations", default="1,2")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    convs = load_locomo(args.data, Subset(conversations=tuple(args.conversations.split(","))))
    out = Path(tempfile.mkdtemp(prefix="memtrace-overhead-"))

    def run(traced: bool) -> None:
        for conv in convs:
            run_conversation(Mem0System(OfflineBackend()), conv, out if traced else None)

    def run_stripped() -> None:
        with stripped():
            run(False)

    times: dict[str, list[float]] = {"stripped": [], "off": [], "on": []}
    load_before = os.getloadavg()
    run(False)  # warm caches and imports
    for _ in range(args.repeat):
        times["stripped"].append(timed(run_stripped))
        times["off"].append(timed(lambda: run(False)))
        times["on"].append(timed(lambda: run(True)))
    load_after = os.getloadavg()
    median = {k: statistics.median(v) for k, v in times.items()}
    on_ratios = [on / off for on, off in zip(times["on"], times["off"], strict=True)]
    off_ratios = [off / bare for off, bare in zip(times["off"], times["stripped"], strict=True)]
    trace_bytes = sum(p.stat().st_size for p in out.glob("*.jsonl"))
    records = sum(len(p.read_text().splitlines()) for p in out.glob("*.jsonl"))

    def plain(x: int) -> int:
        return x + 1

    decorated = operation("memory_system.extract_facts")(plain)
    calls = 1_000_000
    plain_ns = min(timeit.repeat(lambda: plain(1), number=calls, repeat=5)) / calls * 1e9
    decorated_ns = min(timeit.repeat(lambda: decorated(1), number=calls, repeat=5)) / calls * 1e9
    result = {
        "data": str(args.data.name),
        "conversations": [c.number for c in convs],
        "questions": sum(len(c.questions) for c in convs),
        "trace_records": records,
        "trace_mb": round(trace_bytes / 1e6, 2),
        "median_seconds": {k: round(v, 3) for k, v in median.items()},
        "tracing_on_overhead_pct": round(100 * (statistics.median(on_ratios) - 1), 1),
        "tracing_off_overhead_pct": round(100 * (statistics.median(off_ratios) - 1), 1),
        "on_overhead_pct_per_repeat": sorted(round(100 * (r - 1), 1) for r in on_ratios),
        "load_average_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "decorator_off_ns_per_call": round(decorated_ns - plain_ns, 1),
        "records_per_second_on": round(records / median["on"]),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
