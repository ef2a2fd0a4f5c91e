"""Attribution accuracy and cost by judge and evidence source, with wrong-evidence diagnostics.

    .venv/bin/python benchmarks/attribution_judges.py --bench /tmp/b/mem0 --bench /tmp/b/rag \
        --judge offline --evidence gold --evidence retrieved

1. Loads the labeled smartcomment files (--shared, default ../shared/data/smartcomment) and every
   trace of each --bench directory (`memtrace bench make` output) under run-scoped trace ids.
2. For every labeled case, every --judge (offline, llm, hybrid) and every --evidence source
   (gold, retrieved): the verdict, LLM calls and tokens, against the label.
3. With retrieved evidence, names each case whose verdict is wrong: label and verdict (op,
   type), the gold and the chosen evidence ids, whether the chosen messages include a gold one,
   and where each chosen message's trail stopped (`--misses` also prints them on stderr).
LLM judges talk to OPENAI_BASE_URL / OPENAI_API_KEY / MEMTRACE_LLM_MODEL (a real endpoint), or,
with --scripted, to the local scripted server of tests/fake_openai.py answering like an
uninformative small model (every check faulty and not decisive, every op intact). Nothing is
cached. Everything it loaded is deleted at the end. JSON on stdout, a summary on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from attribution import labels, load  # the sibling benchmark: same loading, same label query

from memtrace.admin import delete_trace
from memtrace.attribution.evidence import Embed
from memtrace.attribution.hybrid import HybridJudge
from memtrace.attribution.judges import Judge, OfflineJudge
from memtrace.attribution.llm_judge import LLMJudge
from memtrace.attribution.pipeline import Options, analyse_case
from memtrace.attribution.store import AttributionStore
from memtrace.db import Database, connect
from memtrace.errors import MemtraceError
from memtrace.llm import LLMClient
from memtrace.settings import load_settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "smartcomment"
TESTS = Path(__file__).resolve().parents[1] / "tests"


def scripted_server() -> Any:
    """The tests' scripted OpenAI-compatible server, replying like an uninformative model."""
    sys.path.insert(0, str(TESTS))
    from fake_openai import FakeOpenAI, Reply  # a test helper: imported only on demand

    server = FakeOpenAI()
    # Token counts as a real endpoint would report them: 4 characters per token of the request.
    server.responder = lambda body: Reply(
        content=uninformative_reply(body),
        prompt_tokens=len(json.dumps(body.get("messages", []))) // 4,
        completion_tokens=len(uninformative_reply(body)) // 4,
    )
    server.start()
    return server


def uninformative_reply(body: dict[str, Any]) -> str:
    """What Qwen2.5-Coder-0.5B answered to every question (issue 14): the same thing."""
    text = json.dumps(body.get("messages", []))
    if "still intact" in text:
        return json.dumps({"intact": True, "reason": "the information is present"})
    return json.dumps(
        {"faulty": True, "decisive": False, "error_type": None, "reason": "it looks wrong"}
    )


def judge_for(name: str) -> Judge:
    if name == "offline":
        return OfflineJudge()
    client = LLMClient.from_settings(load_settings(), cache=False)  # every call really sent
    return HybridJudge(LLMJudge(client)) if name == "hybrid" else LLMJudge(client)


def local_embedder(retriever: str) -> Embed | None:
    if retriever == "bm25":
        return None
    from memtrace.systems.st_ranker import SentenceTransformerRanker  # imports torch: on demand

    return SentenceTransformerRanker().embed


