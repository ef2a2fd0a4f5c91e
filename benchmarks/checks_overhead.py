"""What the trace checks (`memtrace check`, and every load) add to the loader's validation pass.

    memtrace run mem0 --data ../shared/data/locomo/locomo10.json --conversations 1,2,3,4 \
        --out /tmp/checks --deterministic
    .venv/bin/python benchmarks/checks_overhead.py /tmp/checks --repeat 5

The validation pass (`build_index` over the parsed records) runs with and without a
`TraceChecker` watching the records, interleaved ``--repeat`` times so that the machine's load
hits both alike; reported: the median CPU seconds of each, their ratio, the checks' own CPU per
record (over records already parsed) and the bytes the checker holds per record (tracemalloc).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import tracemalloc
from pathlib import Path

from memtrace.loaders.checks import TraceChecker
from memtrace.loaders.index import build_index
from memtrace.loaders.load import expand_paths
from memtrace.loaders.native import read_native


def validate(files: list[Path], check: bool) -> float:
    started = time.process_time()
    for file in files:
        records = read_native(file)
        checker = TraceChecker()
        build_index(str(file), checker.watch(records) if check else records).close()
        if check:
            checker.findings()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="native trace files or folders")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    files = expand_paths(args.paths)
    seconds: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(args.repeat):
        seconds["without"].append(validate(files, check=False))
        seconds["with"].append(validate(files, check=True))
    parsed = [[record for _, record in read_native(file)] for file in files]
    records = sum(map(len, parsed))
    started = time.process_time()
    for trace in parsed:
        checker = TraceChecker()
        for record in trace:
            checker.observe(record)
        checker.findings()
    own = time.process_time() - started
    largest = max(parsed, key=len)
    tracemalloc.start()
    checker = TraceChecker()
    for record in largest:
        checker.observe(record)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    without, with_checks = (statistics.median(seconds[key]) for key in ("without", "with"))
    print(
        json.dumps(
            {
                "files": len(files),
                "records": records,
                "validation_cpu_s": {"without": without, "with": with_checks},
                "with_over_without": round(with_checks / without, 3),
                "checks_us_per_record": round(own / records * 1e6, 2),
                "bytes_held_per_record": round(held / len(largest)),
                "per_repeat": seconds,
                "load_average": os.getloadavg()[:2],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
