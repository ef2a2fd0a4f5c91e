"""Append cost of a timeline as it grows, and the candidate query of a new failure in it.

One synthetic user's requests (as tests/timeline_app.py's service makes them: a message request
is an extraction chat span and a ``create_memory`` span; every fifth request is a question: a
``search_memory`` span over memories written in earlier requests and an answering chat span under
a case root) fill the timeline up to each size of ``--sizes``, ``--fill-batch`` requests per
append transaction as ``memtrace load --timelines`` writes a file (``loaders/append.py``; the fill
is not timed per request). At each size it times the appends of the next ``--window`` requests,
one request per transaction as the live receiver appends a trickle (per-request milliseconds,
p50 / p95: flat if an append costs what the request holds), then appends one failed question
and times the attribution queries of that case (``case_anchor``, ``candidates``,
``evidence_flow``, ``context``; p50 / p95 over ``--repeats`` runs after a warm-up).

    python benchmarks/timeline_append.py --sizes 1000 --window 100            # a smoke run
    python benchmarks/timeline_append.py --sizes 1000 10000 100000 --window 500 --out r.json

Writes only trace ``timeline:user:bench-<run>`` and deletes it afterwards (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from memtrace.admin import delete_trace, init_schema
from memtrace.attribution.store import AttributionStore
from memtrace.cypher import get_query
from memtrace.db import Database, connect
from memtrace.loaders.append import Request, append_requests
from memtrace.loaders.otlp.spans import Span, document_spans
from memtrace.settings import load_settings

EXTRACT = "Extract the one fact worth remembering from the user's message. Reply with it."
ANSWER = "Answer the user's question from their memories only, in a few words."
TIMED = ("attribution/case_anchor", "attribution/candidates", "attribution/evidence_flow",
         "attribution/context")  # fmt: skip
START = 1_700_000_000_000_000_000


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


class Requests:
    """The synthetic user's requests, numbered from 0; request n starts at n ms."""

    def __init__(self, user: str) -> None:
        self.user = user

    def spans(self, n: int, failed_question: bool = False) -> list[Span]:
        trace = uuid.uuid4().hex
        at = START + n * 1_000_000

        def span(
            i: int, name: str, attributes: dict[str, Any], parent: int | None
        ) -> dict[str, Any]:
            found: dict[str, Any] = {
                "traceId": trace,
                "spanId": f"{(n * 8 + i + 1):016x}",
                "name": name,
                "startTimeUnixNano": str(at + i * 1000),
                "endTimeUnixNano": str(at + i * 1000 + 500),
                "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
            }
            if parent is not None:
                found["parentSpanId"] = f"{(n * 8 + parent + 1):016x}"
            return found

        def chat(i: int, texts: list[str], reply: str) -> dict[str, Any]:
            roles = ["system", *["user"] * (len(texts) - 1)]
            messages = [
                {"role": r, "parts": [{"type": "text", "content": t}]}
                for r, t in zip(roles, texts, strict=True)
            ]
            out = [{"role": "assistant", "parts": [{"type": "text", "content": reply}]}]
            return span(i, "chat", {"gen_ai.operation.name": "chat",
                                    "gen_ai.input.messages": json.dumps(messages),
                                    "gen_ai.output.messages": json.dumps(out)}, 0)  # fmt: skip

        root = {"user.id": self.user, "session.id": f"{self.user}-{n // 50}"}
        question = failed_question or n % 5 == 4
        if not question:
            said = f"Note {n}: item {n} is kept in drawer {n % 97}."
            fact = f"Item {n} is in drawer {n % 97}."
            raw = [
                span(0, "POST /message", root, None),
                chat(1, [EXTRACT, said], fact),
                span(2, "create_memory memories", {
                    "gen_ai.operation.name": "create_memory", "gen_ai.memory.store.id": "m",
                    "gen_ai.memory.records": json.dumps([{"id": f"mem-{n}", "content": fact}]),
                }, 0),
            ]  # fmt: skip
        else:
            asked = n - 4 if not failed_question else n - 3
            item = asked - asked % 5  # a message request's item
            q = f"Where is item {item}?"
            fact = f"Item {item} is in drawer {item % 97}."
            context = f"Memories:\n- {fact}"
            case = {
                **root,
                "memtrace.case.id": f"q-{n}",
                "memtrace.case.question": q,
                "memtrace.case.golden_answers": [f"drawer {item % 97}"],
                "memtrace.case.evidence": [
                    f"Note {item}: item {item} is kept in drawer {item % 97}."
                ],
                "memtrace.case.judge_score": 0.0 if failed_question else 1.0,
            }
            reply = "In the attic." if failed_question else f"Drawer {item % 97}."
            raw = [
                span(0, "POST /ask", case, None),
                span(1, "search_memory memories", {
                    "gen_ai.operation.name": "search_memory", "gen_ai.memory.store.id": "m",
                    "gen_ai.memory.query.text": q, "output.value": context,
                    "gen_ai.memory.records": json.dumps([{"id": f"mem-{item}", "content": fact}]),
                }, 0),
                chat(2, [ANSWER, context, q], reply),
            ]  # fmt: skip
        request = {"resourceSpans": [{"resource": {"attributes": []},
                                      "scopeSpans": [{"scope": {}, "spans": raw}]}]}  # fmt: skip
        return document_spans(request, f"request-{n}")


