"""The replay hook on a toy memory system of the test's own, traced with memtrace.tracing, and
the plugin point's specs and refusals."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from memtrace.attribution.counterfactual import Suspect, executed_label
from memtrace.errors import ConfigError, NotReplayableError
from memtrace.patterns.headroom import ReplayedAnswer
from memtrace.replay import can_replay, replay_refusal
from memtrace.replay.graph import TraceFiles
from memtrace.replay.hook import STEP, Replayed, ReplayTrace, SystemReplayer, read_records
from memtrace.replay.plugins import load_factory, registered_factory
from memtrace.settings import LLMSettings, Neo4jSettings, Settings
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
    with pytest.raises(NotReplayableError, match=f"^{re.escape(str(path))}: no operation names"):
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
    example = r"--replayer 'no_colon_here': expected module:attr \(e\.g\. mysystem\.replay:make\)"
    with pytest.raises(ConfigError, match=example):
        load_factory("no_colon_here")
    for half in (":make", "pkg:"):
        with pytest.raises(ConfigError, match="expected module:attr"):
            load_factory(half)
    dotted: object = load_factory("memtrace.replay.hook:SystemReplayer.replay")
    assert dotted is SystemReplayer.replay
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


def test_the_answer_op_without_a_step_gets_the_gold_answer_in_a_what_if(tmp_path: Path) -> None:
    """docs/replay.md advises leaving the answer op without a step: a class what-if then
    gives it the answer step's oracle (the gold answer, nothing re-run), as for our systems."""

    class NoAnswerStep(ToySystem):
        def run(self, repaired: frozenset[str] = frozenset()) -> tuple[bool, str]:
            with operation("toy.answer", kind="generation") as answer:
                read(variable("q1", QUESTION, class_name="query"))
            self.answer_id = answer.id
            return super().run(repaired)

    path = tmp_path / "toy.jsonl"
    system = NoAnswerStep()
    with trace(path, "toy-1", system="toy", clock=SimClock()):
        system.run()
    replayer = SystemReplayer(path, system)
    assert replayer.answer_ops == {system.answer_id}
    repaired = {"q1": [system.answer_id]}
    assert replayer.joint_cost(repaired) == 0
    assert dict(replayer.replay_jointly(repaired)) == {"q1": ReplayedAnswer(True)}
    assert replayer.replays == 0
    extract = next(op for op, step in replayer.steps.items() if step == "extract:m1")
    with pytest.raises(NotReplayableError, match=r"names no replay step.*docs/replay.md"):
        replayer.replay_jointly({"q1": ["op-999999"]})
    assert replayer.replay_jointly({"q1": [extract]})["q1"] == ReplayedAnswer(False)


def test_a_replayer_module_is_found_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_replay_i40.py").write_text("def make(trace):\n    return trace\n")
    (tmp_path / "broken_replay_i40.py").write_text("import no_such_dependency_i40\n")
    (tmp_path / "bad_name_i40.py").write_text("from os import no_such_name_i40\n")
    monkeypatch.chdir(tmp_path)
    here = tmp_path.resolve()  # "" and "." are the current folder too: not on the path
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != here])
    before = list(sys.path)
    assert callable(load_factory("memtrace.replay.hook:read_records"))
    assert sys.path == before  # found where Python looks: the folder is not added
    trace = ReplayTrace("t", "mine", [])
    made: object = load_factory("my_replay_i40:make")(trace)
    assert made is trace
    # a module that is found but imports something missing: that is what the error names
    with pytest.raises(ConfigError, match=r"importing 'broken_replay_i40' failed.*no_such_dep"):
        load_factory("broken_replay_i40:make")
    with pytest.raises(ConfigError, match=r"importing 'bad_name_i40' failed.*no_such_name_i40"):
        load_factory("bad_name_i40:make")
    monkeypatch.chdir(tmp_path.parent)
    with pytest.raises(ConfigError, match=r"no module 'elsewhere_i40'.*PYTHONPATH"):
        load_factory("elsewhere_i40:make")
    # a package that is not there: where to put it, by its top-level name
    missing = (
        r"^--replayer 'elsewhere_i40\.replay:make': no module 'elsewhere_i40\.replay' in the "
        r"current folder .* the folder holding elsewhere_i40\.py \(or the package elsewhere_i40/\)"
    )
    with pytest.raises(ConfigError, match=missing):
        load_factory("elsewhere_i40.replay:make")


