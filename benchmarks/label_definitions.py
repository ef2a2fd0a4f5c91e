"""The two readings of an executed label, side by side on the same natural failures (issue 38).

    nice -n 10 python benchmarks/label_definitions.py --conversations 1 [--systems mem0,rag]

Each system runs the conversations with no fault planted (as ``memtrace bench natural``); every
failed case is replayed once by the replay judge, whose verdict carries both readings:

- the label (the paper's): the earliest op whose repair, every later step ideal *including the
  answer step*, puts what the gold answer needs into the answer's context; ResponseError only
  when it was there as the run went; no label when no repair restores it (``unrestored``) or
  the repairs interact;
- rescued with your answerer (``with_your_answerer``, the replay label before issue 38): the
  earliest op whose repair makes the real answer right, else ResponseError.

A case whose evidence does not hold its gold answer (an inference question) has no paper's
label: what the answer needs is not known, and the replay reads it by the answer (status
``by answer``); it counts for your answerer's reading only.

Against each, on the cases it labels: the offline judge (gold evidence) and the
always-blame-the-answer-op baseline, op and type both right; on the cases where the two readings
agree, the offline judge's figure for either; where they disagree, how (old -> new) with one
case id each. Needs the running Neo4j and LoCoMo under ../shared/data (or --data); writes traces
under ids prefixed ``bench-labels-`` and deletes them afterwards. Conversations 7-10 are held
out: pass them only for a final figure, once.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memtrace.admin import delete_trace
from memtrace.attribution.model import Verdict
from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.registry import make_judge
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.attribution.store import AttributionStore
from memtrace.db import connect
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.replay.graph import TraceFiles
from memtrace.replay.inputs import REPLAYABLE_SYSTEMS
from memtrace.settings import load_settings
from memtrace.systems.locomo import Subset, load_locomo
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
PREFIX = "bench-labels-"
Label = tuple[str, str]  # (op id, error type)


def readings(verdict: Verdict) -> tuple[Label | None, Label | None, str]:
    """The paper's label, the label your answerer gives, and the replay's status. A case the
    replay read by the answer (its evidence does not hold the gold answer, so what reached the
    context is not known: ``basis`` "answer") has no paper's label: its status is ``by answer``."""
    outcome = json.loads(verdict.replay_outcomes or "{}")
    yours = outcome.get("with_your_answerer") or {}
    answerer = (yours["op_id"], yours["error_type"]) if yours.get("op_id") else None
    if outcome.get("basis") == "answer":
        return None, answerer, "by answer"
    paper = (verdict.op_id, verdict.error_type) if verdict.op_id and verdict.error_type else None
    return paper, answerer, str(outcome.get("status", "error"))


def share(right: int, cases: int) -> float | None:
    return round(right / cases, 4) if cases else None


Case = tuple[str, str]  # (trace id, case id)


def compare(
    replayed: list[Verdict],
    offline: dict[Case, tuple[Label | None, float]],
    answer_ops: dict[Case, str],
) -> dict[str, Any]:
    """The offline judge and the answer-op baseline against either reading (module docstring);
    per offline confidence value (one per basis, ``judges.CONFIDENCE``), how many it gave and
    how many the paper's label confirmed: what calibrates it."""
    out: dict[str, Any] = {"failed": len(replayed), "status": Counter(), "changed": Counter()}
    confirmed: dict[float, list[int]] = {}
    examples: dict[str, str] = {}
    scored = {"paper": [0, 0, 0], "answerer": [0, 0, 0], "agree": [0, 0, 0]}
    for verdict in replayed:
        paper, answerer, status = readings(verdict)
        out["status"][status] += 1
        case = (verdict.trace_id, verdict.case_id)
        judged, confidence = offline.get(case, (None, 0.0))
        baseline = (answer_ops.get(case, ""), "ResponseError")
        if paper is not None:
            tally = confirmed.setdefault(confidence, [0, 0])
            tally[0] += 1
            tally[1] += judged == paper
        for name, label in (("paper", paper), ("answerer", answerer)):
            if label is not None:
                counts = scored[name]
                counts[0] += 1
                counts[1] += judged == label
                counts[2] += baseline == label
        if paper is not None and paper == answerer:
            counts = scored["agree"]
            counts[0] += 1
            counts[1] += judged == paper
            counts[2] += baseline == paper
        elif paper != answerer and status != "by answer":
            how = f"{answerer[1] if answerer else 'none'} -> {paper[1] if paper else status}"
            out["changed"][how] += 1
            examples.setdefault(how, f"{verdict.trace_id} {verdict.case_id}")
    for name, (cases, right, base) in scored.items():
        out[name] = {
            "cases": cases,
            "offline": share(right, cases),
            "answer_op_baseline": share(base, cases),
        }
    out["examples"] = examples
    out["confirmed_by_confidence"] = {str(c): n for c, n in sorted(confirmed.items())}
    return out


def measure(db: Any, settings: Any, system: str, convs: list[Any], folder: Path) -> dict[str, Any]:
    paths = {}
    for conv in convs:
        made = make_system(system, make_backend("offline", settings), settings=settings)
        run, path = run_conversation(made, conv, folder, prefix=PREFIX, clock=SimClock())
        assert path is not None
        paths[run.trace_id] = path
    load_paths(db, [str(p) for p in paths.values()], LoadOptions())
    try:
        store = AttributionStore(db)
        cases = [c for trace_id in paths for c in store.failed_cases(trace_id)]
        anchors = {case: store.anchor(*case) for case in cases}
        answer_ops = {
            case: anchor.answer.id
            for case, anchor in anchors.items()
            if anchor is not None and anchor.answer is not None
        }
        started = time.perf_counter()
        judge = ReplayJudge(TraceFiles(paths, settings))
        _, replayed = run_attribution(store, judge, Options(), cases=cases, write=False)
        replay_s = time.perf_counter() - started
        offline_judge = make_judge("offline", settings)
        _, judged = run_attribution(store, offline_judge, Options(), cases=cases, write=False)
    finally:
        for trace_id in paths:
            delete_trace(db, trace_id)
    offline: dict[Case, tuple[Label | None, float]] = {
        (v.trace_id, v.case_id): (
            (v.op_id, v.error_type) if v.op_id and v.error_type else None,
            round(v.confidence, 2),
        )
        for v in judged
    }
    result = compare([v for v in replayed if not v.error], offline, answer_ops)
    result["errors"] = sum(1 for v in replayed if v.error)
    result["replay_s"] = round(replay_s, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", default="1")
    parser.add_argument("--systems", default=",".join(REPLAYABLE_SYSTEMS))
    args = parser.parse_args()
    settings = load_settings()
    convs = load_locomo(args.data, Subset(conversations=tuple(args.conversations.split(","))))
    out: dict[str, Any] = {"conversations": args.conversations}
    with connect(settings) as db, tempfile.TemporaryDirectory() as folder:
        for system in args.systems.split(","):
            out[system] = measure(db, settings, system, convs, Path(folder) / system)
            print(system, json.dumps(out[system], default=str), flush=True)
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
