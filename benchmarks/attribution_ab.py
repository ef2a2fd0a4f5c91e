"""Offline attribution, this tree against a baseline revision: speed, verdicts and accuracy.

    .venv/bin/python benchmarks/attribution_ab.py --bench /tmp/lc-200 --bench /tmp/mem0-40 \
        --baseline main --repeats 2

1. Loads every trace of each --bench directory (`memtrace bench make` output) under run-scoped
   trace ids, once; both sides read the same database.
2. Attributes every failed case of each set with the offline judge (gold evidence, linear walk,
   8 workers, nothing written), alternately with the baseline's code (`git archive REV memtrace`,
   run in a subprocess with it first on PYTHONPATH) and this tree's, in the order A B, B A, ...
   so that load from other users hits both sides.
3. Prints, per set: seconds per side and repeat, cases/s, the speed-up (baseline seconds / ours,
   best repeat of each), the cases whose verdict (op, error type) differs, and op / error-type
   accuracy against the labels (injected and all).
Everything it loaded is deleted at the end. Results: JSON on stdout, a summary on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from io import BytesIO
from pathlib import Path
from typing import Any

# Only modules every revision has are imported here: the worker runs this file with the
# baseline's memtrace first on the path. Our tree's modules are imported in main().
from memtrace.db import Database, connect
from memtrace.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
Verdicts = dict[str, list[str | None]]  # "trace_id case_id" -> [op id, error type]


def attribution_api(db: Database) -> tuple[Any, Any, Any]:
    """(reader, attribute_cases, Options) of the memtrace on the path. Revisions before the
    pipeline/store split (issue 10) had ``attribution.run`` and ``graph.TraceReader``, and their
    ``attribute_cases`` took the database where ours takes the store."""
    try:
        pipeline = importlib.import_module("memtrace.attribution.pipeline")
        store = importlib.import_module("memtrace.attribution.store").AttributionStore(db)
        return store, lambda *args, **kw: pipeline.attribute_cases(store, *args, **kw), pipeline
    except ModuleNotFoundError:
        run = importlib.import_module("memtrace.attribution.run")
        reader = importlib.import_module("memtrace.attribution.graph").TraceReader(db)
        return reader, lambda *args, **kw: run.attribute_cases(db, *args, **kw), run


def worker(trace_ids: list[str]) -> None:
    """Attribute every failed case of the traces; print the verdicts and the seconds it took."""
    judges = importlib.import_module("memtrace.attribution.judges")
    with connect(load_settings()) as db:
        reader, attribute_cases, module = attribution_api(db)
        cases = [case for t in trace_ids for case in reader.failed_cases(t)]
        started = time.perf_counter()
        verdicts = attribute_cases(judges.OfflineJudge(), cases, module.Options(), workers=8)
        seconds = time.perf_counter() - started
    failed = [v.error for v in verdicts if v.error]
    out = {
        "seconds": seconds,
        "errors": failed,
        "verdicts": {f"{v.trace_id} {v.case_id}": [v.op_id, v.error_type] for v in verdicts},
    }
    print(json.dumps(out))


def run_side(source: Path, trace_ids: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(source)}
    command = [sys.executable, __file__, "--worker", *trace_ids]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"worker on {source} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def export(revision: str, into: Path) -> Path:
    """The baseline's `memtrace` package (code and Cypher files) under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "memtrace"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def accuracy(db: Database, trace_ids: list[str], verdicts: Verdicts) -> dict[str, Any]:
    from attribution import labels  # the sibling benchmark: the same label query

    counts: dict[str, list[int]] = {}
    for trace_id in trace_ids:
        for label in labels(db, trace_id):
            op, error_type = verdicts.get(f"{trace_id} {label['case_id']}", [None, None])
            for key in ("all", str(label["source"])):
                row = counts.setdefault(key, [0, 0, 0])
                row[0] += 1
                row[1] += op == label["op_id"]
                row[2] += error_type == label["error_type"]
    return {k: {"labels": n, "op": o / n, "type": t / n} for k, (n, o, t) in counts.items()}


def compare(
    db: Database, name: str, trace_ids: list[str], sides: dict[str, Path], repeats: int
) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for repeat in range(repeats):
        order = list(sides) if repeat % 2 == 0 else list(reversed(sides))
        for side in order:
            runs[side].append(run_side(sides[side], trace_ids))
            print(f"{name} {side} run {repeat + 1}: {runs[side][-1]['seconds']:.1f} s, "
                  f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)  # fmt: skip
    base, ours = (runs[side] for side in sides)
    cases = len(ours[0]["verdicts"])
    differ = {
        key: {"baseline": base[0]["verdicts"].get(key), "ours": verdict}
        for key, verdict in ours[0]["verdicts"].items()
        if base[0]["verdicts"].get(key) != verdict
    }
    stable = all(
        run["verdicts"] == runs[side][0]["verdicts"] for side in sides for run in runs[side]
    )
    best = {side: min(run["seconds"] for run in runs[side]) for side in sides}
    return {
        "cases": cases,
        "seconds": {side: [round(run["seconds"], 2) for run in runs[side]] for side in sides},
        "cases_per_s_best": {side: cases / best[side] for side in sides},
        "speedup_best": best["baseline"] / best["ours"],
        "errors": {side: runs[side][0]["errors"][:3] for side in sides},
        "verdicts_stable_across_repeats": stable,
        "differing_verdicts": differ,
        "accuracy": {side: accuracy(db, trace_ids, runs[side][0]["verdicts"]) for side in sides},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", type=Path, action="append", required=True)
    parser.add_argument("--baseline", default="main", help="git revision [main]")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    scope = f"benchab{uuid.uuid4().hex[:6]}"
    report: dict[str, Any] = {"scope": scope, "baseline": args.baseline, "sets": {}}
    loaded: list[str] = []
    from attribution import load  # the sibling benchmark: the same loading

    from memtrace.admin import delete_trace

    with tempfile.TemporaryDirectory() as tmp, connect(load_settings()) as db:
        sides = {"baseline": export(args.baseline, Path(tmp)), "ours": ROOT}
        try:
            for directory in args.bench:
                files = sorted(directory.glob("*.jsonl"))
                trace_ids = load(db, files, f"{scope}-{directory.name}")[directory.name]
                loaded += trace_ids
                result = compare(db, directory.name, trace_ids, sides, args.repeats)
                report["sets"][directory.name] = result
                print(f"{directory.name}: {result['cases']} cases, "
                      f"{result['cases_per_s_best']['baseline']:.1f} -> "
                      f"{result['cases_per_s_best']['ours']:.1f} cases/s "
                      f"(x{result['speedup_best']:.1f}), "
                      f"{len(result['differing_verdicts'])} verdicts differ, accuracy "
                      f"{result['accuracy']}", file=sys.stderr)  # fmt: skip
        finally:
            for trace_id in loaded:
                delete_trace(db, trace_id)
    report["load_average"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2:])
    else:
        main()
