"""Attribution: accuracy, throughput, LLM-judge cost estimate and candidate-query latency vs size.

    .venv/bin/python benchmarks/attribution.py --bench /tmp/bench200 --sizes 100000 1000000

1. Loads the labeled smartcomment files (../shared/data/smartcomment) and, with --bench, every
   trace of a `memtrace bench make` output directory, under run-scoped trace ids.
2. Accuracy of the offline judge (linear and binary walks) against the labels, per dataset and
   label source; offline throughput (cases/s) over every failed case with `attribute_cases`.
3. LLM-judge cost of an accurate judge (on the smartcomment labels and the bench's injected
   ones): the calls a linear / binary walk needs to reach the labeled op, and the tokens of the
   prompts it would send (rendered, not sent; 4 chars/token), against the whole flattened trace.
4. Latency (p50/p95 over all labeled cases, 3 runs each) of the per-case queries, including the
   three backward-reachability variants, at the current database size and after filling the
   database with synthetic filler traces up to each --sizes total node count.
Everything it wrote is deleted at the end. Results: JSON on stdout and a Markdown summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from queries import benchmark_query

from memtrace.admin import delete_trace
from memtrace.attribution.judges import CaseView, OfflineJudge
from memtrace.attribution.llm_judge import CHECK_PROMPT, INTACT_PROMPT, SYSTEM, LLMJudge
from memtrace.attribution.pipeline import Analysis, Options, analyse_case, attribute_cases
from memtrace.attribution.store import AttributionStore
from memtrace.attribution.walk import Strategy
from memtrace.cypher import Query, get_query
from memtrace.db import Database, connect
from memtrace.llm import LLMClient
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.reading import LEXICAL, Reader, make_reader
from memtrace.reading.meaning import installed
from memtrace.settings import LLMSettings, load_settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "smartcomment"
CHARS_PER_TOKEN = 4
FILLER_NODES_PER_TRACE = 20_000
COST_MEASURES = ("calls", "tokens", "share")
STRATEGIES: tuple[Strategy, ...] = ("linear", "binary")

# Filler: Mem0-shaped chains (op writes a variable, the next op reads it and depends on the
# previous op) with the same labels, properties and indexes as real traces.
FILLER_NODES = """
MERGE (t:Trace {id: $trace_id})
SET t.load_state = 'complete', t.source = 'filler'
WITH t
UNWIND range(0, $pairs - 1) AS i
CREATE (o:Operation {trace_id: $trace_id, id: 'op-' + i, seq: 2 * i, name: 'filler',
        kind: ['extraction', 'update', 'embedding', 'retrieval', 'generation'][i % 5]})
CREATE (v:Variable {trace_id: $trace_id, id: 'v-' + i, seq: 2 * i + 1, name: 'v-' + i,
        version: 1, category: 'memory_entry', value: 'filler memory number ' + i})
CREATE (o)-[:WRITES]->(v)
"""
FILLER_LINKS = """
MATCH (o:Operation {trace_id: $trace_id}) WHERE o.seq > 0
MATCH (v:Variable {trace_id: $trace_id, seq: o.seq - 1})
MATCH (p:Operation {trace_id: $trace_id, seq: o.seq - 2})
CREATE (o)-[:READS]->(v)
CREATE (o)-[:DEPENDS_ON {via: [v.id]}]->(p)
CREATE (v)-[:FLOWS_TO {op_id: o.id}]->(:Variable {trace_id: $trace_id, id: 'w-' + o.seq,
        seq: o.seq + 1, name: 'w', version: 1, category: 'llm_response', value: 'x'})
