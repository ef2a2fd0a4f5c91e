"""Headroom of failure classes (executed what-if) with a small rule-based replayer, and routing by
it: the counting, the broken answers, the joint headroom, fix-alone, the budget."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memtrace.errors import NotReplayableError, OutOfBudget
from memtrace.optimize import OptimizeOptions, loop, route
from memtrace.optimize.feedback import BudgetedReplayer
from memtrace.optimize.loop import Trial
from memtrace.optimize.plugin import Configuration
from memtrace.optimize.reference import ReferenceSystem
from memtrace.optimize.routing import Routing
from memtrace.optimize.scoring import Budget, Evaluator, Score
from memtrace.patterns import CLASS_COLUMNS
from memtrace.patterns.classes import class_key
from memtrace.patterns.headroom import BlamedOp, ReplayedAnswer, explain, what_if
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.offline import OfflineBackend


@dataclass
class RuleReplayer:
    """A conversation as rules: a failed case passes once every op of ``needs`` is repaired;
    a passing case in ``breaks`` fails once its op is repaired (the repaired memory crowds its
    evidence out). ``lost_at`` names what still misses a case that stays wrong."""

    trace_id: str
    passed: dict[str, bool]
    needs: dict[str, set[str]]
    breaks: dict[str, str] = field(default_factory=dict)
    lost_at: dict[str, str] = field(default_factory=dict)
    replays: list[tuple[str, frozenset[str], frozenset[str] | None]] = field(default_factory=list)
    refuse: str | None = None

    def replayable(self, trace_id: str) -> str | None:
        return self.refuse

    def baseline(self, trace_id: str) -> Mapping[str, bool]:
        return self.passed

    def cost(self, trace_id: str, repairs: Sequence[BlamedOp]) -> int:
        return 1

    def replay(
        self, trace_id: str, repairs: Sequence[BlamedOp], cases: Collection[str] | None = None
    ) -> Mapping[str, ReplayedAnswer]:
        repaired = frozenset(r.op_id for r in repairs)
        self.replays.append((trace_id, repaired, frozenset(cases) if cases else None))
        out = {}
        for case_id, before in self.passed.items():
            if cases is not None and case_id not in cases:
                continue
            if case_id in self.breaks:
                ok = before and self.breaks[case_id] not in repaired
            else:
                ok = before or self.needs.get(case_id, {"never"}) <= repaired
            out[case_id] = ReplayedAnswer(ok, None if ok else self.lost_at.get(case_id))
        return out


def class_row(
    op_name: str, error_type: str, refs: list[tuple[str, str]], parameters: list[str]
) -> dict[str, Any]:
    ids = [c for _, c in refs]
    return {
        "system": "mem0",
        "op_name": op_name,
        "op_kind": "other",
        "error_type": error_type,
        "stage": "other",
        "inputs": [f"{n}@1" for n in parameters],
        "prompts": [],
        "parameters": parameters,
        "optimizable": bool(parameters),
        "cases": len(refs),
        "share_of_failures": len(refs) / 6,
        "share_of_executions": 0.5,
        "median_confidence": 0.9,
        "example_cases": ids[:3],
        "case_ids": ids,
        "trace_ids": ["t"],
        "failures": 6,
        "blamed_operations": len(refs),
        "executions": 10,
        "case_refs": [list(r) for r in refs],
    }


T = "t"
# q1-q4: RetrievalError at their searches s1-s4 (the largest class). Retrieving the evidence does
# not rescue them: the answer step quotes too little. q5, q6: ExtractionError at ex1 (smaller);
# repairing ex1 rescues both and breaks q8, which passed. q7 failed too but is in no class.
RETRIEVAL = [(T, "q1"), (T, "q2"), (T, "q3"), (T, "q4")]
EXTRACTION = [(T, "q5"), (T, "q6")]
CLASSES = pd.DataFrame(
    [
        class_row("memory_system.search_vector_store", "RetrievalError", RETRIEVAL, ["top_k"]),
        class_row(
            "memory_system.extract_facts", "ExtractionError", EXTRACTION, ["min_content_words"]
        ),
    ],
    columns=list(CLASS_COLUMNS),
)
BLAMED = pd.DataFrame(
    [{"trace_id": T, "case_id": f"q{i}", "op_id": f"s{i}"} for i in range(1, 5)]
    + [{"trace_id": T, "case_id": c, "op_id": "ex1"} for c in ("q5", "q6")]
)


def toy() -> RuleReplayer:
    passed = {f"q{i}": False for i in range(1, 8)} | {"q8": True, "q9": True}
    return RuleReplayer(
        T,
        passed,
        needs={f"q{i}": {f"s{i}", "qa"} for i in range(1, 5)} | {"q5": {"ex1"}, "q6": {"ex1"}},
        breaks={"q8": "ex1"},
        lost_at={f"q{i}": "ResponseError" for i in range(1, 5)},
    )


def test_the_largest_class_has_no_headroom_the_smaller_has_it_all_and_a_break_counts() -> None:
    replayer = toy()
    result = what_if(CLASSES, BLAMED, replayer, fix_alone=True, joint_top=2)
    rows = {r["error_type"]: r for r in result.classes.to_dict("records")}
    retrieval, extraction = rows["RetrievalError"], rows["ExtractionError"]
    assert (retrieval["rescued"], retrieval["broken"], retrieval["net"]) == (0, 0, 0)
    assert (extraction["rescued"], extraction["broken"], extraction["net"]) == (2, 1, 1)
    assert extraction["accuracy_delta"] == pytest.approx(1 / 9)
    assert retrieval["still_lost"] == {"ResponseError": 4}
    assert retrieval["why"] == (
        "retrieval fixes would rescue 0 of 4: the answer step (the evidence reached it) also "
        "misses 4"
    )
    # largest net headroom first
    assert list(result.classes["error_type"]) == ["ExtractionError", "RetrievalError"]
    # fix alone: each of q5, q6 is rescued by its own repair; no retrieval case is
    assert (extraction["fix_alone"], extraction["fix_alone_share"]) == (2, 1.0)
    assert (retrieval["fix_alone"], retrieval["fix_alone_share"]) == (0, 0.0)
    # one replay per class and trace, one per case alone, one for the joint repair
    assert (extraction["replays"], retrieval["replays"]) == (3, 5)
    assert result.replays == 3 + 5 + 1 == len(replayer.replays)
    keys = [class_key(row) for row in CLASSES.to_dict("records")]
    assert result.joint_keys == (keys[1], keys[0])
    assert (result.joint_rescued, result.joint_broken, result.joint_net) == (2, 1, 1)
    assert result.total_cases == 9


def test_routing_by_headroom_picks_the_smaller_class_and_says_why_not_the_larger() -> None:
    result = what_if(CLASSES, BLAMED, toy(), fix_alone=False, joint_top=0)
    by_count = route(CLASSES, "parameters")
    assert by_count.targets(largest=1) == ("top_k",)  # counts point at retrieval
    routing = route(CLASSES, "parameters", headroom=result.classes)
    assert routing.by == "headroom"
    assert routing.targets() == ("min_content_words",)
    assert routing.targets(largest=1) == ("min_content_words",)
    first, second = routing.classes
    assert (first.error_type, first.headroom, first.rescued, first.broken) == (
        "ExtractionError",
        1,
        2,
        1,
    )
    assert second.targets == () and second.headroom == 0
    assert second.why_not.startswith("no trials: no headroom (net +0 cases; retrieval fixes")
    assert [c.key for c in routing.unoptimizable] == [
        "mem0/memory_system.search_vector_store/RetrievalError"
    ]
    # a class the what-if did not measure has no known headroom: no trials either
    unknown = route(CLASSES, "parameters", headroom=result.classes.iloc[0:1])
    assert unknown.targets() == ("min_content_words",)
    assert "headroom is unknown" in unknown.classes[1].why_not


def test_an_unreplayable_trace_is_said_not_guessed() -> None:
    replayer = toy()
    replayer.refuse = "imported OTLP traces cannot be replayed"
    result = what_if(CLASSES, BLAMED, replayer)
    assert not result.classes["replayable"].any()
    assert set(result.classes["why"]) == {f"cannot be replayed (trace {T})"}
    assert result.replays == 0 and replayer.replays == []
    assert result.not_replayable == {T: "imported OTLP traces cannot be replayed"}
    routing = route(CLASSES, "parameters", headroom=result.classes)
    assert routing.targets() == ()
    assert all("cannot be replayed" in c.why_not for c in routing.classes)


def test_explain_names_what_still_misses_the_cases() -> None:
    assert explain("ExtractionError", 13, 13, {}) == "extraction fixes would rescue 13 of 13"
    assert explain("DeletionError", 4, 4, {}) == "deletion fixes would rescue 4 of 4"
    assert explain("ResponseError", 2, 1, {}) == "answer-step fixes would rescue 1 of 2"
    assert explain("ExtractionError", 13, 3, {"RetrievalError": 8, "ResponseError": 2}) == (
        "extraction fixes would rescue 3 of 13: retrieval also misses 8, the answer step "
        "(the evidence reached it) also misses 2"
    )


def test_replays_count_against_the_budget_before_they_run() -> None:
    budget = Budget(limit=10, spent=4)
    inner = toy()
    replayer = BudgetedReplayer(inner, budget)
    result = what_if(CLASSES, BLAMED, replayer, fix_alone=False, joint_top=2)
    assert result.replays == 3  # one per class, one joint
    assert (budget.spent, budget.replays, budget.runs_made) == (7, 3, 3)
    budget.spent = 10
    with pytest.raises(OutOfBudget):
        what_if(CLASSES, BLAMED, replayer, fix_alone=False)
    assert len(inner.replays) == 3  # the refused replay never ran


class ReplayingFeedback:
    """Classes from a table and their what-if through the rule replayer, measured once per
    configuration and charged as it runs, as the graph feedback does."""

    def __init__(self, evaluator: Evaluator, replayer: RuleReplayer) -> None:
        self.evaluator = evaluator
        self.replayer = replayer
        self.measured: dict[str, pd.DataFrame] = {}

    def classes(self, config: Configuration) -> pd.DataFrame:
        return CLASSES

    def headroom(
        self, config: Configuration, classes: pd.DataFrame, keys: set[str]
    ) -> pd.DataFrame:
        if config.key() not in self.measured:
            budgeted = BudgetedReplayer(self.replayer, self.evaluator.budget)
            result = what_if(classes, BLAMED, budgeted, fix_alone=False, joint_top=0, only=keys)
            self.measured[config.key()] = result.classes
        return self.measured[config.key()]


def mem0() -> ReferenceSystem:
    return ReferenceSystem("mem0", OfflineBackend(), load_locomo(SAMPLE_PATH))


class TopKEvaluator(Evaluator):
    """Train accuracy rises with min_content_words, held-out stays: every trial is scored
    without running a system (1 train + 2 held-out conversations)."""

    def score(self, config: Configuration, split: str) -> Score:
        self.budget.charge(self.cost(split), cached=False)
        words = int(config.params["min_content_words"])
        return Score(40 + words if split == "train" else 40, 100)


@dataclass
class Searched:
    """A proposer that records what it was asked to search and tries nothing."""

    targets: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(
        self,
        incumbent: Configuration,
        targets: Sequence[str],
        routing: Routing | None,
        round_number: int,
    ) -> list[Trial]:
        self.targets.append(tuple(targets))
        return []


def test_the_loop_pays_replays_from_the_budget_and_searches_only_what_has_headroom(
    tmp_path: Path,
) -> None:
    evaluator = TopKEvaluator(
        mem0(), {"train": ["1"], "heldout": ["2", "3"]}, Budget(12), tmp_path / "evaluations.jsonl"
    )
    replayer = toy()
    options = OptimizeOptions("mem0", "unit", rounds=2, trials=1, budget=12, route_by="headroom")
    searched = Searched()
    result = loop.optimize(
        options,
        evaluator,
        searched,
        tmp_path,
        budget=evaluator.budget,
        feedback=ReplayingFeedback(evaluator, replayer),
    )
    # initial 1 + 2 runs; round 1 replays the two classes with a target (1 run each); round 2
    # keeps the incumbent, whose what-if is not paid for again
    assert searched.targets == [("min_content_words",), ("min_content_words",)]
    assert [r.replays for r in result.rounds] == [2, 2]
    assert [r.budget_spent for r in result.rounds] == [5, 5] and result.replays == 2
    first = {c["error_type"]: c for c in result.rounds[0].classes}
    assert first["RetrievalError"]["why_not"].startswith("no trials: no headroom")
    assert first["ExtractionError"]["headroom"] == 1

    # when no class has headroom the loop stops and says why, per class
    replayer.needs["q5"] = replayer.needs["q6"] = {"never"}
    stopped = loop.optimize(
        options, evaluator, searched, tmp_path / "again", budget=evaluator.budget,
        feedback=ReplayingFeedback(evaluator, replayer),
    )  # fmt: skip
    assert stopped.stopped.startswith("no failure class with headroom: ")
    assert "retrieval fixes would rescue 0 of 4" in stopped.stopped
    assert "extraction fixes would rescue 0 of 2" in stopped.stopped


def test_a_class_no_repair_addresses_is_said_and_the_others_are_measured() -> None:
    class NoStepAtSearches(RuleReplayer):
        def replay(
            self, trace_id: str, repairs: Sequence[BlamedOp], cases: Collection[str] | None = None
        ) -> Mapping[str, ReplayedAnswer]:
            if any(r.op_id.startswith("s") for r in repairs):
                raise NotReplayableError("operation 's1' names no replay step")
            return super().replay(trace_id, repairs, cases)

    base = toy()
    replayer = NoStepAtSearches(base.trace_id, base.passed, base.needs, base.breaks, base.lost_at)
    result = what_if(CLASSES, BLAMED, replayer)
    by_type = {r["error_type"]: r for r in result.classes.to_dict(orient="records")}
    assert not by_type["RetrievalError"]["replayable"]
    assert by_type["RetrievalError"]["why"] == (
        "cannot be measured: operation 's1' names no replay step"
    )
    extraction = by_type["ExtractionError"]
    assert (extraction["replayable"], extraction["rescued"], extraction["broken"]) == (True, 2, 1)
    assert result.joint_keys == ()  # one measured class: no joint line
