"""Re-load of a complete trace: the swap transaction's time and server memory, against the load.

    .venv/bin/python benchmarks/reload_swap.py --messages 5400 54000

(5,400 messages make about 100k elements, 54,000 about 1M.) For each size a synthetic trace is
loaded (the baseline: the first load's seconds), then re-loaded twice: once with the default
`atomic_swap_nodes` and once forcing the one-transaction swap (`--force-atomic`, any size). The
swap step is timed around the loader's own swap function, and the server's estimate of the swap
transaction's heap (`SHOW TRANSACTIONS ... estimatedUsedHeapMemory`) is polled every 50 ms from
a second connection. A forced swap that the server refuses for its transaction memory falls back
to the batched swap, and the row says so. Counts are checked exact after every re-load.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synthetic import write_synthetic_trace

import memtrace.loaders.load as loader
from memtrace.admin import delete_trace
from memtrace.db import Database, connect
from memtrace.errors import TransactionTooLargeError
from memtrace.loaders.load import ATOMIC_SWAP_NODES, LoadOptions, load_paths
from memtrace.settings import load_settings

SWAP_HEAP = (
    "SHOW TRANSACTIONS YIELD estimatedUsedHeapMemory, currentQuery "
    "WHERE currentQuery CONTAINS 'SET n.trace_id' OR currentQuery CONTAINS 'new.load_state' "
    "RETURN max(estimatedUsedHeapMemory) AS heap"
)
VARIABLES = "MATCH (v:Variable {trace_id: $t}) RETURN count(v) AS n"


class SwapTimer:
    """Wraps the loader's swap steps to time them and poll the server's transaction memory."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.seconds = 0.0
        self.peak_heap = 0
        self.path = ""

    def wrap(self, name: str, function: Callable[..., None]) -> Callable[..., None]:
        def timed(*args: Any, **kwargs: Any) -> None:
            stop = threading.Event()
            poller = threading.Thread(target=self._poll, args=(stop,))
            poller.start()
            started = time.perf_counter()
            try:
                function(*args, **kwargs)
                self.path += name
            except TransactionTooLargeError:
                self.path = f"{name} refused by the server's transaction memory, then "
                raise
            finally:
                self.seconds += time.perf_counter() - started
                stop.set()
                poller.join()

        return timed

    def _poll(self, stop: threading.Event) -> None:
        while not stop.is_set():
            heap = self.db.run(SWAP_HEAP)[0]["heap"]
            self.peak_heap = max(self.peak_heap, int(heap or 0))
            time.sleep(0.05)


def reload(db: Database, path: Path, trace_id: str, options: LoadOptions) -> dict[str, Any]:
    timer = SwapTimer(db)
    steps = {"swap_in_staged_copy": "one transaction", "replace_in_batches": "batches"}
    originals = {name: getattr(loader, name) for name in steps}
    for name, function in originals.items():
        setattr(loader, name, timer.wrap(steps[name], function))
    try:
        started = time.perf_counter()
        summary = load_paths(db, [str(path)], options)
        seconds = time.perf_counter() - started
    finally:
        for name, function in originals.items():
            setattr(loader, name, function)
    assert db.run(VARIABLES, t=trace_id)[0]["n"] == summary.files[0].variables
    return {
        "reload_seconds": round(seconds, 1),
        "swap": timer.path.strip(),
        "swap_seconds": round(timer.seconds, 2),
        "swap_heap_mb": round(timer.peak_heap / 1e6),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[5400])
    args = parser.parse_args()
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="memtrace-reload-") as tmp,
        connect(load_settings()) as db,
    ):
        for messages in args.messages:
            trace_id = f"bench-reload-{messages}"
            path = Path(tmp) / f"{trace_id}.jsonl"
            write_synthetic_trace(path, trace_id, messages)
            delete_trace(db, trace_id)
            started = time.perf_counter()
            summary = load_paths(db, [str(path)], LoadOptions())
            first = time.perf_counter() - started
            elements = summary.total("nodes_written") + summary.total("relationships_written")
            nodes = summary.total("nodes_written")
            for label, options in (
                (f"default ({ATOMIC_SWAP_NODES:,} nodes)", LoadOptions()),
                ("--force-atomic", LoadOptions(atomic_swap_nodes=10**12)),
            ):
                row: dict[str, Any] = {
                    "elements": elements,
                    "nodes_per_copy": nodes,
                    "atomic_swap_nodes": label,
                }
                row["first_load_seconds"] = round(first, 1)
                row.update(reload(db, path, trace_id, options))
                row["reload_over_first_load"] = round(row["reload_seconds"] / first, 2)
                print(json.dumps(row), flush=True)
                rows.append(row)
            delete_trace(db, trace_id)
    print("\n| elements | swap budget | swap | swap s | swap heap MB | re-load s | first load s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['elements']:,} | {r['atomic_swap_nodes']} | {r['swap']} | {r['swap_seconds']} "
            f"| {r['swap_heap_mb']} | {r['reload_seconds']} | {r['first_load_seconds']} |"
        )


if __name__ == "__main__":
    main()
