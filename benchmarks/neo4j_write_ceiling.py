"""Neo4j's own write ceiling on this machine: how fast can any loader write a trace's elements?

    .venv/bin/python benchmarks/neo4j_write_ceiling.py [--nodes 100000] [--batch 10000] [--repeat 3]

Starts a private managed server (temporary MEMTRACE_HOME, free ports, no auth) with a benchmark
procedure compiled from benchmarks/neo4j_ceiling/Bulk.java (javac against the server's jars),
then writes the same rows, in transactions of --batch rows, in four ways, interleaved --repeat
times so that other load on the machine hits all of them:

  cypher rows     UNWIND $rows CREATE (n:Label) SET n = row   (what memtrace-load does)
  core API rows   CALL memtrace_bench.create_nodes(label, $rows): Java core API, no Cypher
  cypher range    UNWIND range(...) CREATE ... (no client data at all: the server alone)
  no index        cypher rows on a label without constraint or index

and relationships between those nodes by element id (Cypher MATCH ... WHERE elementId() vs the
core API's getNodeByElementId). Node labels carry the loader's schema: a unique constraint on
(trace_id, id) plus an index on name. The trace ceiling combines the node and relationship rates
in a trace's mix (--node-share, 0.35 for the synthetic Mem0-shaped traces).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j

from memtrace.server import manager
from memtrace.server.config import MemoryPlan, ServerOptions
from memtrace.server.layout import ServerLayout

JAVA_SOURCE = Path(__file__).resolve().parent / "neo4j_ceiling" / "Bulk.java"
INDEXED, PLAIN = "CeilingIndexed", "CeilingPlain"

CREATE_ROWS = "UNWIND $rows AS row CREATE (n:{label}) SET n = row"
CREATE_RANGE = (
    "UNWIND range($first, $last) AS i CREATE (:{label} {{trace_id: 'bench', id: 'var-' + "
    "toString(i), name: 'memory_' + toString(i % 100), version: 1, category: 'memory', value: "
    "'the text of memory number ' + toString(i), created_at: '2026-01-01T00:00:00Z', seq: i}})"
)
CORE_NODES = "CALL memtrace_bench.create_nodes($label, $rows) YIELD count RETURN count"
CYPHER_RELS = (
    "UNWIND $pairs AS pair MATCH (a) WHERE elementId(a) = pair[0] "
    "MATCH (b) WHERE elementId(b) = pair[1] CREATE (a)-[:CEILING_REL {op_id: 'op'}]->(b)"
)
CORE_RELS = (
    "CALL memtrace_bench.create_relationships('CEILING_REL', $pairs) YIELD count RETURN count"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_plugin(layout: ServerLayout) -> None:
    """Compile the benchmark procedure against the installed server's jars into its plugins."""
    classes = layout.root / "bench-classes"
    classes.mkdir(parents=True, exist_ok=True)
    classpath = os.pathsep.join(str(jar) for jar in layout.lib.glob("*.jar"))
    subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(JAVA_SOURCE)], check=True)
    layout.plugins.mkdir(parents=True, exist_ok=True)
    jar = layout.plugins / "memtrace-bench.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)


def rows(count: int) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": "bench",
            "id": f"var-{i}",
            "name": f"memory_{i % 100}",
            "version": 1,
            "category": "memory",
            "value": f"the text of memory number {i}",
            "created_at": "2026-01-01T00:00:00Z",
            "seq": i,
        }
        for i in range(count)
    ]