def append(db: Database, trace_id: str, requests: Requests, n: int, failed: bool = False) -> float:
    """Append request ``n`` in a transaction of its own; its milliseconds."""
    started = time.perf_counter()
    append_many(db, trace_id, requests, range(n, n + 1), failed)
    return (time.perf_counter() - started) * 1000


def append_many(
    db: Database, trace_id: str, requests: Requests, ns: range, failed: bool = False
) -> None:
    batch = [Request(spans[0].trace_id, spans) for spans in (requests.spans(n, failed) for n in ns)]
    props = {"source": "otlp", "user_id": requests.user, "timeline_kind": "user"}
    append_requests(db, trace_id, props, batch, "bench")


def candidate_times(db: Database, trace_id: str, case_id: str, repeats: int) -> dict[str, Any]:
    anchor = AttributionStore(db).anchor(trace_id, case_id)
    assert anchor is not None and anchor.answer is not None, "the failed case has no answer op"
    params = {
        "trace_id": trace_id,
        "case_id": case_id,
        "answer_op": anchor.answer.id,
        "evidence_ids": list(anchor.evidence_ids),
        "query_id": anchor.query_id or "",
        "max_seq": anchor.answer.seq,
        "max_depth": 12,
        "max_hops": 3,
    }
    found = {}
    for name in TIMED:
        query = get_query(name)
        values = {k: params[k] for k in query.params}
        db.run(query, **values)  # warm the plan and page caches
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            db.run(query, **values)
            times.append((time.perf_counter() - started) * 1000)
        found[name] = _summary(times)
    return found


def _summary(times: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(times, n=20, method="inclusive")
    return {"p50_ms": round(cuts[9], 3), "p95_ms": round(cuts[18], 3), "n": len(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--window", type=int, default=100, help="appends timed at each size")
    parser.add_argument(
        "--fill-batch", type=int, default=50, help="requests per append while filling (untimed)"
    )
    parser.add_argument("--repeats", type=int, default=50, help="runs of each query timed")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the timeline afterwards")
    args = parser.parse_args()
    user = f"bench-{uuid.uuid4().hex[:8]}"
    trace_id = f"timeline:user:{user}"
    requests = Requests(user)
    results: list[dict[str, Any]] = []
    with connect(load_settings()) as db:
        init_schema(db)
        try:
            n = 0
            for size in sorted(args.sizes):
                filled = time.perf_counter()
                while n < size:
                    batch = range(n, min(size, n + args.fill_batch))
                    append_many(db, trace_id, requests, batch)
                    n = batch.stop
                fill_seconds = time.perf_counter() - filled
                window = [append(db, trace_id, requests, n + i) for i in range(args.window)]
                n += args.window
                append(db, trace_id, requests, n, failed=True)
                queries = candidate_times(db, trace_id, f"q-{n}", args.repeats)
                n += 1
                row = {
                    "requests": size,
                    "fill_seconds": round(fill_seconds, 1),
                    "append_ms": _summary(window),
                    "queries": queries,
                    "nodes": db.run(
                        "MATCH (t:Trace {id: $id}) RETURN t.n_operations + t.n_variables AS n",
                        id=trace_id,
                    )[0]["n"],
                }
                results.append(row)
                print(json.dumps(row), flush=True)
        finally:
            if not args.keep:
                delete_trace(db, trace_id)
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
