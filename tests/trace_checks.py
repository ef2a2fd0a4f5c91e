"""Invariants every trace written by memtrace's systems must satisfy (shared by tests)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from memtrace.loaders.index import build_index
from memtrace.loaders.native import read_native


def check_trace(path: Path) -> list[dict[str, Any]]:
    """Assert the invariants; returns the records for further checks."""
    build_index(str(path), read_native(path))  # every id resolves, the loader accepts it
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    variables = {r["id"]: r for r in records if r["type"] == "variable"}
    ops = [r for r in records if r["type"] == "operation"]
    readers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for op in ops:
        for var in op["reads"]:
            readers[var].append(op)
    cases = [r for r in records if r["type"] == "case"]
    for case in cases:  # the prediction is reachable from the query through the op graph
        seen, frontier = {case["query"]}, [case["query"]]
        while frontier:
            for op in readers[frontier.pop()]:
                for out in op["writes"]:
                    if out not in seen:
                        seen.add(out)
                        frontier.append(out)
        assert case["prediction"] in seen, f"{case['id']}: prediction unreachable from query"
    versions: dict[tuple[str | None, str], list[tuple[int, int]]] = defaultdict(list)
    for var in variables.values():  # versions grow with execution order
        versions[(var.get("class_name"), var["name"])].append((var["seq"], var["version"]))
    for key, seq_versions in versions.items():
        ordered = [v for _, v in sorted(seq_versions)]
        assert ordered == sorted(set(ordered)), f"{key}: versions not monotonic: {ordered}"
    return records
