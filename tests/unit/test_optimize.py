"""The optimizer's pure parts and its loop on the offline systems (no database)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest

from memtrace.errors import ConfigError
from memtrace.optimize import OptimizeOptions, RoundSummary, accept, loop, route, run_optimization
from memtrace.optimize.loop import Trial
from memtrace.optimize.plugin import Configuration
from memtrace.optimize.reference import ReferenceSystem
from memtrace.optimize.routing import Routing
from memtrace.optimize.scoring import Budget, Evaluator, Score
from memtrace.patterns import CLASS_COLUMNS
from memtrace.patterns.classes import class_key
from memtrace.systems.config import read_config
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.prompts import QUESTION_ANSWERING


def class_row(
    op_name: str, error_type: str, cases: int, prompts: list[str], parameters: list[str]
) -> dict[str, Any]:
    ids = [f"locomo-qa-1-{i}" for i in range(cases)]
    return {
        "system": "mem0",
        "op_name": op_name,
        "op_kind": "other",
        "error_type": error_type,
        "stage": "other",
        "inputs": [f"{n}@1" for n in prompts + parameters],
        "prompts": prompts,
        "parameters": parameters,
        "optimizable": bool(prompts or parameters),
        "cases": cases,
        "share_of_failures": cases / 20,
        "share_of_executions": 0.1,
        "median_confidence": 0.9,
        "example_cases": ids[:3],
        "case_ids": ids,
        "trace_ids": ["t"],
    }


CLASSES = pd.DataFrame(
    [
        class_row(
            "memory_system.search_vector_store", "RetrievalError", 9, [], ["retriever", "top_k"]
        ),
        class_row("question-answering", "ResponseError", 6, [QUESTION_ANSWERING], []),
        class_row(
            "memory_system.update_memory_decision",
            "UpdateError",
            3,
            ["memory-update-decision-prompt"],
            ["none_threshold", "update_threshold"],
        ),
        class_row(
            "llm-judge", "LLMAsAJudgeError", 1, ["locomo-judge-prompt"], ["judge_f1_threshold"]
        ),
        class_row("memory_system.add_to_vector_store", "ExtractionError", 1, [], []),
    ],
    columns=list(CLASS_COLUMNS),
)


def test_routing_sends_each_class_to_what_its_blamed_operation_read() -> None:
    routing = route(CLASSES, "parameters")
    assert [c.targets for c in routing.classes] == [
        ("top_k",),  # the retriever has no search range
        (),
        ("none_threshold", "update_threshold"),
        (),  # never the judge
        (),
    ]
    assert routing.targets() == ("top_k", "none_threshold", "update_threshold")
    assert routing.targets(largest=1) == ("top_k",)
    # shares of failures: 9/20, 6/20, 3/20, ...: the update class is below 20%
    assert routing.targets(min_share=0.2) == ("top_k",)
    assert routing.targets(min_share=0.15) == ("top_k", "none_threshold", "update_threshold")
    why = {c.op_name: c.why_not for c in routing.unoptimizable}
    assert (
        why["question-answering"] == "the blamed operation reads only prompts; run the prompt mode"
    )
    assert "judge" in why["llm-judge"]
    assert (
        why["memory_system.add_to_vector_store"]
        == "the blamed operation reads no prompt or parameter"
    )
    assert [c.key for c in routing.motivating("none_threshold")] == [
        "mem0/memory_system.update_memory_decision/UpdateError"
    ]

    prompts = route(CLASSES, "prompts")
    assert prompts.targets() == (QUESTION_ANSWERING, "memory-update-decision-prompt")
    assert "locomo-judge-prompt" not in prompts.targets()
    assert route(CLASSES.iloc[0:0], "parameters").targets() == ()


def test_routing_by_headroom_shares_the_positive_headroom_and_says_why_not() -> None:
    search, answer, update = [class_key(row) for row in CLASSES.to_dict("records")][:3]
    headroom = pd.DataFrame(
        [
            {"key": search, "net": 3, "rescued": 4, "broken": 1, "why": "4 rescued, 1 broken"},
            {"key": update, "net": 1, "rescued": 1, "broken": 0, "why": ""},
            {"key": answer, "net": 0, "rescued": 0, "broken": 0, "why": "nothing changed"},
        ]
    )
    routing = route(CLASSES, "parameters", headroom=headroom)
    assert (routing.mode, routing.by) == ("parameters", "headroom")
    assert [(c.op_name, c.headroom) for c in routing.classes[:3]] == [
        ("memory_system.search_vector_store", 3),
        ("memory_system.update_memory_decision", 1),
        ("question-answering", 0),
    ]
    first, second, third = routing.classes[:3]
    assert (routing.share(first), routing.share(second), routing.share(third)) == (0.75, 0.25, 0)
    assert (first.headroom_why, second.headroom_why) == ("4 rescued, 1 broken", "")
    unmeasured = {c.op_name: c for c in routing.classes if c.headroom is None}
    assert set(unmeasured) == {"llm-judge", "memory_system.add_to_vector_store"}
    assert unmeasured["llm-judge"].why_not == (
        "no search range for judge_f1_threshold (the judge and the retriever stay fixed)"
    )
    why = {c.op_name: c.why_not for c in route(CLASSES, "prompts", headroom=headroom).classes}
    assert why["memory_system.search_vector_store"] == (
        "the blamed operation reads only parameters; run the parameter mode"
    )
    assert why["llm-judge"] == (
        "locomo-judge-prompt may not be rewritten (the judge's prompt stays fixed)"
    )
    unknown = route(CLASSES, "parameters", headroom=headroom.iloc[0:0])
    assert unknown.classes[0].why_not == "no trials: its headroom is unknown (not measured)"
    by_cases = route(CLASSES, "parameters")
    assert by_cases.share(by_cases.classes[0]) == 9 / 20  # by cases: the share of failures


def test_a_missing_headroom_reason_reads_as_none_not_nan() -> None:
    """A what-if row without a ``why`` cell (NaN in the frame) reads as no reason given."""
    search, answer = [class_key(row) for row in CLASSES.to_dict("records")][:2]
    headroom = pd.DataFrame(
        [
            {"key": search, "net": 2, "rescued": 2, "broken": 0, "why": "2 rescued"},
            {"key": answer, "net": 0},
        ]
    )
    routing = route(CLASSES, "parameters", headroom=headroom)
    measured = {c.op_name: c for c in routing.classes if c.headroom is not None}
    assert measured["memory_system.search_vector_store"].headroom_why == "2 rescued"
    assert measured["question-answering"].headroom_why == ""
    prompts = {c.op_name: c for c in route(CLASSES, "prompts", headroom=headroom).classes}
    assert prompts["question-answering"].why_not == "no trials: no headroom (net +0 cases)"


def test_a_stale_memory_class_goes_where_its_replay_shows() -> None:
    """Both memories reached the answer: when repairing the blamed extraction rescues none of
    the class's cases, the answer prompt decides; when it rescues some (the newer memory was
    not stored), the extraction's instructions do."""
    stale = {
        **class_row(
            "memory_system.extract_memories", "UpdateError", 2, ["custom-instructions"], []
        ),
        "system": "mem0-lib",
        "failure_mode": "stale-memory",
    }
    classes = pd.DataFrame([stale], columns=list(CLASS_COLUMNS))
    key = class_key(classes.to_dict("records")[0])
    prompts = ("custom-instructions", QUESTION_ANSWERING)

    def routed(rescued: int | None) -> Routing:
        replayed = pd.DataFrame([{"key": key, "rescued": rescued, "net": rescued}])
        return route(
            classes,
            "prompts",
            prompts=prompts,
            answer_prompts=(QUESTION_ANSWERING,),
            stale=replayed,
        )

    (answer,) = routed(0).classes
    assert answer.targets == (QUESTION_ANSWERING,) and "rescues none" in answer.rerouted
    (extraction,) = routed(2).classes
    assert extraction.targets == ("custom-instructions",) and not extraction.rerouted
    (unknown,) = routed(None).classes  # not replayed: what the blamed operation read
    assert unknown.targets == ("custom-instructions",)
    (parameters,) = route(classes, "parameters", stale=None).classes
    assert parameters.failure_mode == "stale-memory" and parameters.targets == ()