"""
TIMED: dict[str, Query] = {
    **{
        name: get_query(f"attribution/{name}")
        for name in ("case_anchor", "candidates", "evidence_flow", "context")
    },
    **{
        name: benchmark_query(name)
        for name in ("backward_depends_on", "backward_flows_to", "backward_qpp")
    },
}


def node_count(db: Database) -> int:
    return int(db.run("MATCH (n) RETURN count(n) AS n")[0]["n"])


def load(db: Database, files: list[Path], scope: str) -> dict[str, list[str]]:
    traces: dict[str, list[str]] = {}
    for path in files:
        trace_id = f"{scope}-{path.stem}"
        load_paths(db, [str(path)], LoadOptions(trace_id=trace_id))
        traces.setdefault(path.parent.name, []).append(trace_id)
    return traces


def labels(db: Database, trace_id: str) -> list[dict[str, Any]]:
    return db.run(
        "MATCH (c:Case {trace_id: $t})-[l:LABELED]->(o:Operation) RETURN c.id AS case_id, "
        "o.id AS op_id, l.error_type AS error_type, l.source AS source ORDER BY case_id",
        t=trace_id,
    )


def prompt_tokens(
    store: AttributionStore, judge: LLMJudge, analysis: Analysis, upto: int, binary: bool
) -> int:
    """Tokens of the prompts a judge that agrees with the label would be sent (not sent)."""
    ops = [c.op.id for c in analysis.candidates]
    view = CaseView(
        analysis.graph, analysis.trails, store.operation_views(analysis.anchor.trace_id, ops)
    )
    cands = list(analysis.candidates)
    picked = cands[: upto + 1]
    if binary:
        picked, low, high = [], 0, len(cands) - 1
        while low <= high:
            middle = (low + high) // 2
            picked.append(cands[middle])
            low, high = (middle + 1, high) if middle < upto else (low, middle - 1)
        picked.append(cands[upto])
    chars = 0
    for index, candidate in enumerate(picked):
        template = INTACT_PROMPT if binary and index < len(picked) - 1 else CHECK_PROMPT
        chars += len(SYSTEM.text) + len(template.format(**judge._fields(view, candidate))) + 600
    return chars // CHARS_PER_TOKEN


def accuracy(db: Database, traces: dict[str, list[str]]) -> tuple[dict[str, Any], dict[str, Any]]:
    reader = AttributionStore(db)
    judge = OfflineJudge()
    llm = LLMJudge(LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1")))
    chars = reader.trace_sizes([t for ts in traces.values() for t in ts])
    sizes = {trace_id: size // 4 for trace_id, size in chars.items()}
    results: dict[str, Any] = {}
    cost: dict[str, list[float]] = {
        f"{mode}_{measure}": [] for mode in ("linear", "binary") for measure in COST_MEASURES
    }
    for dataset, trace_ids in traces.items():
        for strategy in STRATEGIES:
            rows: dict[str, list[int]] = {}
            for trace_id in trace_ids:
                for label in labels(db, trace_id):
                    options = Options(strategy=strategy)
                    analysis = analyse_case(reader, judge, trace_id, label["case_id"], options)
                    verdict = analysis.verdict
                    for key in ("all", str(label["source"]), f"type:{label['error_type']}"):
                        row = rows.setdefault(key, [0, 0, 0])
                        row[0] += 1
                        row[1] += verdict.op_id == label["op_id"]
                        row[2] += verdict.error_type == label["error_type"]
                    ids = [c.op.id for c in analysis.candidates]
                    costed = dataset == "smartcomment" or label["source"] == "injected"
                    if strategy == "linear" and costed and label["op_id"] in ids:
                        index = ids.index(label["op_id"])
                        probes = len(ids).bit_length()  # binary search probes, at most
                        for mode, calls in (("linear", index + 1), ("binary", probes + 1)):
                            tokens = prompt_tokens(reader, llm, analysis, index, mode == "binary")
                            cost[f"{mode}_calls"].append(calls)
                            cost[f"{mode}_tokens"].append(tokens)
                            cost[f"{mode}_share"].append(tokens / sizes[trace_id])
            results[f"{dataset}/{strategy}"] = {
                key: {"cases": n, "op_accuracy": o / n, "type_accuracy": t / n}
                for key, (n, o, t) in sorted(rows.items())
            }
    summary = {
        key: {"median": statistics.median(values), "max": max(values)}
        for key, values in cost.items()
        if values
    }
    summary["whole_trace_tokens_median"] = {"median": statistics.median(sizes.values()),
                                            "max": max(sizes.values())}  # fmt: skip
    return results, summary


def throughput(db: Database, traces: dict[str, list[str]]) -> dict[str, float]:
    store = AttributionStore(db)
    cases = [c for ts in traces.values() for t in ts for c in store.failed_cases(t)]
    out: dict[str, float] = {}
    # lexical reading (the keys as before), then meaning and auto (per statement: the words
    # where it copies a message sentence) when the extra is installed: the model is loaded and
    # warmed first, so the rate is reading's, not loading's
    readings: list[tuple[str, Reader]] = [("", LEXICAL)]
    if installed():
        meaning = make_reader("meaning")
        meaning.read("warm up", ["the model"])
        readings += [("meaning_", meaning), ("auto_", make_reader("auto"))]
    for prefix, reader in readings:
        for workers in (1, 8):
            started = time.perf_counter()
            attribute_cases(store, OfflineJudge(), cases, Options(reader=reader), workers=workers)
            rate = len(cases) / (time.perf_counter() - started)
            out[f"{prefix}cases_per_s_workers_{workers}"] = rate
    out["cases"] = len(cases)
    return out


def latency(db: Database, traces: dict[str, list[str]]) -> dict[str, Any]:
    reader = AttributionStore(db)
    times: dict[str, list[float]] = {name: [] for name in TIMED}
    for trace_ids in traces.values():
        for trace_id in trace_ids:
            for label in labels(db, trace_id)[:40]:
                anchor = reader.anchor(trace_id, label["case_id"])
                if anchor is None or anchor.answer is None:
                    continue
                params = {
                    "trace_id": trace_id,
                    "case_id": label["case_id"],
                    "answer_op": anchor.answer.id,
                    "evidence_ids": list(anchor.evidence_ids),
                    "query_id": anchor.query_id or "",
                    "max_seq": anchor.answer.seq,
                    "max_depth": 12,
                    "max_hops": 3,
                }
                for name, query in TIMED.items():
                    values = {k: params[k] for k in query.params}
                    db.run(query, **values)  # warm the plan cache and page cache
                    for _ in range(3):
                        started = time.perf_counter()
                        db.run(query, **values)
                        times[name].append((time.perf_counter() - started) * 1000)
    return {
        name: {
            "p50_ms": statistics.median(values),
            "p95_ms": statistics.quantiles(values, n=20)[18],
            "runs": len(values),
        }
        for name, values in times.items()
    }


def fill(db: Database, scope: str, target: int, made: list[str]) -> None:
    while (current := node_count(db)) < target:
        pairs = min(FILLER_NODES_PER_TRACE, target - current) // 3 + 1
        trace_id = f"{scope}-filler-{len(made)}"
        made.append(trace_id)
        db.run(FILLER_NODES, trace_id=trace_id, pairs=pairs)
        db.run(FILLER_LINKS, trace_id=trace_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--bench", type=Path, help="a `memtrace bench make` output directory")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    args = parser.parse_args()
    scope = f"benchattr{uuid.uuid4().hex[:6]}"
    files = sorted(args.shared.glob("*.json"))
    if args.bench:
        files += sorted(args.bench.glob("*.jsonl"))
    report: dict[str, Any] = {"scope": scope}
    made: list[str] = []
    with connect(load_settings()) as db:
        try:
            started = time.perf_counter()
            traces = load(db, files, scope)
            report["load_seconds"] = time.perf_counter() - started
            report["accuracy"], report["llm_cost"] = accuracy(db, traces)
            report["throughput"] = throughput(db, traces)
            report["latency"] = {str(node_count(db)): latency(db, traces)}
            for size in args.sizes:
                fill(db, scope, size, made)
                report["latency"][str(node_count(db))] = latency(db, traces)
                print(f"measured at {node_count(db)} nodes", file=sys.stderr)
        finally:
            for trace_id in [t for ts in locals().get("traces", {}).values() for t in ts] + made:
                db.run("MATCH (a:Attribution {trace_id: $t}) DETACH DELETE a", t=trace_id)
                delete_trace(db, trace_id)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
