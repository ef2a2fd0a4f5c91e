"""Executed counterfactuals measured: planted labels reproduced, natural failures labelled,
judges against the executed labels, and what a replay costs.

    python benchmarks/replay_labels.py --planted 1,2,3 --faults 30 --dev 1,2 [--held-out 7,8,9,10]

Needs the running Neo4j and LoCoMo under ../shared/data (or --data). Writes traces under ids
prefixed ``bench-replay-`` and deletes them afterwards. Conversations in --held-out are used
once, for the final figure; nothing is tuned on them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memtrace.admin import delete_trace
from memtrace.attribution.evaluate import score
from memtrace.attribution.pipeline import Options, evaluation_rows, run_attribution
from memtrace.attribution.registry import make_judge
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.attribution.store import AttributionStore
from memtrace.bench.make import BenchOptions, make_bench
from memtrace.bench.natural import natural_bench
from memtrace.db import connect
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.replay import make_replayer, read_native
from memtrace.replay.graph import TraceFiles
from memtrace.replay.inputs import REPLAYABLE_SYSTEMS
from memtrace.settings import load_settings
from memtrace.systems.locomo import Subset, load_locomo
from memtrace.systems.registry import make_backend, make_system

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
PREFIX = "bench-replay-"
WRITTEN: list[str] = []  # trace ids to delete at the end


def planted(
    db: Any, settings: Any, convs: list[Any], out: Path, system: str, faults: int
) -> dict[str, Any]:
    """bench make set -> replay judge -> executed label vs planted (injected) label; the offline
    judge against both (every failed case has an executed label, the planted ones a planted one)."""
    options = BenchOptions(system=system, faults=faults, prefix=PREFIX + "p-")
    report = make_bench(convs, out, options)
    load_paths(db, [str(p) for p in report.files], LoadOptions())
    paths = {p.stem: p for p in report.files}
    WRITTEN.extend(paths)
    store = AttributionStore(db)
    judge = ReplayJudge(TraceFiles(paths, settings))
    run_id = f"{PREFIX}planted-{system}"
    cases = []
    for trace_id in paths:
        cases += store.failed_cases(trace_id)
    _, verdicts = run_attribution(store, judge, Options(), cases=cases, run_id=run_id, workers=1)
    rows = evaluation_rows(store, run_id, None)
    rows = rows[rows["trace_id"].isin(list(paths))]
    injected = rows[rows["label_source"] == "injected"]
    same = injected[(injected["attr_op"] == injected["label_op"])
                    & (injected["error_type"] == injected["label_type"])]  # fmt: skip
    misses = injected.drop(same.index)
    derived = rows[rows["label_source"] == "derived"]
    executed = {(v.trace_id, v.case_id): (v.op_id, v.error_type) for v in verdicts if v.op_id}
    _, offline = run_attribution(
        store, make_judge("offline", settings), Options(), cases=cases, write=False, workers=1
    )
    judged = {(v.trace_id, v.case_id): (v.op_id, v.error_type) for v in offline}
    planted_labels = {
        (r.trace_id, r.case_id): (r.label_op, r.label_type) for r in injected.itertuples()
    }
    # always blaming the answer op is right exactly where the planted label is a ResponseError
    baseline = float((injected["label_type"] == "ResponseError").mean()) if len(injected) else 0.0
    return {
        "offline_vs_planted": _agreement(judged, planted_labels),
        "answer_op_baseline_vs_planted": baseline,
        "offline_vs_executed": _agreement(judged, executed),
        "planted_labels": len(injected),
        "reproduced": len(same),
        "share": len(same) / len(injected) if len(injected) else float("nan"),
        "misses": misses[["case_id", "label_type", "label_op", "error_type", "attr_op"]].to_dict(
            orient="records"
        ),
        "derived_labels": len(derived),
        "derived_agree": int(
            (
                (derived["attr_op"] == derived["label_op"])
                & (derived["error_type"] == derived["label_type"])
            ).sum()
        ),
    }


def _agreement(judged: dict[Any, Any], labels: dict[Any, Any]) -> dict[str, Any]:
    """Op = type accuracy of ``judged`` against ``labels`` (case -> (op, type))."""
    same = sum(judged.get(case) == label for case, label in labels.items())
    return {"cases": len(labels), "accuracy": same / len(labels) if labels else float("nan")}


def judged(db: Any, settings: Any, trace_ids: list[str], evidence: str) -> dict[str, Any]:
    store = AttributionStore(db)
    run_id = f"{PREFIX}offline-{evidence}-{trace_ids[0]}"
    cases = [c for t in trace_ids for c in store.failed_cases(t)]
    run_attribution(
        store, make_judge("offline", settings), Options(evidence=evidence),  # type: ignore[arg-type]
        cases=cases, run_id=run_id,
    )  # fmt: skip
    rows = evaluation_rows(store, run_id, None, "replay")
    rows = rows[rows["trace_id"].isin(trace_ids)].reset_index(drop=True)
    summary = score(rows).summary.set_index("method")
    offline = summary.iloc[0].to_dict()
    base = summary.loc["baseline:answer-op"].to_dict()
    return {
        "cases": int(offline["cases"]),
        "offline_op": float(offline["op_accuracy"]),
        "offline_type": float(offline["type_accuracy"]),
        "answer_op_baseline_op": float(base["op_accuracy"]),
        "answer_op_baseline_type": float(base["type_accuracy"]),
    }


def wall_ratio(path: Path, system: str, convs: list[Any]) -> dict[str, float]:
    """One replay of a case with its construction repaired vs one full run of the conversation."""
    conv = convs[0]
    started = time.process_time()
    make_system(system, make_backend("offline")).run(conv)
    full = time.process_time() - started
    replayer = make_replayer(read_native(path))
    steps = replayer.steps()
    case_id = next(iter(read_native(path).cases))
    first = next(
        op for op, step in steps.items() if step.split(":")[0] in ("extract", "buffer", "window")
    )
    replayer.replay(case_id)  # the unrepaired memory, built once and shared by every case
    started = time.process_time()
    replayer.replay(case_id, [first])  # rebuilds the memory: the costly kind of replay
    rebuilt = time.process_time() - started
    started = time.process_time()
    replayer.replay(case_id)
    shared = time.process_time() - started
    return {"full_run_s": full, "replay_rebuilt_s": rebuilt, "replay_shared_s": shared,
            "rebuilt_ratio": rebuilt / full, "shared_ratio": shared / full}  # fmt: skip


def natural(db: Any, settings: Any, convs: list[Any], out: Path, tag: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for system in REPLAYABLE_SYSTEMS:
        report = natural_bench(db, system, convs, out / system, prefix=f"{PREFIX}{tag}-",
                               settings=settings)  # fmt: skip
        trace_ids = [p.stem for p in report.files]
        entry = report.as_dict()
        entry["offline_gold"] = judged(db, settings, trace_ids, "gold")
        entry["offline_retrieved"] = judged(db, settings, trace_ids, "retrieved")
        entry["wall"] = wall_ratio(report.files[0], system, convs)
        entry["replays_mean"] = statistics.mean(report.replays) if report.replays else 0
        result[system] = entry
        WRITTEN.extend(trace_ids)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--dev", default="1,2")
    parser.add_argument("--held-out", default="")
    parser.add_argument("--planted", default="1,2", help="conversations of the bench make sets")
    parser.add_argument("--faults", type=int, default=10, help="faults per bench make set")
    parser.add_argument("--systems", default=",".join(REPLAYABLE_SYSTEMS), help="of --planted")
    args = parser.parse_args()
    settings = load_settings()
    out: dict[str, Any] = {}
    with connect(settings) as db, tempfile.TemporaryDirectory() as folder:
        conversations = tuple(args.dev.split(",")) if args.dev else ()
        dev = load_locomo(args.data, Subset(conversations=conversations)) if args.dev else []
        if args.planted:
            sets = load_locomo(args.data, Subset(conversations=tuple(args.planted.split(","))))
            out["planted"] = {}
            for system in args.systems.split(","):
                where = Path(folder) / system
                out["planted"][system] = planted(db, settings, sets, where, system, args.faults)
                print(system, json.dumps(out["planted"][system])[:300], flush=True)
        if args.dev:
            out["natural_dev"] = natural(db, settings, dev, Path(folder) / "dev", "dev")
            print(json.dumps(out["natural_dev"], indent=1), flush=True)
        if args.held_out:
            held = load_locomo(args.data, Subset(conversations=tuple(args.held_out.split(","))))
            out["natural_held_out"] = natural(db, settings, held, Path(folder) / "held", "held")
            print(json.dumps(out["natural_held_out"], indent=1), flush=True)
        for trace_id in WRITTEN:
            delete_trace(db, trace_id)
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