def test_acceptance_needs_a_train_gain_and_no_held_out_loss() -> None:
    assert accept((0.5, 0.4), (0.6, 0.4))[0]
    assert accept((0.5, 0.4), (0.6, 0.45))[0]
    rejected, reason = accept((0.5, 0.4), (0.6, 0.39))
    assert not rejected and "held-out accuracy dropped" in reason
    rejected, reason = accept((0.5, 0.4), (0.5, 0.9))
    assert not rejected and "train accuracy did not rise" in reason


class TableFeedback:
    """Attribution feedback from a hand-made class table (no database)."""

    def __init__(self, classes: pd.DataFrame) -> None:
        self.frame = classes
        self.calls = 0

    def classes(self, config: Configuration) -> pd.DataFrame:
        self.calls += 1
        return self.frame


class ScriptedEvaluator(Evaluator):
    """Scores from a table keyed by top_k (train, held-out, test accuracy out of 100 cases);
    the base class charges the budget."""

    TABLE: ClassVar[dict[int, tuple[int, int, int]]] = {
        10: (40, 40, 35),
        3: (60, 30, 90),
        20: (55, 45, 20),
        25: (70, 50, 45),
    }
    SPLITS: ClassVar[tuple[str, ...]] = ("train", "heldout", "test")

    def _evaluate(self, config: Configuration, split: str) -> Score:
        correct = self.TABLE[int(config.params["top_k"])][self.SPLITS.index(split)]
        return self.cached(config, split) or self.remember(config, split, Score(correct, 100))


