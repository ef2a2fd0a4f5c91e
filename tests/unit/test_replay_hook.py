"""The replay hook on a toy memory system of the test's own, traced with memtrace.tracing, and
the plugin point's specs and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtrace.attribution.counterfactual import Suspect, executed_label
from memtrace.errors import ConfigError, NotReplayableError
from memtrace.replay import can_replay, replay_refusal
from memtrace.replay.hook import STEP, Replayed, SystemReplayer
from memtrace.replay.plugins import load_factory
from memtrace.tracing import SimClock, case, operation, read, trace, variable

MESSAGES = {
    "m1": "Ana loves the red kite she flies at the beach",
    "m2": "Ana bought a blue kite yesterday",  # the evidence; the toy extractor drops it
    "m3": "Ana says the beach kite festival has kite food",
}
QUESTION, GOLD, EVIDENCE = "Which kite did Ana buy at the beach?", "blue", "m2"


class ToySystem:
    """Extract (drops m2: a bug), store, retrieve the top-1 memory by word overlap, answer."""

    def run(self, repaired: frozenset[str] = frozenset()) -> tuple[bool, str]:
        memories = {}
        for msg_id, text in MESSAGES.items():
            with operation(
                "toy.extract", category="extraction", metadata={STEP: f"extract:{msg_id}"}
            ):
                message = variable(msg_id, text, category="message")
                read(message)
                keep = msg_id != "m2" or f"extract:{msg_id}" in repaired  # the oracle keeps it
                if keep:
                    memories[msg_id] = text
                    variable(f"memory-{msg_id}", text, category="memory_entry", sources=(message,))
        with operation("toy.retrieve", category="retrieval", metadata={STEP: "retrieve:q1"}):
            words = set(QUESTION.lower().rstrip("?").split())
            ranked = sorted(memories, key=lambda m: -len(words & set(memories[m].lower().split())))
            top = ranked[:1]
            if "retrieve:q1" in repaired and EVIDENCE in memories and EVIDENCE not in top:
                top.append(EVIDENCE)  # the oracle adds the memory holding the evidence
            context = variable("context-q1", [memories[m] for m in top], category="memory_context")
        with operation(
            "toy.answer", category="evaluation", kind="generation", metadata={STEP: "answer:q1"}
        ):
            read(context)
            answer = " ".join(memories[m] for m in top)
            prediction = variable("prediction-q1", answer, class_name="prediction")
        passed = GOLD in answer
        query = variable("q1", QUESTION, class_name="query")
        case(id="q1", query=query.id, prediction=prediction.id, golden_answers=[GOLD],
             judge_score=1.0 if passed else 0.0)  # fmt: skip
        return passed, answer

    def replay(self, case_id: str, steps: frozenset[str]) -> tuple[bool, str]:
        return self.run(steps)


def test_a_users_traced_system_gets_its_executed_label(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    system = ToySystem()
    with trace(path, "toy-1", system="toy", clock=SimClock()):
        passed, _ = system.run()
    assert not passed
    replayer = SystemReplayer(
        path, system, {"extract": "ExtractionError", "retrieve": "RetrievalError"}
    )
    by_step = {step: op for op, step in replayer.steps.items()}
    suspects = [
        Suspect(by_step["extract:m2"], "extraction"),
        Suspect(by_step["retrieve:q1"], "retrieval"),
    ]
    found = executed_label(replayer, "q1", suspects, by_step["answer:q1"])
    assert (found.op_id, found.error_type) == (by_step["extract:m2"], "ExtractionError")
    alone = {o.op_id: o.alone for o in found.outcomes}
    assert alone == {by_step["extract:m2"]: False, by_step["retrieve:q1"]: False}
    assert replayer.replays == found.replays


def test_a_trace_without_steps_is_not_replayable(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    with trace(path, "plain", clock=SimClock()), operation("x"):
        variable("v", 1)
    with pytest.raises(NotReplayableError, match="replay step"):
        SystemReplayer(path, ToySystem())


def test_a_repair_says_what_it_changed_or_that_the_system_did_not_say(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    with trace(path, "toy-1", system="toy", clock=SimClock()):
        ToySystem().run()
    replayer = SystemReplayer(path, ToySystem())
    op = next(op for op, step in replayer.steps.items() if step == "extract:m2")
    (change,) = replayer.replay("q1", [op]).repaired
    assert change.detail == "repaired by ToySystem.replay, which did not say what it changed"
    assert change.error_type == "ExtractionError"  # what the op's category implies

    class Saying(ToySystem):
        def replay(self, case_id: str, steps: frozenset[str]) -> Replayed:  # type: ignore[override]
            passed, answer = self.run(steps)
            return Replayed(passed, answer, {"extract:m2": "kept the blue kite"} if steps else {})

    retrieve = next(op for op, step in replayer.steps.items() if step == "retrieve:q1")
    saying = SystemReplayer(path, Saying())
    assert [c.detail for c in saying.replay("q1", [op]).repaired] == ["kept the blue kite"]
    assert saying.replay("q1", [retrieve]).repaired == ()  # it changed nothing


def test_a_failing_user_replay_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    with trace(path, "toy-1", system="toy", clock=SimClock()):
        ToySystem().run()

    class Broken(ToySystem):
        def replay(self, case_id: str, steps: frozenset[str]) -> tuple[bool, str]:
            raise KeyError(case_id)

    with pytest.raises(NotReplayableError, match=r"Broken\.replay\('q1'\) failed: KeyError"):
        SystemReplayer(path, Broken()).replay("q1")


def test_replayer_specs_and_refusals_are_one_line_each() -> None:
    with pytest.raises(ConfigError, match="expected module:attr"):
        load_factory("no_colon_here")
    with pytest.raises(ConfigError, match="no module 'no_such_module_xyz' in the current folder"):
        load_factory("no_such_module_xyz:make")
    with pytest.raises(ConfigError, match="has no 'nothing'"):
        load_factory("memtrace.replay.hook:nothing")
    with pytest.raises(ConfigError, match="is not callable"):
        load_factory("memtrace.replay.hook:STEP")
    assert callable(load_factory("memtrace.replay.hook:read_records"))
    assert can_replay("mem0") and can_replay("mine", replayer="pkg:make")
    why = replay_refusal("mine")
    assert why is not None and "--replayer module:attr" in why and "memtrace.replayers" in why
    assert not can_replay("mem0", source="smartcomment")
