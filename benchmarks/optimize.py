"""Optimizer routed by headroom vs by counts vs unguided, offline parameters, LoCoMo, seeds.

    .venv/bin/python benchmarks/optimize.py --systems mem0 rag long-context --seeds 0 1 2 3 4 \
        --out /tmp/opt-bench

A fixed split of ../shared/data/locomo/locomo10.json (``SPLIT``, the one docs/optimize.md uses):
train = conversations 1-3 (attribution, what-if replays, trial selection), held-out = 4-6
(acceptance only), test = 7-10 (the project's held-out conversations: only reported, the
incumbent's accuracy after each round, outside the budget; no proposal, selection or acceptance
reads them, and nothing in the optimizer or this benchmark was tuned on their figures).
Per system and seed, with the same budget of system runs (what-if replays included; 96 by
default: the initial scores (6) and five rounds of a traced train run (3), 4 trials (12) and a
held-out check (3), so the first round ends at 25%) and the same trials per round (Optuna TPE,
seeded), rounds until the budget is spent:
  (a) initial: the default configuration;
  (b) counts: attribute the incumbent's failed train cases (offline judge, every failure), group
      them into failure classes, search the parameters the blamed operations of every
      optimizable class read (the optimizer's default);
  (c) headroom: the same classes, each replayed with its blamed operations repaired on the train
      traces (memtrace.patterns.headroom); only the parameters of classes whose repair rescues
      answers are searched; the replays are charged to the budget;
  (d) unguided: the same search over every parameter with a search range, no attribution;
  (e) answer-only: the paper's baseline (MemTrace's --disable-memtrace): no attribution, every
      failure routed to the answer step's knobs (answer_items in this mode).
Extra variants: headroom-precise (as headroom, but a repaired search keeps only the results
holding the evidence: the oracle of a precise retrieval, which a smaller top_k moves towards),
counts-major (classes with >= 10% of the failures), counts-largest (the largest).
Every variant accepts a candidate only if train accuracy rises and held-out does not drop.

Per run: final test and held-out accuracy, and both of the incumbent after 25%, 50% and 100% of
the budget (sample efficiency: the incumbent at the end of the last round that had spent at most
that share). Rows are appended to OUT/results.jsonl as runs finish (a run directory resumes
from its caches), and the summary (mean / sample std over seeds) is printed as JSON at the end.
The classes (and headroom) of a configuration are computed once and shared between seeds and
variants (every failure is attributed, so they do not depend on the seed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from memtrace.db import connect
from memtrace.optimize import OptimizeOptions, OptimizeResult, run_optimization
from memtrace.optimize.reference import ReferenceSystem
from memtrace.settings import load_settings
from memtrace.systems.locomo import load_locomo
from memtrace.systems.offline import OfflineBackend

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
# conversations 7-10 are the project's held-out data: never train or acceptance (a unit test
# checks), only the reported test figures
SPLIT = {"train": (1, 2, 3), "heldout": (4, 5, 6), "test": (7, 8, 9, 10)}
VARIANTS: dict[str, dict[str, Any]] = {
    "counts": {"guided": True},
    "headroom": {"guided": True, "route_by": "headroom"},
    "unguided": {"guided": False},
    "answer-only": {"guided": False, "baseline": "answer-only"},
    "headroom-precise": {"guided": True, "route_by": "headroom", "search_repair": "precise"},
    "counts-major": {"guided": True, "min_share": 0.1},
    "counts-largest": {"guided": True, "focus": 1},
}
SHARES = (0.25, 0.5, 1.0)


def accuracy_at(result: OptimizeResult, budget: int, share: float, split: str) -> float:
    """``split`` accuracy ("heldout" or "test") of the incumbent after ``share`` of the budget:
    the incumbent at the end of the last round that had spent at most that much (the initial
    one before)."""
    accuracy = result.initial[split]
    for summary in result.rounds:
        if summary.budget_spent <= share * budget + 1e-9:
            after = summary.heldout_after if split == "heldout" else summary.test_after
            assert after is not None
            accuracy = after
    return accuracy


def row_of(
    system: str, variant: str, seed: int, result: OptimizeResult, budget: int, seconds: float
) -> dict[str, Any]:
    return {
        "system": system,
        "variant": variant,
        "seed": seed,
        "initial": result.initial,
        "final": result.final,
        **{
            f"{split}_at": {
                f"{share:.0%}": accuracy_at(result, budget, share, split) for share in SHARES
            }
            for split in ("test", "heldout")
            if split in result.initial  # --dev-only: no test split
        },
        "accepted": sum(bool(r.candidate and r.candidate.accepted) for r in result.rounds),
        "targets": [r.targets for r in result.rounds],
        "classes": [
            [
                {"key": f"{c['system']}/{c['op_name']}/{c['error_type']}"}
                | {k: c.get(k) for k in ("cases", "headroom", "rescued", "broken", "targets")}
                | {"why_not": c.get("why_not")}
                for c in r.classes
            ]
            for r in result.rounds
        ],
        "changes": result.as_dict()["changes"],
        "budget_spent": result.budget_spent,
        "replays": result.replays,
        "stopped": result.stopped,
        "seconds": round(seconds, 1),
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in sorted({r["system"] for r in rows}):
        mine = [r for r in rows if r["system"] == system]
        summary: dict[str, Any] = {"initial": mine[0]["initial"]}
        for variant in dict.fromkeys(r["variant"] for r in mine):
            runs = [r for r in mine if r["variant"] == variant]

            def stats(values: list[float]) -> dict[str, Any]:
                spread = statistics.stdev(values) if len(values) > 1 else 0.0
                return {"mean": statistics.mean(values), "std": spread, "values": values}

            summary[variant] = {"seeds": [r["seed"] for r in runs]} | {
                f"{split}{suffix}": value
                for split in ("test", "heldout")
                if split in runs[0]["final"]
                for suffix, value in (
                    ("", stats([r["final"][split] for r in runs])),
                    (
                        "_at",
                        {
                            share: stats([r[f"{split}_at"][share] for r in runs])
                            for share in runs[0][f"{split}_at"]
                        },
                    ),
                )
            }
            summary[variant]["replays"] = [r["replays"] for r in runs]
        out[system] = summary
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", nargs="+", default=["mem0"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--rounds", type=int, default=6, help="at most: the budget decides")
    parser.add_argument("--trials", type=int, default=4, help="per round")
    parser.add_argument("--budget", type=int, default=96, help="system runs, replays included")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=["counts", "headroom", "unguided"],
        choices=list(VARIANTS),
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--dev-only",
        action="store_true",
        help="Report no test split: conversations 7-10 are not run at all (development).",
    )
    parser.add_argument(
        "--run-prefix",
        default="bench",
        help="Of the optimization and attribution run ids in Neo4j; a new experiment needs a "
        "new one (an attribution run id reused over other traces would mix their cases).",
    )
    parser.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        metavar="RESULTS",
        help="Run nothing: print the summary of these results.jsonl files (benchmarks split "
        "over processes, e.g. by seed).",
    )
    args = parser.parse_args()
    if args.summarize:
        found = [
            json.loads(line)
            for path in args.summarize
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        print(json.dumps(summarize(found), indent=2, allow_nan=False))
        return

    convs = load_locomo(DATA)
    train, heldout, test = ([str(n) for n in SPLIT[s]] for s in SPLIT)
    if args.dev_only:
        test = []
    budget = args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "results.jsonl"
    rows: list[dict[str, Any]] = []
    with connect(load_settings()) as db:
        # seed-major: a stopped benchmark still has every variant of the seeds it finished
        for seed in args.seeds:
            for system in args.systems:
                for variant in args.variants:
                    started = time.perf_counter()
                    options = OptimizeOptions(
                        system,
                        f"{args.run_prefix}-{system}-{variant}-s{seed}",
                        rounds=args.rounds,
                        trials=args.trials,
                        budget=budget,
                        seed=seed,
                        max_cases=10_000,
                        **VARIANTS[variant],
                    )
                    result = run_optimization(
                        options,
                        ReferenceSystem(system, OfflineBackend(), convs),
                        train,
                        heldout,
                        args.out / system / variant / f"seed-{seed}",
                        db=db,
                        classes_cache=args.out / system / "classes",
                        test=test,
                    )
                    row = row_of(
                        system, variant, seed, result, budget, time.perf_counter() - started
                    )
                    rows.append(row)
                    with log.open("a", encoding="utf-8") as out:
                        out.write(json.dumps(row, allow_nan=False) + "\n")
                    print(json.dumps({k: row[k] for k in list(row)[:7]}), file=sys.stderr)
    results = {
        "split": SPLIT,
        "rounds": args.rounds,
        "trials_per_round": args.trials,
        "budget_runs": budget,
        "summary": summarize(rows),
    }
    print(json.dumps(results, indent=2, allow_nan=False))


if __name__ == "__main__":
    main()