def scripted_proposer(*values: int) -> Any:
    def factory(
        evaluator: Evaluator, feedback: Any, options: OptimizeOptions, budget: Budget
    ) -> Any:
        def propose(
            incumbent: Configuration, targets: Sequence[str], routing: Routing | None, number: int
        ) -> list[Trial]:
            config = incumbent.with_params(top_k=values[number - 1])
            return [(config, evaluator.score(config, "train"))]

        return propose

    return factory


def mem0() -> ReferenceSystem:
    """The reference mem0, offline, on the shipped sample (a plugin like any other)."""
    return ReferenceSystem("mem0", OfflineBackend(), load_locomo(SAMPLE_PATH))


def scripted_run(tmp_path: Path, budget: int = 100, test: bool = False, **kwargs: Any) -> Any:
    system = mem0()
    ids = system.case_ids()
    options = OptimizeOptions("mem0", "unit", rounds=3, trials=1, budget=budget, guided=False)
    splits = {"train": ids[:1], "heldout": ids[1:]}
    if test:
        splits = {"train": ids[:1], "heldout": ids[1:2], "test": ids[2:]}
    spent = Budget(budget)
    evaluator = ScriptedEvaluator(system, splits, spent, tmp_path / "evaluations.jsonl")
    proposer = scripted_proposer(3, 20, 25)(evaluator, None, options, spent)
    return loop.optimize(options, evaluator, proposer, tmp_path, budget=spent, **kwargs)


def test_a_held_out_worse_candidate_is_rejected_a_better_one_kept_both_recorded(
    tmp_path: Path,
) -> None:
    result = scripted_run(tmp_path)
    decisions = [(r.candidate.accepted, r.candidate.reason.split(" (")[0]) for r in result.rounds]
    assert decisions == [
        (False, "held-out accuracy dropped"),  # top_k 3: train 60 but held-out 30 < 40
        (True, "train 0.4000 -> 0.5500, held-out 0.4000 -> 0.4500"),
        (True, "train 0.5500 -> 0.7000, held-out 0.4500 -> 0.5000"),
    ]
    assert result.final == {"train": 0.7, "heldout": 0.5}
    updates = json.loads((tmp_path / "update_results.json").read_text())
    assert {k: (v["accepted"], v["derived_from"]) for k, v in updates.items()} == {
        "top_k@2": (False, "top_k@1"),
        "top_k@3": (True, "top_k@1"),
        "top_k@4": (True, "top_k@3"),
    }
    accepted = read_config(
        tmp_path / "accepted" / "prompts.toml", tmp_path / "accepted" / "params.toml"
    )
    assert mem0().configuration(accepted) == result.config and accepted.params.top_k == 25
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["changes"] == {"parameter:top_k": [10, 25]}


def test_the_test_split_is_reported_after_each_round_decides_nothing_and_costs_no_budget(
    tmp_path: Path,
) -> None:
    plain = scripted_run(tmp_path / "plain", budget=100)
    # train and held-out each one conversation here; the test split's scores (top_k 3 would
    # win on it by far) must not change a decision
    result = scripted_run(tmp_path / "test", budget=100, test=True)
    assert [r.candidate.accepted for r in result.rounds] == [
        r.candidate.accepted for r in plain.rounds
    ]
    assert result.config == plain.config
    assert result.initial["test"] == 0.35 and result.final["test"] == 0.45
    assert [r.test_after for r in result.rounds] == [0.35, 0.2, 0.45]
    # initial 2 runs, then per round 1 trial + 1 held-out check: the test split is not charged
    assert result.budget_spent == 2 + 3 * 2
    with pytest.raises(ValueError, match="reported"):
        ScriptedEvaluator(mem0(), {"test": []}, Budget(1), tmp_path / "e.jsonl").score(
            mem0().configuration(), "test"
        )