def test_what_a_replayer_reads_of_the_trace_and_says_back(tmp_path: Path) -> None:
    """The recorded verdicts (``failed`` first, else the judge score; unscored is not passed),
    the error type a step prefix names, the answer op by the prediction it writes, and a file
    that is no native trace, each one way."""
    records: list[dict[str, Any]] = [
        {"type": "trace", "id": "mine-1", "system": "mine"},
        {"type": "operation", "id": "op-1", "name": "mine.note", "category": "extraction",
         "metadata": {STEP: "note:m1"}},
        {"type": "operation", "id": "op-2", "name": "mine.reply", "category": "generation",
         "reads": [], "writes": ["answer-1@1"]},
        {"type": "operation", "id": "op-3", "name": "mine.other", "kind": "generation",
         "reads": ["ctx@1"], "writes": ["ctx@2"]},
        {"type": "case", "id": "a", "query": "q-a@1", "prediction": "answer-1@1", "failed": True,
         "judge_score": 1.0},
        {"type": "case", "id": "b", "query": "q-b@1", "judge_score": 0.5},
        {"type": "case", "id": "c", "query": "q-c@1", "judge_score": 0.0},
        {"type": "case", "id": "d", "query": "q-d@1"},
        {"type": "case", "id": "e", "query": "q-e@1", "failed": False, "judge_score": 0.0},
    ]  # fmt: skip

    class Together:
        def __init__(self) -> None:
            self.asked: list[tuple[dict[str, frozenset[str]], set[str]]] = []

        def replay(self, case_id: str, steps: frozenset[str]) -> Replayed:
            return Replayed(True, "fixed", {s: f"fixed {s}" for s in steps})

        def replay_together(
            self, repaired: dict[str, frozenset[str]], cases: set[str]
        ) -> dict[str, Replayed]:
            self.asked.append((dict(repaired), set(cases)))
            return {c: Replayed(c == "b", "") for c in cases}

    system = Together()
    replayer = SystemReplayer(records, system, {"note": "UpdateError"})
    assert dict(replayer.recorded()) == {"a": False, "b": True, "c": False, "d": False, "e": True}
    assert replayer.answer_ops == {"op-2"}  # writes a case's prediction; op-3 answers nothing
    (change,) = replayer.replay("c", ["op-1"]).repaired
    assert (change.step, change.op_id, change.error_type) == ("note:m1", "op-1", "UpdateError")
    assert change.detail == "fixed note:m1"
    assert SystemReplayer(records, system).replay("c", ["op-1"]).repaired[0].error_type == (
        "ExtractionError"  # without the mapping: what the category implies
    )
    # replay_together: one run for every case asked, the answer op's case by its oracle
    repaired = {"a": ["op-2"], "c": ["op-1"]}
    assert replayer.joint_cost(repaired) == 1
    assert replayer.joint_cost({"b": ["op-1"], "c": ["op-1"]}) == 1  # one run for both
    before = replayer.replays
    assert replayer.joint_cost({"a": ["op-2"]}) == 0
    answers = replayer.replay_jointly(repaired, cases={"a", "b", "c"})
    assert dict(answers) == {
        "a": ReplayedAnswer(True),
        "b": ReplayedAnswer(True),
        "c": ReplayedAnswer(False),
    }
    assert system.asked == [({"c": frozenset({"note:m1"})}, {"b", "c"})]
    assert replayer.replays == before + 1
    before = replayer.replays
    assert dict(replayer.replay_jointly({"a": ["op-2"]})) == {"a": ReplayedAnswer(True)}
    assert replayer.replays == before  # nothing re-ran
    with pytest.raises(NotReplayableError, match=r"'op-3' \(mine\.other\) names no replay step"):
        replayer.replay_jointly({"c": ["op-3"]})

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "trace"}\nnot json\n', encoding="utf-8")
    with pytest.raises(NotReplayableError, match=r"bad\.jsonl: not a native JSON Lines trace"):
        read_records(bad)
    with pytest.raises(NotReplayableError, match=r"missing\.jsonl: cannot read file"):
        read_records(tmp_path / "missing.jsonl")
    good = tmp_path / "good.jsonl"
    good.write_text('{"a": 1}\n\n{"b": 2}\n', encoding="utf-8")
    assert read_records(good) == [{"a": 1}, {"b": 2}]
    with pytest.raises(NotReplayableError, match=r"trace 'mine-1': no operation names a replay"):
        SystemReplayer([records[0], records[4]], system)


