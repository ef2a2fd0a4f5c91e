"""Attribution-guided vs unguided parameter optimization on LoCoMo, offline, several seeds.

    .venv/bin/python benchmarks/optimize.py --system mem0 --seeds 0 1 2 --out /tmp/opt-bench

A fixed split of ../shared/data/locomo/locomo10.json: train = conversations 2 and 9 (feedback
and selection), held-out = the other eight (acceptance only). Per seed, with the same budget of
system runs and the same number of trials (Optuna TPE, seeded):
  (a) initial: the default configuration;
  (b) guided: attribute the incumbent's failed train cases (offline judge, every failure), group
      them into failure classes, search only the parameters the blamed operations read;
  (b1) guided, largest class: only the parameters of the largest optimizable class;
  (b2) guided, major classes: only the parameters of classes holding >= 10% of the failures;
  (c) unguided: the same search over every parameter with a search range, no attribution.
Every variant accepts a candidate only if train accuracy rises and held-out does not drop.
Prints held-out accuracy per variant and seed, and mean / sample std over seeds, as JSON.
The classes of a configuration are attributed once and shared between seeds and variants.
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
from memtrace.optimize import OptimizeOptions, run_optimization
from memtrace.settings import load_settings
from memtrace.systems.locomo import load_locomo
from memtrace.systems.offline import OfflineBackend

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
TRAIN = (2, 9)
VARIANTS: dict[str, dict[str, Any]] = {
    "guided": {"guided": True},
    "guided-largest-class": {"guided": True, "focus": 1},
    "guided-major-classes": {"guided": True, "min_share": 0.1},
    "unguided": {"guided": False},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--system", default="mem0")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trials", type=int, default=6, help="per round")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=["guided", "guided-major-classes", "unguided"],
        choices=list(VARIANTS),
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    convs = load_locomo(DATA)
    train = [c for c in convs if c.number in TRAIN]
    heldout = [c for c in convs if c.number not in TRAIN]
    # initial scores + per round: the traced train run, the trials, one held-out check
    budget = (
        len(train) + len(heldout) + args.rounds * (len(train) * (args.trials + 1) + len(heldout))
    )
    results: dict[str, Any] = {
        "system": args.system,
        "train": list(TRAIN),
        "heldout": [c.number for c in heldout],
        "rounds": args.rounds,
        "trials_per_round": args.trials,
        "budget_runs": budget,
        "runs": [],
    }
    with connect(load_settings()) as db:
        for seed in args.seeds:
            for variant in args.variants:
                started = time.perf_counter()
                options = OptimizeOptions(
                    args.system,
                    f"bench-{args.system}-{variant}-s{seed}",
                    rounds=args.rounds,
                    trials=args.trials,
                    budget=budget,
                    seed=seed,
                    max_cases=10_000,
                    **VARIANTS[variant],
                )
                result = run_optimization(
                    options,
                    train,
                    heldout,
                    args.out / args.system / variant / f"seed-{seed}",
                    backend=OfflineBackend(),
                    db=db,
                    classes_cache=args.out / args.system / "classes",
                )
                row = {
                    "variant": variant,
                    "seed": seed,
                    "initial": result.initial,
                    "final": result.final,
                    "accepted": sum(
                        bool(r.candidate and r.candidate.accepted) for r in result.rounds
                    ),
                    "targets": [r.targets for r in result.rounds],
                    "budget_spent": result.budget_spent,
                    "seconds": round(time.perf_counter() - started, 1),
                }
                results["runs"].append(row)
                print(json.dumps(row), file=sys.stderr)
    initial = results["runs"][0]["initial"]["heldout"]
    summary: dict[str, Any] = {"initial": {"mean": initial, "std": 0.0}}
    for variant in args.variants:
        values = [r["final"]["heldout"] for r in results["runs"] if r["variant"] == variant]
        summary[variant] = {
            "mean": statistics.mean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "values": values,
        }
    results["heldout_accuracy"] = summary
    print(json.dumps(results, indent=2, allow_nan=False))


if __name__ == "__main__":
    main()