class Bench:
    def __init__(self, driver: neo4j.Driver, batch: int) -> None:
        self.driver = driver
        self.batch = batch

    def run(self, query: str, **params: Any) -> list[Any]:
        records, _, _ = self.driver.execute_query(query, parameters_=params)
        return records

    def batched(self, query: str) -> None:
        """A ``CALL {...} IN TRANSACTIONS`` query: needs an auto-commit transaction."""
        with self.driver.session() as session:
            session.run(query).consume()

    def clear(self, label: str) -> None:
        self.batched(f"MATCH (n:{label}) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS")

    def per_second(self, count: int, write: Callable[[int, int], None]) -> float:
        started = time.perf_counter()
        for first in range(0, count, self.batch):
            write(first, min(first + self.batch, count))
        return count / (time.perf_counter() - started)

    def nodes(self, way: str, data: list[dict[str, Any]]) -> float:
        label = PLAIN if way == "no index" else INDEXED
        self.clear(label)

        def write(first: int, end: int) -> None:
            if way == "core API rows":
                self.run(CORE_NODES, label=label, rows=data[first:end])
            elif way == "cypher range":
                self.run(CREATE_RANGE.format(label=label), first=first, last=end - 1)
            else:
                self.run(CREATE_ROWS.format(label=label), rows=data[first:end])

        return self.per_second(len(data), write)

    def relationships(self, way: str) -> float:
        self.batched("MATCH ()-[r:CEILING_REL]->() CALL (r) { DELETE r } IN TRANSACTIONS")
        ids = [r[0] for r in self.run(f"MATCH (n:{INDEXED}) RETURN elementId(n) ORDER BY n.seq")]
        pairs = [[ids[i], ids[(i * 7 + 1) % len(ids)]] for i in range(len(ids))]
        query = CORE_RELS if way == "core API" else CYPHER_RELS

        def write(first: int, end: int) -> None:
            self.run(query, pairs=pairs[first:end])

        return self.per_second(len(pairs), write)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--node-share", type=float, default=0.35)
    parser.add_argument("--memory", default="3g", help="heap and page cache each, e.g. 3g")
    args = parser.parse_args()

    size = int(args.memory.rstrip("g")) << 30
    with tempfile.TemporaryDirectory(prefix="memtrace-ceiling-") as tmp:
        layout = ServerLayout(Path(tmp))
        manager.install(layout)
        build_plugin(layout)
        options = ServerOptions(
            bolt_port=free_port(),
            http_port=free_port(),
            auth=False,
            memory=MemoryPlan(heap_bytes=size, pagecache_bytes=size),
        )
        manager.start(layout, options)
        try:
            uri = f"bolt://127.0.0.1:{options.bolt_port}"
            with neo4j.GraphDatabase.driver(uri, auth=None) as driver:
                measure(Bench(driver, args.batch), args)
        finally:
            manager.stop(layout)


def measure(bench: Bench, args: argparse.Namespace) -> None:
    bench.run(
        f"CREATE CONSTRAINT ceiling_id IF NOT EXISTS FOR (n:{INDEXED}) "
        "REQUIRE (n.trace_id, n.id) IS UNIQUE"
    )
    bench.run(f"CREATE INDEX ceiling_name IF NOT EXISTS FOR (n:{INDEXED}) ON (n.name)")
    bench.run("CALL db.awaitIndexes()")
    data = rows(args.nodes)
    node_ways = ["cypher rows", "core API rows", "cypher range", "no index"]
    rel_ways = ["cypher", "core API"]
    rates: dict[str, list[float]] = {}
    bench.nodes("cypher rows", data)  # warm-up: query compilation, JIT
    for repeat in range(args.repeat):
        load = os.getloadavg()[0]
        for way in node_ways:
            rates.setdefault(f"nodes: {way}", []).append(bench.nodes(way, data))
        bench.nodes("cypher rows", data)  # the relationships connect these
        for way in rel_ways:
            rates.setdefault(f"relationships: {way}", []).append(bench.relationships(way))
        print(f"repeat {repeat + 1}/{args.repeat} done, load average {load:.2f}")
    bench.clear(INDEXED)
    bench.clear(PLAIN)

    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(f"\n{args.nodes:,} nodes, batches of {args.batch:,}, median of {args.repeat}")
    print("| write | per second (median) | all repeats |\n|---|---|---|")
    for name, values in rates.items():
        spread = ", ".join(f"{v:,.0f}" for v in values)
        print(f"| {name} | {medians[name]:,.0f} | {spread} |")
    share = args.node_share
    for way, rel_way in (("cypher rows", "cypher"), ("core API rows", "core API")):
        node_rate, rel_rate = medians[f"nodes: {way}"], medians[f"relationships: {rel_way}"]
        ceiling = 1 / (share / node_rate + (1 - share) / rel_rate)
        print(f"trace ceiling via {rel_way} ({share:.0%} nodes): {ceiling:,.0f} elements/s")
    core_vs_cypher = medians["nodes: core API rows"] / medians["nodes: cypher rows"]
    print(f"core API / Cypher, indexed nodes: {core_vs_cypher:.2f}x")


if __name__ == "__main__":
    main()
