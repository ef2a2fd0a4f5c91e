"""Test accuracy against budget: the curves of `benchmarks/optimize.py` runs, as a table and a plot.

    .venv/bin/python benchmarks/optimize_curves.py OUT96/results.jsonl:96 \
        OUT48/results.jsonl:48 OUT24/results.jsonl:24 --plot curves.png

Each argument is a ``results.jsonl`` of `benchmarks/optimize.py` and the budget (system runs)
its runs were given. A point (system, variant, budget B) is the mean +- sample std over seeds of
the test accuracy (conversations 7-10: reported only, read by no decision) of the runs made
with budget B; where no run was made with B, the incumbent of a larger run after B / budget of
its runs (`test_at`) stands in, and the table says which seeds were run with B
(``made_with_this_budget``). For rounds of fixed size the
two are the same: the optimizer's choices do not depend on the budget left, except that a round
is cut short when the rest would not pay for its held-out check.

The goal it answers: a guided variant reaches unguided's final test accuracy (its mean at the
largest budget) with at most half the budget, and is never below unguided at any budget by more
than the spread (the larger of the two sample stds).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

GUIDED = ("counts", "headroom", "headroom-precise", "counts-major", "counts-largest")


def _stats(values: list[float]) -> dict[str, Any]:
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.mean(values), "std": spread, "values": values}


def curves(sources: list[tuple[Path, int]]) -> dict[str, Any]:
    """system -> variant -> budget -> stats (+ source), for every budget named on the command
    line. ``made_with_this_budget`` lists the seeds whose point is a run given that budget (the
    others stand in a larger run's incumbent)."""
    budgets = sorted({budget for _, budget in sources})
    runs: dict[tuple[str, str, int], dict[int, float]] = defaultdict(dict)  # -> seed -> accuracy
    stand_in: dict[tuple[str, str, int], dict[int, float]] = defaultdict(dict)
    for path, budget in sources:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            key = (row["system"], row["variant"])
            runs[(*key, budget)][row["seed"]] = row["final"]["test"]
            for share, accuracy in row["test_at"].items():
                at = round(budget * float(share.rstrip("%")) / 100)
                if at in budgets and at != budget:
                    stand_in[(*key, at)].setdefault(row["seed"], accuracy)
    out: dict[str, Any] = defaultdict(lambda: defaultdict(dict))
    for system, variant in sorted({(s, v) for s, v, _ in [*runs, *stand_in]}):
        for budget in budgets:
            made = runs.get((system, variant, budget), {})
            # per seed, a run made with this budget wins over a larger run's incumbent
            seeds = stand_in.get((system, variant, budget), {}) | made
            if not seeds:
                continue
            point = _stats([seeds[s] for s in sorted(seeds)])
            point["seeds"] = sorted(seeds)
            point["made_with_this_budget"] = sorted(made)
            out[system][variant][budget] = point
    return {system: dict(variants) for system, variants in out.items()}


def verdicts(table: dict[str, Any]) -> dict[str, Any]:
    """Per system and guided variant: the goal's two conditions."""
    out: dict[str, Any] = {}
    for system, variants in table.items():
        unguided = variants.get("unguided")
        if not unguided:
            continue
        largest = max(unguided)
        target = unguided[largest]["mean"]
        for variant in (v for v in variants if v in GUIDED):
            points = variants[variant]
            reached = [b for b in sorted(points) if points[b]["mean"] >= target]
            worst = min(
                (
                    points[b]["mean"]
                    - unguided[b]["mean"]
                    + max(points[b]["std"], unguided[b]["std"])
                    for b in points
                    if b in unguided
                ),
                default=None,
            )
            out[f"{system}/{variant}"] = {
                "unguided_final": target,
                "first_budget_reaching_it": reached[0] if reached else None,
                "half_budget": largest / 2,
                "reaches_with_half": bool(reached) and reached[0] <= largest / 2,
                "never_below_by_more_than_spread": worst is not None and worst >= 0,
            }
    return out


def plot(table: dict[str, Any], path: Path) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5 * len(table), 4), layout="constrained")
    axes = figure.subplots(1, len(table), squeeze=False)[0]
    for ax, (system, variants) in zip(axes, sorted(table.items()), strict=True):
        for variant, points in sorted(variants.items()):
            budgets = sorted(points)
            ax.errorbar(
                budgets,
                [points[b]["mean"] for b in budgets],
                yerr=[points[b]["std"] for b in budgets],
                marker="o",
                capsize=3,
                label=variant,
            )
        ax.set_title(f"{system}: test accuracy (conversations 7-10)")
        ax.set_xlabel("budget (system runs)")
        ax.set_ylabel("test accuracy, mean +- std over seeds")
        ax.legend()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", metavar="RESULTS.jsonl:BUDGET")
    parser.add_argument("--plot", type=Path, help="write the curves as a PNG")
    args = parser.parse_args()
    sources = []
    for item in args.results:
        path, _, budget = item.rpartition(":")
        if not path or not budget.isdigit():
            parser.error(f"{item!r}: expected RESULTS.jsonl:BUDGET")
        sources.append((Path(path), int(budget)))
    table = curves(sources)
    if args.plot:
        plot(table, args.plot)
    print(json.dumps({"curves": table, "goal": verdicts(table)}, indent=2, allow_nan=False))


if __name__ == "__main__":
    main()
