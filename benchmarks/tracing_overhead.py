"""Tracing overhead of an offline reference system: tracing on vs off, and the disabled API's cost.

    .venv/bin/python benchmarks/tracing_overhead.py [--system mem0|evermemos] [--data PATH] \
        [--conversations 1,2] [--repeat 5]

Three timings of the same run, wall clock and CPU (user + system of this process and of any
child process, e.g. the trace writer), --repeat times, interleaved so noise hits all:
  stripped - the tracing calls replaced by bare no-op functions (no tracing code at all),
  off      - the real tracing API with no active tracer (what users pay when tracing is off),
  on       - traced into a native JSONL file (wall-clock timestamps); the fsync that follows
             the close in the writer's thread is waited for between runs, untimed, and its
             median wait is printed.
The overheads are the median of the per-repeat ratios (on/off and off/stripped of the same
repeat; the goal is judged on wall clock), which other load on the machine disturbs less than a
ratio of medians; the load average is printed with them. Plus a micro-benchmark of one
@operation-decorated call with tracing off vs the plain function.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from memtrace.systems import base, evermemos, mem0, params
from memtrace.systems.base import System
from memtrace.systems.evermemos import EverMemOSSystem
from memtrace.systems.locomo import SAMPLE_PATH, Subset, load_locomo
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.runner import run_conversation
from memtrace.tracing import OFF, Registered, operation, wait_synced

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
# the tracing names a system module may import
API: tuple[str, ...] = ("operation", "session", "variable", "read", "write", "edge", "edges")
API += ("mutation", "delete", "case")
# system -> (its class, the module whose imported tracing names `stripped` replaces)
SYSTEMS: dict[str, tuple[type[System], ModuleType]] = {
    "mem0": (Mem0System, mem0),
    "evermemos": (EverMemOSSystem, evermemos),
}


def _noop(*args: Any, **kwargs: Any) -> Any:
    return OFF


@contextlib.contextmanager
def _null_context(*args: Any, **kwargs: Any) -> Iterator[None]:
    yield None


@contextlib.contextmanager
def stripped(system: ModuleType) -> Iterator[None]:
    """Replace the tracing names the system's modules imported with bare no-ops."""
    saved: list[tuple[Any, str, Any]] = []
    for module in (base, system, params):
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


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its waited-for children (a writer
    process counts once it has exited, which happens when its trace is closed)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(run: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, CPU seconds including child processes) of one run."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    run()
    return time.perf_counter() - wall, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=LOCOMO if LOCOMO.exists() else SAMPLE_PATH)
    parser.add_argument("--conversations", default="1,2")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--system", choices=sorted(SYSTEMS), default="mem0")
    args = parser.parse_args()
    system_class, system_module = SYSTEMS[args.system]
    convs = load_locomo(args.data, Subset(conversations=tuple(args.conversations.split(","))))
    out = Path(tempfile.mkdtemp(prefix="memtrace-overhead-"))

    def run(traced: bool) -> None:
        for conv in convs:
            run_conversation(system_class(OfflineBackend()), conv, out if traced else None)

    def run_stripped() -> None:
        with stripped(system_module):
            run(False)

    runs = {"stripped": run_stripped, "off": lambda: run(False), "on": lambda: run(True)}
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    load_before = os.getloadavg()
    run(False)  # warm caches and imports
    run(True)
    sync_wait: list[float] = []
    for _ in range(args.repeat):
        for name, one in runs.items():
            seconds, cpu_s = timed(one)
            wall[name].append(seconds)
            cpu[name].append(cpu_s)
            # the traced run's files are fsynced after close by the writer threads: wait here,
            # untimed, so that no fsync overlaps the next run
            started = time.perf_counter()
            wait_synced()
            if name == "on":
                sync_wait.append(time.perf_counter() - started)
    load_after = os.getloadavg()

    def overhead(times: dict[str, list[float]], a: str, b: str) -> float:
        """Median over repeats of a/b - 1, in percent."""
        ratios = [x / y for x, y in zip(times[a], times[b], strict=True)]
        return round(100 * (statistics.median(ratios) - 1), 1)

    trace_bytes = sum(p.stat().st_size for p in out.glob("*.jsonl"))
    records = sum(len(p.read_text().splitlines()) for p in out.glob("*.jsonl"))

    def plain(x: int) -> int:
        return x + 1

    decorated = operation("memory_system.extract_facts")(plain)
    calls = 1_000_000
    plain_ns = min(timeit.repeat(lambda: plain(1), number=calls, repeat=5)) / calls * 1e9
    decorated_ns = min(timeit.repeat(lambda: decorated(1), number=calls, repeat=5)) / calls * 1e9
    result = {
        "system": args.system,
        "data": str(args.data.name),
        "conversations": [c.number for c in convs],
        "questions": sum(len(c.questions) for c in convs),
        "trace_lines": records,
        "trace_mb": round(trace_bytes / 1e6, 2),
        "median_wall_seconds": {k: round(statistics.median(v), 3) for k, v in wall.items()},
        "median_cpu_seconds": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
        "on_over_off_wall_pct": overhead(wall, "on", "off"),
        "on_over_off_cpu_pct": overhead(cpu, "on", "off"),
        "off_over_stripped_wall_pct": overhead(wall, "off", "stripped"),
        "off_over_stripped_cpu_pct": overhead(cpu, "off", "stripped"),
        "on_over_off_wall_pct_per_repeat": sorted(
            round(100 * (x / y - 1), 1) for x, y in zip(wall["on"], wall["off"], strict=True)
        ),
        "fsync_wait_after_on_seconds_median": round(statistics.median(sync_wait), 3),
        "load_average_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        "decorator_off_ns_per_call": round(decorated_ns - plain_ns, 1),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
