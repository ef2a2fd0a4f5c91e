"""Export a labelled native trace as a smartcomment / MemTraceBench graph file.

smartcomment has no reads/writes lists: an operation is the set of its edges. Explicit edges
are kept; every read that is no edge source gets an edge to the operation's first output, and
every output that is no edge target an edge from its first input, so the loader recovers the
same reads and writes. Labels become ``data.annotations``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memtrace.loaders.models import inline_edge_id


def _ts(iso: str) -> str:
    """``2026-01-01T00:00:00.001Z`` -> ``2026-01-01 00:00:00.001`` (smartcomment's form)."""
    return iso.replace("T", " ").removesuffix("Z")


def to_smartcomment(path: Path) -> str:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    trace, body = records[0], records[1:]
    common = {"graph_id": trace["id"], "user_id": trace["id"], "project_id": trace.get("system")}
    of = {kind: [r for r in body if r["type"] == kind] for kind in ("variable", "operation")}
    values = {v["id"]: v for v in of["variable"]}
    explicit: dict[str, list[dict[str, Any]]] = {}
    for e in (r for r in body if r["type"] == "edge"):
        explicit.setdefault(e["op"], []).append(e)
    for op in of["operation"]:  # format 2: edges inline in their operation
        explicit.setdefault(op["id"], []).extend(
            {"id": inline_edge_id(op["id"], n), "source": source, "target": target}
            for n, (source, target) in enumerate(op.get("edges", ()), start=1)
        )
    edges: list[dict[str, Any]] = []
    for op in of["operation"]:
        pairs = [(e["source"], e["target"], e["id"]) for e in explicit.get(op["id"], [])]
        sources, targets = {p[0] for p in pairs}, {p[1] for p in pairs}
        reads, writes = op.get("reads", []), op.get("writes", [])
        for var in reads:
            if var not in sources and var not in targets and writes:
                pairs.append((var, writes[0], ""))
        for var in writes:
            if var not in targets and reads:
                pairs.append((reads[0], var, ""))
        for n, (source, target, edge_id) in enumerate(pairs):
            edges.append(
                {
                    "edge_id": edge_id or f"edge-{op['id']}-{n}",
                    "op_id": op["id"],
                    "category": None,
                    "source_full_node_id": source,
                    "target_full_node_id": target,
                    "created_at": _ts(op["created_at"]),
                    **common,
                }
            )
    annotations = []
    for case in (r for r in body if r["type"] == "case"):
        for lab in case.get("labels", []):
            meta = lab.get("metadata", {})
            annotations.append(
                {
                    "query_id": case["query"],
                    "query": values[case["query"]].get("value"),
                    "golden_answers": case.get("golden_answers", []),
                    "prediction": values.get(case.get("prediction", ""), {}).get("value"),
                    "prediction_id": case.get("prediction"),
                    "source_evidence_ids": case.get("evidence", []),
                    "final_error_type": lab["error_type"],
                    "final_op_id": lab["op_id"],
                    "reason": lab.get("reason"),
                    "label_source": lab.get("source"),
                    "question_type": case.get("category"),
                    **({"injected_fault": meta} if lab.get("source") == "injected" else {}),
                }
            )
    graph = {
        **common,
        "storage_path": None,
        "strict": True,
        "driver_type": "memory",
        "created_at": _ts(trace.get("created_at", "")),
        "metadata": {**trace.get("metadata", {}), "memtracebench_dataset_source": "LoCoMo"},
        "data": {
            "nodes": [
                {
                    "full_node_id": v["id"],
                    "name": v["name"],
                    "version": v.get("version", 1),
                    "value": v.get("value"),
                    "comment": None,
                    "category": v.get("category"),
                    "class_name": v.get("class_name"),
                    "session_id": v.get("session"),
                    "created_at": _ts(v["created_at"]),
                    "metadata": v.get("metadata", {}),
                    **common,
                }
                for v in of["variable"]
            ],
            "edges": edges,
            "operations": [
                {
                    "op_id": op["id"],
                    "op_name": op["name"],
                    "comment": None,
                    "category": op.get("category"),
                    "session_id": op.get("session"),
                    "created_at": _ts(op["created_at"]),
                    "metadata": op.get("metadata", {}),
                    **common,
                }
                for op in of["operation"]
            ],
            "sessions": [
                {
                    "session_id": s["id"],
                    "session_name": s.get("name"),
                    "category": s.get("category"),
                    "created_at": _ts(s["created_at"]) if s.get("created_at") else None,
                    "metadata": s.get("metadata", {}),
                    **common,
                }
                for s in body
                if s["type"] == "session"
            ],
            "annotations": annotations,
        },
    }
    return json.dumps(graph, ensure_ascii=False, separators=(",", ":"))