def test_the_budget_bounds_every_run(tmp_path: Path) -> None:
    # 1 train + 2 held-out conversations: initial 3, then per round 1 trial + 2 held-out
    result = scripted_run(tmp_path, budget=7)
    assert result.budget_spent <= 7 and result.stopped == "budget"
    assert len(result.rounds) == 1


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    full = scripted_run(tmp_path / "full")

    def interrupt(summary: RoundSummary) -> None:
        if summary.round == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        scripted_run(tmp_path / "cut", on_round=interrupt)
    resumed = scripted_run(tmp_path / "cut")
    assert resumed.final == full.final and resumed.config == full.config
    assert resumed.budget_spent == full.budget_spent
    # rounds 1-2 came from the cache: only round 3's trial and held-out check ran again
    assert resumed.runs_made == 3 < full.runs_made
    assert json.loads((tmp_path / "cut" / "update_results.json").read_text()) == json.loads(
        (tmp_path / "full" / "update_results.json").read_text()
    )


def test_a_run_directory_refuses_other_options(tmp_path: Path) -> None:
    scripted_run(tmp_path)
    system = mem0()
    ids = system.case_ids()
    with pytest.raises(ConfigError, match="other options \\(seed\\)"):
        run_optimization(
            OptimizeOptions("mem0", "unit", rounds=3, trials=1, guided=False, seed=1),
            system,
            ids[:1],
            ids[1:],
            tmp_path,
            db=None,
        )
    with pytest.raises(ConfigError, match="both train and heldout"):
        run_optimization(OptimizeOptions("mem0", "x"), system, ids[:2], ids[1:], tmp_path, db=None)
    with pytest.raises(ConfigError, match="both heldout and test"):
        run_optimization(
            OptimizeOptions("mem0", "x"),
            system,
            ids[:1],
            ids[1:2],
            tmp_path / "x",
            db=None,
            test=ids[1:],
        )
    with pytest.raises(ConfigError, match="--train: 99 not among the system's ids"):
        run_optimization(OptimizeOptions("mem0", "x"), system, ["99"], ids[1:], tmp_path, db=None)


def test_the_offline_parameter_loop_runs_real_systems_and_writes_strict_json(
    tmp_path: Path,
) -> None:
    system = mem0()
    ids = system.case_ids()
    feedback = TableFeedback(CLASSES)
    options = OptimizeOptions("mem0", "unit", rounds=2, trials=3, budget=40)
    from memtrace.optimize import parameter_proposer

    budget = Budget(40)
    evaluator = Evaluator(
        system, {"train": ids[:1], "heldout": ids[1:]}, budget, tmp_path / "evaluations.jsonl"
    )
    result = loop.optimize(
        options,
        evaluator,
        parameter_proposer(evaluator, None, options, budget),
        tmp_path,
        budget=budget,
        feedback=feedback,
    )
    assert feedback.calls >= 1 and result.budget_spent <= 40
    for r in result.rounds:
        # the answer class's table row names no parameter: answer_items is the one the
        # system declares its answer operation reads (ReferenceSystem.knobs)
        assert r.targets == ["top_k", "answer_items", "none_threshold", "update_threshold"]
        assert all(set(t["changes"]) <= {f"parameter:{n}" for n in r.targets} for t in r.trials)
    json.loads((tmp_path / "summary.json").read_text())  # strict JSON


def test_the_benchmark_never_trains_or_accepts_on_the_held_out_conversations() -> None:
    import optimize as bench  # benchmarks/optimize.py (conftest puts benchmarks/ on the path)

    held_out = {7, 8, 9, 10}  # LoCoMo's: never used to develop or tune anything
    assert not held_out & {*bench.SPLIT["train"], *bench.SPLIT["heldout"]}
    assert set(bench.SPLIT["test"]) == held_out
    assert not set(bench.SPLIT["train"]) & set(bench.SPLIT["heldout"])
