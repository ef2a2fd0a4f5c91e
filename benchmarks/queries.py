"""Cypher queries only benchmarks (and their tests) run: ``benchmarks/cypher/*.cypher``.

Same one-query-per-file layout and checked header as ``memtrace/cypher``; they live here
because no memtrace command uses them (e.g. the backward-reachability variants that
``attribution.py`` times against the candidate query).
"""

from __future__ import annotations

from pathlib import Path

from memtrace.cypher import Query, parse_query

CYPHER_DIR = Path(__file__).resolve().parent / "cypher"


def benchmark_query(name: str) -> Query:
    return parse_query(name, (CYPHER_DIR / f"{name}.cypher").read_text(encoding="utf-8"))


def all_benchmark_queries() -> list[Query]:
    return [benchmark_query(path.stem) for path in sorted(CYPHER_DIR.glob("*.cypher"))]
