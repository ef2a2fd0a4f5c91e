"""Guided vs answer-only vs unguided on two systems of the tests' own, through the plugin.

    .venv/bin/python benchmarks/optimize_plugins.py --out /tmp/opt-plugins

The systems (``tests/optsystems``): ``household`` (rule-based, parameters, Optuna) and
``concierge`` (an OpenAI-compatible endpoint, prompts, GEPA; the endpoint is the tests'
scripted local server, whose replies follow the prompt, and the reflection model is the same
server). Each has weak defaults planted in knobs that specific operations read. Per system,
variant, seed (0 1 2) and budget (24 48 96 system runs): held-out and test accuracy before and
after, whether an accepted candidate ever lowered held-out accuracy, and the accepted
configuration applied by the system's own code outside memtrace (its ``evaluate``) on the test
ids, which must equal the reported test accuracy. Rows go to OUT/results.jsonl; the summary
(mean over seeds) is printed as JSON. Accuracy counts, not timings: it runs on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the systems and the scripted server live there

from fake_openai import FakeOpenAI  # noqa: E402
from optsystems import concierge, household  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from memtrace.db import connect  # noqa: E402
from memtrace.llm import LLMClient  # noqa: E402
from memtrace.optimize import (  # noqa: E402
    OptimizeOptions,
    OptimizeResult,
    parameter_proposer,
    prompt_proposer,
    run_optimization,
)
from memtrace.settings import LLMSettings, load_settings  # noqa: E402

SPLITS = {
    "household": (["h01", "h02", "h03", "h04"], ["h05", "h06", "h07", "h08"],
                  ["h09", "h10", "h11", "h12"]),
    "concierge": (["stay1", "stay2", "stay3"], ["stay4", "stay5", "stay6"],
                  ["stay7", "stay8", "stay9"]),
}  # fmt: skip
VARIANTS: dict[str, dict[str, Any]] = {
    "guided": {"guided": True},
    "answer-only": {"guided": False, "baseline": "answer-only"},
    "unguided": {"guided": False},
}


def held_out_drops(result: OptimizeResult) -> int:
    """Accepted candidates whose held-out accuracy is below the incumbent's before them."""
    return sum(
        1
        for r in result.rounds
        if r.candidate is not None
        and r.candidate.accepted
        and (r.candidate.heldout or 0.0) < r.heldout_before
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--systems", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budgets", type=int, nargs="+", default=[24, 48, 96])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--run-prefix", default="plugins")
    parser.add_argument(
        "--reflection-url",
        help="Opt-in: a real OpenAI-compatible endpoint as concierge's reflection model (e.g. "
        "the local 0.5B model of ../shared/tools/local-llm/serve.sh); the system stays on the "
        "scripted server. It runs end to end; no quality claim.",
    )
    parser.add_argument("--reflection-model", default="qwen2.5-0.5b")
    args = parser.parse_args()
    server = FakeOpenAI()
    server.responder = concierge.Replies()
    server.start()
    settings = LLMSettings(base_url=server.base_url, api_key=SecretStr("local"), model="m")
    if args.reflection_url:
        settings = LLMSettings(
            base_url=args.reflection_url,
            api_key=SecretStr("local"),
            model=args.reflection_model,
            timeout_seconds=600.0,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    try:
        with connect(load_settings()) as db:
            for name in args.systems:
                train, heldout, test = SPLITS[name]
                for budget in args.budgets:
                    for seed in args.seeds:
                        for variant in args.variants:
                            out = args.out / name / variant / f"b{budget}-s{seed}"
                            prompts = name == "concierge"
                            system = (
                                concierge.ConciergeSystem(server.base_url)
                                if prompts
                                else household.HouseholdSystem()
                            )
                            options = OptimizeOptions(
                                name,
                                f"{args.run_prefix}-{name}-{variant}-b{budget}-s{seed}",
                                mode="prompts" if prompts else "parameters",
                                rounds=12,
                                trials=2 if prompts else 4,
                                budget=budget,
                                seed=seed,
                                max_cases=1000,
                                **VARIANTS[variant],
                            )
                            proposer = (
                                prompt_proposer(LLMClient(settings, args.out / "llm-cache"))
                                if prompts
                                else parameter_proposer
                            )
                            result = run_optimization(
                                options, system, train, heldout, out, db=db, test=test,
                                proposer=proposer, classes_cache=args.out / name / "classes",
                            )  # fmt: skip
                            (accepted,) = system.write_config(result.config, out / "applied")
                            applied = (
                                concierge.evaluate(accepted, test, server.base_url)
                                if prompts
                                else household.evaluate(accepted, test)
                            )
                            row = {
                                "system": name,
                                "variant": variant,
                                "seed": seed,
                                "budget": budget,
                                "heldout": [result.initial["heldout"], result.final["heldout"]],
                                "test": [result.initial["test"], result.final["test"]],
                                "applied_test": applied,
                                "reproduced": applied == result.final["test"],
                                "heldout_drops": held_out_drops(result),
                                "spent": result.budget_spent,
                                "summary": result.summary(),
                            }
                            rows.append(row)
                            with (args.out / "results.jsonl").open("a") as log:
                                log.write(json.dumps(row) + "\n")
                            print(row["summary"], file=sys.stderr)
    finally:
        server.stop()
    summary: dict[str, Any] = {}
    for row in rows:
        key = f"{row['system']} {row['variant']} b{row['budget']}"
        summary.setdefault(key, []).append(row)
    print(
        json.dumps(
            {
                key: {
                    "heldout": [statistics.mean(r["heldout"][i] for r in group) for i in (0, 1)],
                    "test": [statistics.mean(r["test"][i] for r in group) for i in (0, 1)],
                    "heldout_drops": sum(r["heldout_drops"] for r in group),
                    "reproduced": all(r["reproduced"] for r in group),
                }
                for key, group in summary.items()
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
