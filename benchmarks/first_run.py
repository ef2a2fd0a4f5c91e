"""The first load and the first attribute on a freshly started server, against the second ones
(issue 40: 18.6 s against 4.1 s, 17.4 s against 1.2 s on a user's first run), and which queries
cost the difference.

    .venv/bin/python benchmarks/first_run.py [--traces 8] [--no-warm-up] [--json out.json]

Starts a private managed server (benchmarks/private_server.py: a temporary home, free ports),
runs the start's warm-up as `memtrace neo4j start` does (unless --no-warm-up), then, in this
process, loads trace A and attributes it (the first load and attribute), then trace B (the
second ones: the same sizes, other ids). The traces are PAMem runs (tests/pamem_system.py, a
small system of the tests' own), ``--traces`` of them per load. Every query is timed where
``Database`` sends it; the output names the queries whose first run cost most over their
second. Goal: first within 2 s of second, for load and for attribute.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pamem_system  # noqa: E402
from private_server import start_private_server  # noqa: E402

from memtrace import db as db_module  # noqa: E402
from memtrace import patterns  # noqa: E402
from memtrace.attribution.pipeline import Options, run_attribution  # noqa: E402
from memtrace.attribution.registry import make_judge  # noqa: E402
from memtrace.attribution.store import AttributionStore  # noqa: E402
from memtrace.cli.neo4j import warm_first_run  # noqa: E402
from memtrace.loaders.load import LoadOptions, load_paths  # noqa: E402
from memtrace.server import manager  # noqa: E402

SETTINGS: list[Any] = []  # the private server's settings, once started
Timings = dict[str, list[float]]  # query header line -> seconds of each run


@contextmanager
def timed_queries() -> Iterator[Timings]:
    """Every query ``Database.run`` / ``write_batch`` / ``write_together`` sends, timed."""
    timings: Timings = defaultdict(list)
    originals = {
        name: getattr(db_module.Database, name) for name in ("run", "write_batch", "write_together")
    }

    def wrap(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(self: db_module.Database, query: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(self, query, *args, **kwargs)
            finally:
                text = str(getattr(query, "text", query)) if name != "write_together" else ""
                label = text.strip().splitlines()[0][:90] if text.strip() else name
                timings[label].append(time.perf_counter() - started)

        return timed

    for name, method in originals.items():
        setattr(db_module.Database, name, wrap(name, method))
    try:
        yield timings
    finally:
        for name, method in originals.items():
            setattr(db_module.Database, name, method)


def write_traces(folder: Path, prefix: str, count: int) -> list[str]:
    paths = []
    for n in range(count):
        path = folder / f"{prefix}-{n}.jsonl"
        pamem_system.write_trace(path, f"{prefix}-{n}")
        paths.append(str(path))
    return paths


def step(db: db_module.Database, paths: list[str], timings: Timings) -> dict[str, float]:
    """Load ``paths`` and attribute their failed cases offline; the seconds of each."""
    started = time.perf_counter()
    load_paths(db, paths, LoadOptions())
    loaded = time.perf_counter() - started
    store = AttributionStore(db)
    judge = make_judge("offline", SETTINGS[0])
    started = time.perf_counter()
    for path in paths:
        run_attribution(store, judge, Options(), trace_id=Path(path).stem, write=True)
    return {"load_s": loaded, "attribute_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=8)
    parser.add_argument("--no-warm-up", action="store_true")
    parser.add_argument("--memory", type=int, default=512 * 2**20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memtrace-first-run-") as tmp:
        folder = Path(tmp)
        first_paths = write_traces(folder, "first", args.traces)
        second_paths = write_traces(folder, "second", args.traces)
        server = start_private_server(folder / "home", args.memory)
        SETTINGS.append(server.settings)
        try:
            with db_module.connect(server.settings) as db:
                warm = 0.0
                if not args.no_warm_up:
                    started = time.perf_counter()
                    patterns.warm_up(db)  # what `memtrace neo4j start` runs
                    warm_first_run(db, server.settings)
                    warm = time.perf_counter() - started
                with timed_queries() as timings:
                    first = step(db, first_paths, timings)
                    firsts = {q: t[0] for q, t in timings.items()}
                    counts = {q: len(t) for q, t in timings.items()}
                    second = step(db, second_paths, timings)
        finally:
            manager.stop(server.layout)
    costs = sorted(
        (
            (firsts[q] - sum(t[counts[q] :]) / max(1, len(t) - counts[q]), q)
            for q, t in timings.items()
            if q in firsts and len(t) > counts[q]
        ),
        reverse=True,
    )
    report = {
        "traces_per_step": args.traces,
        "warm_up_s": warm,
        "first": first,
        "second": second,
        "load_gap_s": first["load_s"] - second["load_s"],
        "attribute_gap_s": first["attribute_s"] - second["attribute_s"],
        "costliest_first_runs": [{"query": q, "extra_s": round(c, 3)} for c, q in costs[:8]],
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