FACTORY_MODULE = """
made = []


class Echo:
    def replay(self, case_id, steps):
        return True, "echo"


def make(trace):
    made.append(trace)
    if trace.trace_id == "broken":
        raise ValueError("no model for " + trace.system)
    return Echo()
"""


def test_trace_files_build_each_replayer_once_and_keep_each_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``TraceFiles`` decides (``LoadedTraces`` is the same class over the graph's
    records): a user's factory gets the trace's id, system, records and the settings; each
    trace's replayer is built once; a factory that fails and a system nobody replays are
    refusals naming where the trace came from, kept for the run."""
    (tmp_path / "toy_factory_i40.py").write_text(FACTORY_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_factory_i40", raising=False)  # a run of its own
    toy, broken, empty = tmp_path / "toy.jsonl", tmp_path / "broken.jsonl", tmp_path / "e.jsonl"
    for path, trace_id in ((toy, "toy-1"), (broken, "broken")):
        with trace(path, trace_id, system="toy", clock=SimClock()):
            ToySystem().run()
    empty.write_text("", encoding="utf-8")
    settings = Settings(home=tmp_path, neo4j=Neo4jSettings(), llm=LLMSettings())
    paths = {"toy-1": toy, "broken": broken, "empty": empty}
    files = TraceFiles(paths, settings, "toy_factory_i40:make")
    made = importlib.import_module("toy_factory_i40").made

    replayer = files.for_trace("toy-1")
    assert isinstance(replayer, SystemReplayer) and files.for_trace("toy-1") is replayer
    (given,) = made  # built once
    assert (given.trace_id, given.system, given.settings) == ("toy-1", "toy", settings)
    assert given.records == read_records(toy)
    assert set(replayer.steps.values()) >= {"extract:m2", "retrieve:q1", "answer:q1"}
    assert replayer.replay("q1").passed  # the factory's system answers the replay

    failed = f"{broken}: replayer make failed: ValueError('no model for toy')"
    assert files.refusal("broken") == failed
    with pytest.raises(NotReplayableError) as again:
        files.for_trace("broken")
    assert str(again.value) == failed and len(made) == 2  # the refusal is kept, not retried
    assert files.refusal("toy-1") is None
    assert files.refusal("elsewhere") == "no trace file of trace 'elsewhere'"
    # a file with no trace head is the engine's to refuse, naming the file
    assert (files.refusal("empty") or "").startswith(f"{empty}: not a native memtrace trace")
    assert TraceFiles({"toy-1": toy}).refusal("toy-1") == f"{toy}: {replay_refusal('toy')}"


def test_a_replayer_without_replay_together_replays_each_case_with_its_own_repairs() -> None:
    """Case by case: one run per case re-run (none for an answer op's oracle), each case asked
    with its own id and steps; a replay gives back the case, the answer and whether the
    evidence reached the context, as the system said."""
    records: list[dict[str, Any]] = [
        {"type": "trace", "id": "mine-2", "system": "mine"},
        {"type": "operation", "id": "op-1", "name": "mine.note", "kind": "retrieval",
         "category": "extraction", "metadata": {STEP: "note:D1:3"}},
        {"type": "operation", "id": "op-2", "name": "mine.reply", "kind": "generation",
         "reads": ["q-a@1"], "writes": [], "metadata": {STEP: "reply:a"}},
        {"type": "operation", "id": "op-3", "name": "mine.answer", "category": "generation",
         "reads": ["q-b@1"], "writes": []},
        {"type": "case", "id": "a", "query": "q-a@1", "judge_score": 0.0},
        {"type": "case", "id": "b", "query": "q-b@1", "judge_score": 0.0},
        {"type": "case", "id": "c", "query": "q-c@1", "judge_score": 0.0},
    ]  # fmt: skip

    class OneByOne:
        def __init__(self) -> None:
            self.asked: list[tuple[str, frozenset[str]]] = []

        def replay(self, case_id: str, steps: frozenset[str]) -> Replayed:
            self.asked.append((case_id, steps))
            kept = {step: "kept" for step in steps}
            return Replayed(case_id == "a", f"answer {case_id}", kept, context=case_id == "a")

    system = OneByOne()
    replayer = SystemReplayer(records, system, {"note": "UpdateError"})
    assert replayer.answer_ops == {"op-3"}  # op-2 reads a question but has a step: replayed
    replayed = replayer.replay("a", ["op-1"])
    assert (replayed.case_id, replayed.passed, replayed.prediction) == ("a", True, "answer a")
    assert replayed.context is True and system.asked == [("a", frozenset({"note:D1:3"}))]
    (kept,) = replayed.repaired  # the step's prefix (before its first colon) names the type
    assert (kept.step, kept.op_id, kept.detail, kept.error_type) == (
        "note:D1:3",
        "op-1",
        "kept",
        "UpdateError",
    )
    by_tuple = SystemReplayer(records, type("Pair", (), {"replay": lambda *_: (0, 42)})())
    (change,) = by_tuple.replay("c", ["op-1"]).repaired
    assert by_tuple.replay("c").prediction == "42"
    assert change.error_type == "RetrievalError"  # unmapped: the op's kind, not its category

    repaired = {"a": ["op-1"], "b": ["op-3"], "c": ["op-2"]}
    assert replayer.joint_cost(repaired) == 2  # a and c; b's answer op is its oracle
    system.asked.clear()
    before = replayer.replays
    answers = replayer.replay_jointly(repaired)
    assert dict(answers) == {
        "a": ReplayedAnswer(True),
        "b": ReplayedAnswer(True),
        "c": ReplayedAnswer(False),
    }
    assert sorted(system.asked) == [("a", frozenset({"note:D1:3"})), ("c", frozenset({"reply:a"}))]
    assert replayer.replays == before + 2
    with pytest.raises(NotReplayableError, match="no operation names a replay step"):
        SystemReplayer([], system)


def test_an_installed_package_registers_a_replayer_for_its_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry point group, read from a package installed on the path (its dist-info): the
    trace's system names the factory when no --replayer is given; a registered factory that
    cannot be loaded or is not callable is one error line."""
    (tmp_path / "toy_plugin_mod_i40.py").write_text(FACTORY_MODULE + "NOT_CALLABLE = 1\n")
    dist = tmp_path / "toy_plugin_i40-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin-i40\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[memtrace.replayers]\n"
        "toy-i40 = toy_plugin_mod_i40:make\n"
        "gone-i40 = no_such_module_i40:make\n"
        "const-i40 = toy_plugin_mod_i40:NOT_CALLABLE\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_plugin_mod_i40", raising=False)
    assert registered_factory("toy-i40") is importlib.import_module("toy_plugin_mod_i40").make
    assert registered_factory("mine-i40") is None
    assert replay_refusal("toy-i40") is None and can_replay("toy-i40")
    assert replay_refusal("mine-i40") is not None
    with pytest.raises(ConfigError, match=r"'gone-i40' \(no_such_module_i40:make, entry point"):
        registered_factory("gone-i40")
    with pytest.raises(ConfigError, match="registered for system 'const-i40' is not callable"):
        registered_factory("const-i40")

    path = tmp_path / "toy.jsonl"
    with trace(path, "toy-1", system="toy-i40", clock=SimClock()):
        ToySystem().run()
    replayer = TraceFiles({"toy-1": path}).for_trace("toy-1")
    assert isinstance(replayer, SystemReplayer) and replayer.replay("q1").passed