def measure(
    db: Database,
    traces: dict[str, list[str]],
    judge: Judge,
    evidence: str,
    limit: int | None,
    retriever: str = "bm25",
    embed: Embed | None = None,
) -> dict[str, Any]:
    reader = AttributionStore(db)
    per_set: dict[str, Any] = {}
    for dataset, trace_ids in traces.items():
        rows: list[dict[str, Any]] = []
        for trace_id in trace_ids:
            for label in labels(db, trace_id):
                if limit is not None and len(rows) >= limit:
                    break
                options = Options(evidence=evidence, retriever=retriever, embed=embed)  # type: ignore[arg-type]
                started = time.perf_counter()
                try:
                    analysis = analyse_case(reader, judge, trace_id, label["case_id"], options)
                except MemtraceError as exc:
                    rows.append({"case": label["case_id"], "error": str(exc), "op_ok": False,
                                 "type_ok": False, "calls": 0, "tokens": 0,
                                 "seconds": time.perf_counter() - started})  # fmt: skip
                    continue
                verdict = analysis.verdict
                gold = set(analysis.anchor.evidence_ids)
                found = [e.id for e in analysis.graph.evidence]
                row = {
                    "case": label["case_id"],
                    "label": [label["op_id"], label["error_type"]],
                    "verdict": [verdict.op_id, verdict.error_type],
                    "op_ok": verdict.op_id == label["op_id"],
                    "type_ok": verdict.error_type == label["error_type"],
                    "calls": verdict.llm_calls,
                    "tokens": verdict.tokens_in + verdict.tokens_out,
                    "seconds": verdict.seconds,
                    "error": verdict.error,
                    "overridden": getattr(verdict, "overridden_from", None) is not None,
                }
                if evidence == "retrieved":
                    row["evidence"] = found
                    row["gold_evidence"] = sorted(gold)
                    row["gold_evidence_found"] = bool(gold & set(found)) if gold else None
                    row["why"] = "; ".join(
                        f"{t.message_id}: {t.detail}" for t in analysis.trails
                    )  # where each chosen message's key sentence stopped
                rows.append(row)
        n = len(rows) or 1
        per_set[dataset] = {
            "cases": len(rows),
            "op_accuracy": sum(r["op_ok"] for r in rows) / n,
            "type_accuracy": sum(r["type_ok"] for r in rows) / n,
            "verdicts": sum(1 for r in rows if r.get("verdict", [None])[0] is not None) / n,
            "errors": sum(1 for r in rows if r.get("error")),
            "overrides": sum(1 for r in rows if r.get("overridden")),
            "calls_per_case": sum(r["calls"] for r in rows) / n,
            "tokens_per_case": sum(r["tokens"] for r in rows) / n,
            "seconds_per_case_median": statistics.median(r["seconds"] for r in rows)
            if rows
            else 0.0,
            "wrong": [r for r in rows if not (r["op_ok"] and r["type_ok"])],
        }
    return per_set


def print_misses(wrong: list[dict[str, Any]]) -> None:
    for row in wrong:
        label, verdict = row.get("label", ["?", "?"]), row.get("verdict", ["?", "?"])
        print(f"  miss {row['case']}: label {label[0]} {label[1]}, found {verdict[0]} "
              f"{verdict[1]}; gold evidence {row.get('gold_evidence')}, chosen "
              f"{row.get('evidence')} (gold among them: {row.get('gold_evidence_found')}); "
              f"{row.get('why') or row.get('error')}", file=sys.stderr)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--no-shared", action="store_true")
    parser.add_argument("--bench", type=Path, action="append", default=[])
    parser.add_argument("--judge", action="append", choices=["offline", "llm", "hybrid"])
    parser.add_argument("--evidence", action="append", choices=["gold", "retrieved"])
    parser.add_argument("--limit", type=int, help="at most N labeled cases per set")
    parser.add_argument("--retriever", choices=["bm25", "dense", "hybrid"], default="bm25",
                        help="dense/hybrid embed with the packaged sentence-transformers model "
                        "(the optional extra)")  # fmt: skip
    parser.add_argument("--scripted", action="store_true", help="the local scripted server")
    parser.add_argument("--misses", action="store_true", help="print each wrong case (stderr)")
    args = parser.parse_args()
    server = scripted_server() if args.scripted else None
    if server is not None:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ.setdefault("OPENAI_API_KEY", "scripted")
    scope = f"benchjudge{uuid.uuid4().hex[:6]}"
    files = [] if args.no_shared else sorted(args.shared.glob("*.json"))
    report: dict[str, Any] = {"scope": scope, "results": {}}
    traces: dict[str, list[str]] = {}
    embed = local_embedder(args.retriever)
    report["retriever"] = args.retriever
    with connect(load_settings()) as db:
        try:
            traces = load(db, files, scope)
            for directory in args.bench:
                for name, ids in load(db, sorted(directory.glob("*.jsonl")), scope).items():
                    traces.setdefault(name, []).extend(ids)
            for judge_name in args.judge or ["offline"]:
                judge = judge_for(judge_name)
                for evidence in args.evidence or ["gold", "retrieved"]:
                    key = f"{judge_name}/{evidence}"
                    report["results"][key] = result = measure(
                        db, traces, judge, evidence, args.limit, args.retriever, embed
                    )
                    for dataset, r in result.items():
                        print(f"{key:18} {dataset:14} {r['cases']:3} cases  op "
                              f"{r['op_accuracy']:.3f}  type {r['type_accuracy']:.3f}  "
                              f"verdicts {r['verdicts']:.2f}  errors {r['errors']}  "
                              f"overrides {r['overrides']}  calls {r['calls_per_case']:.1f}  "
                              f"tokens {r['tokens_per_case']:.0f}  "
                              f"s/case {r['seconds_per_case_median']:.2f}",
                              file=sys.stderr)  # fmt: skip
                        if args.misses:
                            print_misses(r["wrong"])
        finally:
            for trace_id in [t for ts in traces.values() for t in ts]:
                delete_trace(db, trace_id)
            if server is not None:
                server.stop()
    report["model"] = os.environ.get("MEMTRACE_LLM_MODEL")
    report["load_average"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
