"""A small hand-built attributed graph whose failure patterns are known by hand.

Two traces loaded through the real loader: ``<scope>-mem0`` (system mem0, four failed questions)
and ``<scope>-rag`` (system rag, two). Two attribution runs over them:

run ``<scope>-r1``                         run ``<scope>-r2``
- mem0 q1, q2 -> extract ex1 (Extraction)   - q1 -> ex1 (Extraction)
- mem0 q3 -> update up1 (Update; reads no   - q2 -> qa2 (Response)
  prompt or parameter)                      - q3, q4 -> up1 (Update)
  (labels: q1 ex1 Extraction, q3 s3 Update)
- mem0 q4 -> attribution failed             - rag b1 -> attribution failed
- rag b1, b2 -> search s1, s2 (Retrieval)   (rag b2 not attributed)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtrace.admin import delete_trace
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths


@dataclass(frozen=True)
class Seed:
    scope: str
    mem0: str
    rag: str
    run1: str
    run2: str

    @property
    def traces(self) -> tuple[str, str]:
        return (self.mem0, self.rag)


def _at(second: int) -> str:
    return f"2024-05-01T10:{second // 60:02d}:{second % 60:02d}Z"


class _Trace:
    def __init__(self, trace_id: str, system: str) -> None:
        self.records: list[dict[str, Any]] = [
            {"type": "trace", "format_version": 2, "id": trace_id, "system": system},
            {"type": "session", "id": "build", "name": "memory_construction"},
            {"type": "session", "id": "ask", "name": "memory_search"},
        ]
        self.clock = 0

    def var(self, vid: str, category: str, value: str, **extra: Any) -> str:
        self.clock += 1
        name, _, version = vid.partition("@")
        record = {"type": "variable", "id": vid, "name": name, "version": int(version or 1)}
        record |= {"category": category, "value": value, "created_at": _at(self.clock)}
        self.records.append(record | extra)
        return vid

    def op(self, oid: str, name: str, reads: list[str], writes: list[str], **extra: Any) -> None:
        self.clock += 1
        self.records.append(
            {"type": "operation", "id": oid, "name": name, "created_at": _at(self.clock)}
            | {"reads": reads, "writes": writes}
            | extra
        )

    def case(
        self,
        cid: str,
        query: str,
        prediction: str,
        category: str,
        evidence: list[str],
        labels: list[dict[str, str]] | None = None,
    ) -> None:
        self.records.append(
            {"type": "case", "id": cid, "query": query, "prediction": prediction}
            | {"golden_answers": ["7 May"], "judge_score": 0.0, "category": category}
            | {"evidence": evidence, "labels": labels or []}
        )

    def write(self, path: Path) -> None:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")


# q1's label agrees with run 1 (op and type); q3's names another op of the same type
LABELS = {
    "q1": [{"op_id": "ex1", "error_type": "ExtractionError"}],
    "q3": [{"op_id": "s3", "error_type": "UpdateError"}],
}


def _mem0(trace_id: str) -> _Trace:
    t = _Trace(trace_id, "mem0")
    extract = t.var("extract-prompt@1", "prompt", "Extract facts.", session="build")
    qa = t.var("qa-prompt@1", "prompt", "Answer.", session="build")
    top_k = t.var("top_k@1", "parameter", "10", class_name="parameter", session="build")
    m1 = t.var("m1@1", "message", "Caroline: support group on 7 May.", session="build")
    m2 = t.var("m2@1", "message", "Melanie: painted a lake.", session="build")
    t.op("ex1", "memory_system.extract_facts", [m1, extract], ["f1@1"], session="build")
    t.var("f1@1", "llm_response", "support group", session="build")
    t.op("ex2", "memory_system.extract_facts", [m2, extract], ["f2@1"], session="build")
    t.var("f2@1", "llm_response", "painted a lake", session="build")
    t.op("add1", "memory_system.add_to_vector_store", ["f1@1", "f2@1"], ["mem@1"], session="build")
    t.var("mem@1", "memory_entry", "support group; lake", session="build")
    t.op("up1", "memory_system.update_memory_decision", ["mem@1"], ["mem@2"], session="build")
    t.var("mem@2", "memory_entry", "lake", session="build")
    categories = {"q1": "single-hop", "q2": "single-hop", "q3": "temporal", "q4": "multi-hop"}
    for n, (cid, category) in enumerate(categories.items(), start=1):
        query = t.var(f"query-{cid}@1", "message & query", f"Question {cid}?", class_name="query")
        t.op(f"s{n}", "memory_system.search_vector_store", [query, "mem@2", top_k], [f"ctx{n}@1"])
        t.var(f"ctx{n}@1", "context", "lake")
        t.op(f"qa{n}", "question-answering", [query, f"ctx{n}@1", qa], [f"pred-{cid}@1"])
        pred = t.var(f"pred-{cid}@1", "llm_response", "I don't know", class_name="prediction")
        t.case(cid, query, pred, category, [m1] if n != 4 else [m1, m2], LABELS.get(cid))
    return t


def _rag(trace_id: str) -> _Trace:
    t = _Trace(trace_id, "rag")
    top_k = t.var("top_k@1", "parameter", "5", class_name="parameter", session="build")
    m1 = t.var("m1@1", "message", "Caroline: support group on 7 May.", session="build")
    t.op("idx", "memory_system.add", [m1], ["chunk@1"], session="build")
    t.var("chunk@1", "chunk", "support group on 7 May", session="build")
    for n, cid in enumerate(("b1", "b2"), start=1):
        query = t.var(f"query-{cid}@1", "message & query", f"Question {cid}?", class_name="query")
        t.op(f"s{n}", "memory_system.search_vector_store", [query, "chunk@1", top_k], [f"ctx{n}@1"])
        t.var(f"ctx{n}@1", "context", "")
        t.op(f"qa{n}", "question-answering", [query, f"ctx{n}@1"], [f"pred-{cid}@1"])
        pred = t.var(f"pred-{cid}@1", "llm_response", "no idea", class_name="prediction")
        t.case(cid, query, pred, "open-domain", [m1])
    return t


def _verdict(
    trace_id: str,
    case_id: str,
    op_id: str | None,
    error_type: str | None,
    confidence: float | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    props = {
        "trace_id": trace_id,
        "case_id": case_id,
        "op_id": op_id,
        "error_type": error_type,
        "confidence": confidence,
        "error": error,
        "judge": "offline",
        "reason": f"seeded verdict for {case_id}",
    }
    return {
        "trace_id": trace_id,
        "case_id": case_id,
        "op_id": op_id,
        "props": {k: v for k, v in props.items() if v is not None},
    }


def seed(db: Database, tmp_path: Path, scope: str) -> Seed:
    s = Seed(scope, f"{scope}-mem0", f"{scope}-rag", f"{scope}-r1", f"{scope}-r2")
    for trace in (_mem0(s.mem0), _rag(s.rag)):
        trace_id = trace.records[0]["id"]
        path = tmp_path / f"{trace_id}.jsonl"
        trace.write(path)
        load_paths(db, [str(path)], LoadOptions())
    write = get_query("attribution/write_attributions")
    db.run(
        write,
        run_id=s.run1,
        rows=[
            _verdict(s.mem0, "q1", "ex1", "ExtractionError", 0.9),
            _verdict(s.mem0, "q2", "ex1", "ExtractionError", 0.7),
            _verdict(s.mem0, "q3", "up1", "UpdateError", 0.5),
            _verdict(s.mem0, "q4", None, None, error="judge timed out"),
            _verdict(s.rag, "b1", "s1", "RetrievalError", 0.8),
            _verdict(s.rag, "b2", "s2", "RetrievalError", 0.6),
        ],
    )
    db.run(
        write,
        run_id=s.run2,
        rows=[
            _verdict(s.mem0, "q1", "ex1", "ExtractionError", 0.9),
            _verdict(s.mem0, "q2", "qa2", "ResponseError", 0.4),
            _verdict(s.mem0, "q3", "up1", "UpdateError", 0.5),
            _verdict(s.mem0, "q4", "up1", "UpdateError", 0.3),
            _verdict(s.rag, "b1", None, None, error="malformed judge output"),
        ],
    )
    return s


def unseed(db: Database, s: Seed) -> None:
    for trace_id in s.traces:
        delete_trace(db, trace_id)
