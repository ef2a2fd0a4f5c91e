"""The offline judge against labels, by system, with a reliability table of its confidence.

    python benchmarks/judge_calibration.py --prefix bench-nat- --labels replay \\
        [--conversations 1,3,5] [--json out.json]

Reads traces already loaded (e.g. by `memtrace bench natural --trace-prefix bench-nat-`, whose
labels are executed counterfactuals, or `bench make` + `memtrace load`, planted labels): every
complete trace whose id starts with --prefix (and ends in ``-locomo-N`` for N in
--conversations, when given). Attributes every failed case with the offline judge (gold
evidence, linear walk) under a run id of its own, scores it against the labels of --labels,
deletes the run, and prints:

* per system: labelled cases, op and op+type accuracy (a verdict is *right* when both match);
* a reliability table: per confidence bucket the cases, their mean confidence and the share
  right; the expected calibration error (ECE: the bucket-size-weighted mean of
  |share right - mean confidence|) and the share right among cases at confidence >= 0.9.

It uses only the attribution API every revision since the pipeline split has, so the same
script measures another checkout's judge: ``PYTHONPATH=<checkout> python benchmarks/...``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import uuid
from collections.abc import Sequence
from typing import Any

import pandas as pd

from memtrace.attribution.pipeline import Options, evaluation_rows, run_attribution
from memtrace.attribution.registry import make_judge
from memtrace.attribution.store import AttributionStore
from memtrace.db import connect
from memtrace.settings import load_settings

BUCKETS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)  # [lo, hi); the last holds 1.0
DETAIL = ["trace_id", "case_id", "label_source", "label_op", "label_type", "attr_op", "error_type"]
DETAIL += ["confidence", "right"]
_TRACE = re.compile(r"^(?P<system>.+)-locomo-(?P<conversation>\d+)$")


def reliability(frame: pd.DataFrame) -> tuple[pd.DataFrame, float, float, int]:
    """(table per bucket, ECE, share right at confidence >= 0.9, cases at >= 0.9) of a frame
    with ``confidence`` and ``right`` columns."""
    rows: list[dict[str, Any]] = []
    for lo, hi in itertools.pairwise(BUCKETS):
        part = frame[(frame["confidence"] >= lo) & (frame["confidence"] < hi)]
        if len(part):
            rows.append({
                "bucket": f"[{lo:.1f}, {min(hi, 1.0):.1f}{']' if hi > 1 else ')'}",
                "cases": len(part),
                "mean_confidence": float(part["confidence"].mean()),
                "right": float(part["right"].mean()),
            })  # fmt: skip
    table = pd.DataFrame(rows)
    n = len(frame)
    ece = (
        float(sum(r["cases"] / n * abs(r["right"] - r["mean_confidence"]) for r in rows))
        if n
        else float("nan")
    )
    high = frame[frame["confidence"] >= 0.9]
    return table, ece, float(high["right"].mean()) if len(high) else float("nan"), len(high)


def summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Accuracy and calibration of one set of rows (``right``: op and type match)."""
    table, ece, high, n_high = reliability(frame)
    injected = frame[frame["label_source"] == "injected"]  # bench make's planted faults
    return {
        "cases": len(frame),
        "op_accuracy": float(frame["op_right"].mean()),
        "op_type_accuracy": float(frame["right"].mean()),
        "injected_cases": len(injected),
        "injected_op_type_accuracy": float(injected["right"].mean()) if len(injected) else None,
        "ece": ece,
        "right_at_0.9": high,
        "cases_at_0.9": n_high,
        "table": table.to_dict(orient="records"),
    }


def traces(store: AttributionStore, prefix: str, conversations: Sequence[str]) -> list[str]:
    found = sorted({t for t, _ in store.failed_cases(None) if t.startswith(prefix)})
    if conversations:
        found = [
            t for t in found
            if (m := _TRACE.match(t[len(prefix):])) and m["conversation"] in conversations
        ]  # fmt: skip
    return found


def measure(prefix: str, labels: str, conversations: Sequence[str]) -> dict[str, Any]:
    settings = load_settings()
    run_id = f"calibration-{uuid.uuid4().hex[:8]}"
    with connect(settings) as db:
        store = AttributionStore(db)
        trace_ids = traces(store, prefix, conversations)
        if not trace_ids:
            raise SystemExit(f"no complete trace with failed cases starts with {prefix!r}")
        cases = [c for c in store.failed_cases(None) if c[0] in trace_ids]
        try:
            _, verdicts = run_attribution(
                store, make_judge("offline", settings), Options(), cases=cases, run_id=run_id,
                workers=4,
            )  # fmt: skip
            rows = evaluation_rows(store, run_id, None, labels)  # type: ignore[arg-type]
        finally:
            store.delete_attributions(run_id)
    confidence = {(v.trace_id, v.case_id): v.confidence for v in verdicts}
    rows = rows[rows["trace_id"].isin(trace_ids)].copy()
    rows["confidence"] = [
        confidence.get((t, c), 0.0) for t, c in zip(rows["trace_id"], rows["case_id"], strict=True)
    ]
    rows["op_right"] = rows["attr_op"] == rows["label_op"]
    rows["right"] = rows["op_right"] & (rows["error_type"] == rows["label_type"])
    rows["system"] = [
        m["system"] if (m := _TRACE.match(t[len(prefix):])) else t for t in rows["trace_id"]
    ]  # fmt: skip
    return {
        "prefix": prefix,
        "labels": labels,
        "conversations": list(conversations),
        "traces": len(trace_ids),
        **summary(rows),
        "systems": {str(system): summary(part) for system, part in rows.groupby("system")},
        "cases_detail": rows[DETAIL].to_dict(orient="records"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prefix", required=True, help="trace ids starting with this")
    parser.add_argument("--labels", default="replay", help="label source (replay, planted, ...)")
    parser.add_argument("--conversations", default="", help="only -locomo-N traces, N in these")
    parser.add_argument("--json", dest="json_path", help="write the full result here")
    args = parser.parse_args()
    conversations = [c for c in args.conversations.split(",") if c]
    result = measure(args.prefix, args.labels, conversations)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=1, default=str)
    print(f"{result['cases']} labelled cases ({args.labels}) in {result['traces']} traces")
    for name, entry in [*sorted(result["systems"].items()), ("all", result)]:
        planted = (
            f", planted faults {entry['injected_op_type_accuracy']:.1%} of "
            f"{entry['injected_cases']}"
            if entry["injected_cases"]
            else ""
        )
        print(
            f"  {name}: {entry['cases']} cases, op {entry['op_accuracy']:.1%}, op+type "
            f"{entry['op_type_accuracy']:.1%}{planted}, ECE {entry['ece']:.3f}, right at "
            f">= 0.9: {entry['right_at_0.9']:.1%} of {entry['cases_at_0.9']}"
        )
    print("| confidence | cases | mean confidence | right |")
    print("|---|---|---|---|")
    for row in result["table"]:
        print(f"| {row['bucket']} | {row['cases']} | {row['mean_confidence']:.3f} | "
              f"{row['right']:.1%} |")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
