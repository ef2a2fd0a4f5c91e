"""Managed Neo4j server: cold install, warm install, first and warm start, idle RSS, stop.

    .venv/bin/python benchmarks/neo4j_server.py [--starts 3] [--cold-maven]

Runs in a temporary MEMTRACE_HOME on free ports, so a server you already run is not touched.
`--cold-maven` also empties Maven's local repository for the install (a download from Maven
Central, as on a fresh machine). Baseline for the start times: the first start of the same run
(which also creates the databases); the target for a warm start is <= 20 s.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

from memtrace.server import manager
from memtrace.server.config import ServerOptions, available_memory, plan_memory
from memtrace.server.layout import ServerLayout

WARM_START_TARGET_SECONDS = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def timed_start(layout: ServerLayout, options: ServerOptions) -> tuple[float, int]:
    began = time.perf_counter()
    result = manager.start(layout, options)
    seconds = time.perf_counter() - began
    time.sleep(5)  # let start-up work settle before reading the idle RSS
    if result.already_running:
        raise SystemExit("a server was already running in the benchmark's own home")
    return seconds, manager.status(layout).rss_bytes or 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3, help="warm starts to time")
    parser.add_argument("--cold-maven", action="store_true", help="empty Maven repository")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="memtrace-bench-") as tmp:
        if args.cold_maven:
            os.environ["MAVEN_OPTS"] = f"-Dmaven.repo.local={tmp}/m2"
        layout = ServerLayout(Path(tmp))
        began = time.perf_counter()
        cold = manager.install(layout)
        cold_seconds = time.perf_counter() - began
        warm_install = manager.install(layout)
        print(f"Neo4j {cold.version}: {cold.jars} jars")
        maven = "empty Maven repository" if args.cold_maven else "warm Maven repository"
        print(f"cold install ({maven}): {cold_seconds:6.1f} s")
        print(f"second install (no-op):  {warm_install.seconds:6.2f} s")

        memory = plan_memory(available_memory())
        print(
            f"memory plan: heap {memory.heap_bytes >> 20} MiB, page cache "
            f"{memory.pagecache_bytes >> 20} MiB"
        )
        options = ServerOptions(bolt_port=free_port(), http_port=free_port(), auth=True)
        first, first_rss = timed_start(layout, options)
        manager.stop(layout)
        warm: list[float] = []
        rss: list[int] = [first_rss]
        stops: list[float] = []
        for _ in range(args.starts):
            seconds, idle_rss = timed_start(layout, options)
            warm.append(seconds)
            rss.append(idle_rss)
            began = time.perf_counter()
            manager.stop(layout)
            stops.append(time.perf_counter() - began)
        median = statistics.median(warm)
        print(f"first start (creates databases): {first:5.1f} s")
        print(
            f"warm start, median of {len(warm)}: {median:5.1f} s "
            f"(min {min(warm):.1f}, max {max(warm):.1f}); "
            f"{median / first:.2f}x the first start, "
            f"{median / WARM_START_TARGET_SECONDS:.2f}x the 20 s target"
        )
        print(f"idle RSS after start: median {statistics.median(rss) / 2**20:,.0f} MiB")
        print(f"clean stop: median {statistics.median(stops):.1f} s")


if __name__ == "__main__":
    main()
