"""The replay engine and the executed label on the reference systems (offline, no database)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memtrace.attribution.counterfactual import Suspect, executed_label
from memtrace.errors import NotReplayableError
from memtrace.patterns.headroom import UNSUPPORTED, ReplayedAnswer
from memtrace.replay import CaseReplay, TraceReplayer, make_replayer, read_native
from memtrace.replay.engine import still_lost_at
from memtrace.replay.inputs import REPLAYABLE_SYSTEMS
from memtrace.systems.core import Fault, Loss, QuestionResult, Repaired
from memtrace.systems.locomo import Conversation, Question, Session, Turn
from memtrace.systems.params import Params
from memtrace.systems.registry import SYSTEMS, make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

DATE = "1:00 pm on 8 May, 2023"


def conversation(turns: Sequence[tuple[str, str]], questions: Sequence[Question]) -> Conversation:
    """One session of ``(speaker, text)`` turns, dia ids D1:1, D1:2, ..."""
    made = tuple(Turn(f"D1:{i}", who, text) for i, (who, text) in enumerate(turns, start=1))
    return Conversation(9, "hand-9", ("Ana", "Ben"), (Session(1, DATE, made),), tuple(questions))


def traced(
    tmp_path: Path, system: str, conv: Conversation, faults: Sequence[Fault] = ()
) -> tuple[TraceReplayer, dict[str, str]]:
    """Run ``system`` traced; the replayer of its trace and the trace's op id -> op name."""
    built = make_system(system, make_backend("offline"), faults=faults)
    meta = {
        "bench": {
            "planted": [
                {"id": f.id, "type": f.type, "target": f.target, "anchor": f.anchor,
                 "sources": sorted(f.sources)}
                for f in faults
            ]
        }
    }  # fmt: skip
    _, path = run_conversation(built, conv, tmp_path, clock=SimClock(), metadata=meta)
    assert path is not None
    names = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "operation":
            names[record["id"]] = record["name"]
    return make_replayer(read_native(path)), names


def op_of(replayer: TraceReplayer, step: str) -> str:
    return next(op for op, key in replayer.steps().items() if key == step)


LISBON = conversation(
    [
        ("Ana", "I moved to Lisbon last spring for a new job at the harbour office."),
        ("Ben", "That sounds wonderful, how is the weather there in the summer months?"),
        ("Ana", "Hot and sunny, I walk along the river every single evening after work."),
    ],
    [Question(1, "Where did Ana move to?", "Lisbon", ("D1:1",), "single-hop")],
)
CASE = "locomo-qa-9-1"


@pytest.mark.parametrize("system", list(REPLAYABLE_SYSTEMS))
def test_replaying_without_repairs_reproduces_every_answer(tmp_path: Path, system: str) -> None:
    from memtrace.systems.locomo import SAMPLE_PATH, load_locomo

    conv = load_locomo(SAMPLE_PATH)[0]
    built = make_system(system, make_backend("offline"))
    original, path = run_conversation(built, conv, tmp_path, clock=SimClock())
    assert path is not None
    before = path.read_bytes()
    inputs = read_native(path)
    replayer = make_replayer(inputs)
    for result in original.results:
        again = replayer.replay(result.case_id)
        assert (again.passed, again.prediction) == (result.passed, result.prediction)
        assert inputs.cases[result.case_id].prediction == result.prediction
    assert path.read_bytes() == before  # a replay never writes the trace it replays
    assert replayer.replays == len(original.results)


def test_extraction_repair_restores_the_facts_a_fault_dropped(tmp_path: Path) -> None:
    fault = Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0"}))
    replayer, _ = traced(tmp_path, "mem0", LISBON, [fault])
    assert not replayer.replay(CASE).passed  # the planted fault dropped the fact
    extract = op_of(replayer, "extract:D1:1")
    fixed = replayer.replay(CASE, [extract])
    assert fixed.passed
    assert [(r.op_id, r.error_type) for r in fixed.repaired] == [(extract, "ExtractionError")]
    assert "restored 1 extracted fact" in fixed.repaired[0].detail


def test_extraction_repair_adds_the_evidence_statement_the_extractor_missed(
    tmp_path: Path,
) -> None:
    conv = conversation(  # the offline extractor skips questions: a natural ExtractionError
        [("Ana", "Hi Ben. Did you know I moved to Lisbon last spring?")],
        [Question(1, "Where did Ana move to?", "Lisbon", ("D1:1",), "single-hop")],
    )
    replayer, _ = traced(tmp_path, "mem0", conv)
    assert not replayer.replay(CASE).passed
    fixed = replayer.replay(CASE, [op_of(replayer, "extract:D1:1")])
    assert fixed.passed
    assert fixed.repaired[0].detail == "added evidence D1:1#1 and its message"


def test_retrieval_repair_adds_the_live_memory_holding_the_evidence(tmp_path: Path) -> None:
    fault = Fault("fault-1", "RetrievalError", CASE, CASE, frozenset({"D1:1#0"}))
    replayer, _ = traced(tmp_path, "mem0", LISBON, [fault])
    assert not replayer.replay(CASE).passed
    search = op_of(replayer, f"search:{CASE}")
    fixed = replayer.replay(CASE, [search])
    assert fixed.passed
    assert fixed.repaired[0].error_type == "RetrievalError"


def test_rag_retrieval_repair_adds_the_chunk_holding_the_evidence(tmp_path: Path) -> None:
    fault = Fault("fault-1", "RetrievalError", CASE, CASE, frozenset({"D1:1#0"}))
    replayer, _ = traced(tmp_path, "rag", LISBON, [fault])
    assert not replayer.replay(CASE).passed
    fixed = replayer.replay(CASE, [op_of(replayer, f"search:{CASE}")])
    assert fixed.passed and "chunk-00001" in fixed.repaired[0].detail


@pytest.mark.parametrize("kind", ["UpdateError", "DeletionError"])
def test_update_repair_keeps_what_the_old_version_held(tmp_path: Path, kind: str) -> None:
    conv = conversation(
        [*((who, text) for who, text in [("Ana", LISBON_TEXT)]), ("Ana", LATER_TEXT)],
        [Question(1, "Where did Ana move to?", "Lisbon", ("D1:1",), "single-hop")],
    )
    fault = Fault("fault-1", kind, CASE, "D1:2", frozenset({"D1:1#0"}))  # type: ignore[arg-type]
    replayer, _ = traced(tmp_path, "mem0", conv, [fault])
    assert not replayer.replay(CASE).passed
    decide = op_of(replayer, "decide:D1:2")
    fixed = replayer.replay(CASE, [decide])
    assert fixed.passed
    assert fixed.repaired[0].error_type == kind


LISBON_TEXT = "I moved to Lisbon last spring for a new job at the harbour office."
LATER_TEXT = "My sister visited me at the harbour office with her two dogs yesterday."
THIRD_TEXT = "We cooked grilled sardines together and watched the boats until midnight."


def test_long_context_window_repair_keeps_the_trimmed_evidence(tmp_path: Path) -> None:
    first = Session(1, DATE, (Turn("D1:1", "Ana", LISBON_TEXT),))
    later = Session(2, "1:00 pm on 9 May, 2023", (Turn("D2:1", "Ana", LATER_TEXT),))
    conv = Conversation(
        9,
        "hand-9",
        ("Ana", "Ben"),
        (first, later),
        (Question(1, "Where did Ana move to?", "Lisbon", ("D1:1",), "single-hop"),),
    )
    fault = Fault("fault-1", "UpdateError", CASE, "D2:1", frozenset({"D1:1#0"}))
    replayer, _ = traced(tmp_path, "long-context", conv, [fault])
    assert not replayer.replay(CASE).passed
    fixed = replayer.replay(CASE, [op_of(replayer, "window:2")])
    assert fixed.passed and fixed.repaired[0].error_type == "UpdateError"


def test_an_ideal_downstream_repairs_later_ops_that_are_no_candidates(tmp_path: Path) -> None:
    # a one-message window: update 2 trims the evidence, update 3 would trim it again had
    # update 2 kept it; update 3 never saw the line, so it is no attribution candidate
    sessions = tuple(
        Session(i, f"1:00 pm on {7 + i} May, 2023", (Turn(f"D{i}:1", "Ana", text),))
        for i, text in enumerate((LISBON_TEXT, LATER_TEXT, THIRD_TEXT), start=1)
    )
    question = Question(1, "Where did Ana move to?", "Lisbon", ("D1:1",), "single-hop")
    conv = Conversation(9, "hand-9", ("Ana", "Ben"), sessions, (question,))
    built = make_system("long-context", make_backend("offline"), params=Params(window=1))
    _, path = run_conversation(built, conv, tmp_path, clock=SimClock())
    assert path is not None
    replayer = make_replayer(read_native(path))
    trim, again = op_of(replayer, "window:2"), op_of(replayer, "window:3")
    answer = op_of(replayer, f"answer:{CASE}")
    assert replayer.downstream(trim) == (again,)
    assert not replayer.replay(CASE, [trim]).passed  # update 3 trims the kept line again
    found = executed_label(replayer, CASE, [Suspect(trim, "update")], answer)
    assert (found.status, found.op_id, found.error_type) == ("decisive", trim, "UpdateError")
    assert not found.outcomes[0].alone


def test_extraction_and_retrieval_both_failing_label_extraction(tmp_path: Path) -> None:
    faults = [
        Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0"})),
        Fault("fault-2", "RetrievalError", CASE, CASE, frozenset({"D1:1#0"})),
    ]
    replayer, names = traced(tmp_path, "mem0", LISBON, faults)
    extract, search = op_of(replayer, "extract:D1:1"), op_of(replayer, f"search:{CASE}")
    answer = op_of(replayer, f"answer:{CASE}")
    suspects = [Suspect(extract, "extraction"), Suspect(search, "retrieval")]
    found = executed_label(replayer, CASE, suspects, answer)
    assert (found.status, found.op_id, found.error_type) == ("decisive", extract, "ExtractionError")
    by_op = {o.op_id: o for o in found.outcomes}
    assert by_op[extract].decisive and not by_op[extract].alone  # extraction alone: not rescued
    assert not by_op[search].decisive and not by_op[search].alone
    assert found.replays <= len(suspects) + 2
    assert names[extract] == "memory_system.extract_facts"


def test_an_answer_that_stays_wrong_with_every_repair_is_a_response_error(tmp_path: Path) -> None:
    fault = Fault("fault-1", "ResponseError", CASE, CASE, frozenset({"D1:1#0"}))
    replayer, _ = traced(tmp_path, "mem0", LISBON, [fault])
    search, answer = op_of(replayer, f"search:{CASE}"), op_of(replayer, f"answer:{CASE}")
    found = executed_label(replayer, CASE, [Suspect(search, "retrieval")], answer)
    assert (found.status, found.op_id, found.error_type) == ("response", answer, "ResponseError")


def test_a_lost_fact_the_answerer_would_still_miss_is_the_extractions_fault(
    tmp_path: Path,
) -> None:
    # the paper's label: with the extraction repaired and an ideal answer step the answer is
    # right (the fact reaches the context); the real answerer still ignores it
    faults = [
        Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0"})),
        Fault("fault-2", "ResponseError", CASE, CASE, frozenset({"D1:1#0"})),
    ]
    replayer, _ = traced(tmp_path, "mem0", LISBON, faults)
    extract, search = op_of(replayer, "extract:D1:1"), op_of(replayer, f"search:{CASE}")
    answer = op_of(replayer, f"answer:{CASE}")
    suspects = [Suspect(extract, "extraction"), Suspect(search, "retrieval")]
    found = executed_label(replayer, CASE, suspects, answer)
    assert (found.status, found.op_id, found.error_type) == ("decisive", extract, "ExtractionError")
    assert found.basis == "context"
    assert (found.answerer.status, found.answerer.op_id) == ("response", answer)
    by_op = {o.op_id: o for o in found.outcomes}
    assert by_op[extract].context and by_op[extract].decisive
    assert by_op[extract].downstream is False and not by_op[extract].rescued
    assert found.as_dict()["with_your_answerer"] == {
        "status": "response", "op_id": answer, "error_type": "ResponseError"
    }  # fmt: skip


@dataclass
class Scripted:
    """A replayer whose answers are given per repaired set (to test the label logic alone);
    ``reaching``: the sets whose replay puts the evidence into the context (None: it does not
    say, and the label reads the answer)."""

    rescued: set[tuple[str, ...]]
    unchanged: set[str] = field(default_factory=set)  # ops whose repair restores nothing
    calls: list[tuple[str, ...]] = field(default_factory=list)
    reaching: set[tuple[str, ...]] | None = None

    def replay(self, case_id: str, repaired: Sequence[str] = ()) -> CaseReplay:
        key = tuple(repaired)
        self.calls.append(key)
        done = tuple(
            Repaired("", op, "x", "RetrievalError") for op in key if op not in self.unchanged
        )
        context = None if self.reaching is None else key in self.reaching
        return CaseReplay(case_id, key in self.rescued, "", done, context)


def test_evidence_in_the_context_as_it_ran_is_a_response_error_whatever_a_repair_does() -> None:
    # the real answer is rescued by repairing b, yet the evidence reached the context anyway
    replayer = Scripted(rescued={("a", "b"), ("b",)}, reaching={(), ("a", "b"), ("b",)})
    suspects = [Suspect("a", "extraction"), Suspect("b", "retrieval")]
    found = executed_label(replayer, "case", suspects, "answer")
    assert (found.status, found.op_id, found.error_type) == ("response", "answer", "ResponseError")
    assert (found.answerer.status, found.answerer.op_id) == ("decisive", "b")
    assert [o.rescued for o in found.outcomes] == [False, True]


def test_no_repair_that_restores_the_evidence_leaves_the_case_unlabelled() -> None:
    replayer = Scripted(rescued=set(), reaching=set())
    found = executed_label(replayer, "case", [Suspect("a", "retrieval")], "answer")
    assert (found.status, found.op_id, found.error_type) == ("unrestored", None, None)
    assert () not in replayer.calls  # the original holds no more than every repair together
    assert found.answerer.status == "response"


def test_a_replayer_that_does_not_say_what_reached_the_context_is_read_by_its_answer() -> None:
    replayer = Scripted(rescued=set())
    found = executed_label(replayer, "case", [Suspect("a", "retrieval")], "answer")
    assert (found.status, found.op_id, found.basis) == ("response", "answer", "answer")


def test_interacting_repairs_leave_no_single_decisive_op_and_are_kept() -> None:
    # all three repaired: wrong; the last two: right; the last alone: wrong
    replayer = Scripted(rescued={("b", "c")})
    suspects = [Suspect(op, "retrieval") for op in ("a", "b", "c")]
    found = executed_label(replayer, "case", suspects, "answer")
    assert (found.status, found.op_id, found.error_type) == ("no_single", None, None)
    assert [o.decisive for o in found.outcomes] == [False, True, False]


def test_a_repair_that_changed_nothing_is_not_replayed_alone() -> None:
    # b is in the middle: b alone is no downstream replay, so only the shortcut spares it
    replayer = Scripted(rescued={("a", "b", "c"), ("a",)}, unchanged={"b"})
    suspects = [Suspect("a", "extraction"), Suspect("b", "update"), Suspect("c", "retrieval")]
    found = executed_label(replayer, "case", suspects, "answer")
    assert found.op_id == "a" and found.replays == len(set(replayer.calls)) == 4
    assert ("b",) not in replayer.calls and {("a",), ("c",)} <= set(replayer.calls)
    assert [o.alone for o in found.outcomes] == [True, False, False]


def test_imported_traces_are_refused(tmp_path: Path) -> None:
    smartcomment = tmp_path / "graph.json"
    smartcomment.write_text(json.dumps({"graph_id": "g", "data": {"nodes": []}}), "utf-8")
    with pytest.raises(NotReplayableError, match="cannot be replayed"):
        read_native(smartcomment)
    otlp = tmp_path / "spans.jsonl"
    otlp.write_text(json.dumps({"resourceSpans": []}) + "\n", "utf-8")
    with pytest.raises(NotReplayableError, match="cannot be replayed"):
        read_native(otlp)


def test_a_trace_that_does_not_reproduce_is_refused(tmp_path: Path) -> None:
    traced(tmp_path, "mem0", LISBON)
    path = next(tmp_path.glob("*.jsonl"))
    lines = path.read_text(encoding="utf-8").splitlines()
    edited = [
        line.replace("memory_system.extract_facts", "memory_system.other", 1)
        if '"op-000001"' in line
        else line
        for line in lines
    ]
    path.write_text("\n".join(edited) + "\n", encoding="utf-8")
    with pytest.raises(NotReplayableError, match="does not reproduce"):
        make_replayer(read_native(path)).replay(CASE)


def test_a_repaired_search_keeps_its_size() -> None:
    from memtrace.systems.base import with_evidence

    evidence = {"e1", "e2"}
    top = ["a", "e1", "b", "c"]
    assert with_evidence(top, ["e2"], lambda x: x in evidence) == ["a", "e1", "b", "e2"]
    assert with_evidence(["e1"], ["e2"], lambda x: x in evidence) == ["e1", "e2"]
    # ordered by the search's own ranking: a planted fault dropped e2, ranked second
    ranking = ["a", "e2", "e1", "b", "c"].index
    assert with_evidence(top, ["e2"], lambda x: x in evidence, rank=ranking) == [
        "a", "e2", "e1", "b"
    ]  # fmt: skip


def test_a_precise_repaired_search_keeps_only_the_evidence() -> None:
    from memtrace.systems.base import with_evidence

    evidence = {"e1", "e2"}
    holds = evidence.__contains__
    assert with_evidence(["a", "e1", "b"], ["e2"], holds, precise=True) == ["e1", "e2"]
    # nothing holds the evidence: nothing to be precise about, the results stay
    assert with_evidence(["a", "b"], [], holds, precise=True) == ["a", "b"]


def test_a_system_without_replay_steps_is_refused(tmp_path: Path) -> None:
    traced(tmp_path, "mem0", LISBON)
    path = next(tmp_path.glob("*.jsonl"))
    head, *rest = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(head)
    record["system"] = "my-own-system"  # memtrace cannot re-run a system it does not know
    path.write_text("\n".join([json.dumps(record), *rest]) + "\n", encoding="utf-8")
    with pytest.raises(NotReplayableError, match=r"'my-own-system'.*--replayer module:attr"):
        read_native(path)
    record["system"] = "mem0-lib"  # a trace without recorded model calls (mem0ai 2.x)
    path.write_text("\n".join([json.dumps(record), *rest]) + "\n", encoding="utf-8")
    with pytest.raises(NotReplayableError, match=r"'mem0-lib' records no model calls"):
        read_native(path)


def sample_with_losses() -> tuple[Conversation, list[Fault]]:
    """The packaged sample's first conversation, with evidence lost at extraction, at search and
    at a window update for every other question: losses for repairs to restore."""
    from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
    from memtrace.systems.text import sentences

    conv = load_locomo(SAMPLE_PATH)[0]
    turns = conv.turns()
    faults = []
    for q in conv.questions[::2]:
        dia = q.evidence[0]
        keys = frozenset(f"{dia}#{i}" for i in range(len(sentences(turns[dia].text))))
        case = f"locomo-qa-{conv.number}-{q.number}"
        faults += [Fault(f"x{q.number}", "ExtractionError", case, dia, keys)]
        faults += [Fault(f"r{q.number}", "RetrievalError", case, case, keys)]
        later = conv.sessions[-1].turns[0].dia_id  # long-context trims the window there
        faults += [Fault(f"u{q.number}", "UpdateError", case, later, keys)]
    return conv, faults


@pytest.mark.parametrize("system", list(REPLAYABLE_SYSTEMS))
def test_a_replay_resumed_from_a_snapshot_equals_a_repaired_run_from_scratch(
    tmp_path: Path, system: str
) -> None:
    """The engine's fast path (snapshots, shared memories, mem0's similarity shortcuts) gives
    exactly what running the whole conversation with the same repair gives."""
    import random

    from memtrace.systems.core import RepairPlan

    conv, faults = sample_with_losses()
    replayer, _ = traced(tmp_path, system, conv, faults)
    original = make_system(system, make_backend("offline"), faults=faults).run(conv)
    ops = sorted(replayer.steps())
    picks = random.Random(19)
    changed = 0
    failed = [r for r in original.results if not r.passed]
    for result in picks.sample(failed, min(8, len(failed))):
        # the steps of the case's evidence messages (where a repair changes something), its
        # search, the last window trim, and one op anywhere
        dia_ids = {key.partition("#")[0] for key in replayer.evidence_sources(result.case_id)}
        near = [
            op
            for op, step in replayer.steps().items()
            if step.partition(":")[2] in dia_ids
            or step in (f"search:{result.case_id}", f"window:{len(conv.sessions)}")
        ]
        repaired = [*picks.sample(near, min(3, len(near))), picks.choice(ops)]
        fast = replayer.replay(result.case_id, repaired)
        steps = frozenset(replayer.step_of(op) for op in repaired)
        scratch = make_system(
            system,
            make_backend("offline"),
            faults=faults,
            repair=RepairPlan(steps, replayer.evidence_sources(result.case_id)),
        )
        (again,) = scratch.run(conv, {result.case_id}).results
        assert (fast.passed, fast.prediction) == (again.passed, again.prediction)
        assert [(r.step, r.detail, r.error_type) for r in fast.repaired] == [
            (r.step, r.detail, r.error_type) for r in scratch.run_state.repaired
        ]
        changed += bool(fast.repaired)
    assert changed  # some repairs restored something: the comparison is not of no-ops


@pytest.mark.parametrize("system", ["mem0", "evermemos"])
def test_replays_of_many_cases_on_threads_equal_the_same_replays_in_turn(
    tmp_path: Path, system: str
) -> None:
    """No lock serializes replays (``attribute --workers``): several threads replaying cases of
    one trace at once, building repaired memories and the step map on demand, answer exactly
    what one replayer answers replaying them one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    conv, faults = sample_with_losses()
    sequential, _ = traced(tmp_path / "a", system, conv, faults)
    threaded, _ = traced(tmp_path / "b", system, conv, faults)
    jobs = []
    for case_id in sorted(sequential.inputs.cases):
        dia_ids = {k.partition("#")[0] for k in sequential.evidence_sources(case_id)}
        near = tuple(
            sorted(
                op for op, step in sequential.steps().items() if step.partition(":")[2] in dia_ids
            )
        )
        search = tuple(op for op, step in sequential.steps().items() if step == f"search:{case_id}")
        jobs += [(case_id, ()), (case_id, near[:2]), (case_id, (*near, *search))]
    expected = [sequential.replay(case_id, ops) for case_id, ops in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:  # the step map is built by the first
        got = list(pool.map(lambda job: threaded.replay(*job), jobs))
    assert got == expected
    assert threaded.replays == sequential.replays == len(jobs)
    assert any(r.repaired for r in got)  # repairs ran, not only the original answers


# -- evermemos: boundary / MemCell, extraction and retrieval repairs ----------------------------
CITY = conversation(
    [(t.speaker, t.text) for t in LISBON.sessions[0].turns],
    # a word no unit holds: the sufficiency check falls short, round 2 and the rerank run
    [Question(1, "Which city did Ana move to last spring?", "Lisbon", ("D1:1",), "single-hop")],
)


def evermemos_label(
    tmp_path: Path, fault: Fault
) -> tuple[TraceReplayer, dict[str, str], tuple[str | None, str | None, str]]:
    """The executed label of CASE with ``fault`` planted, every step of the case a suspect."""
    replayer, names = traced(tmp_path, "evermemos", CITY, [fault])
    assert not replayer.replay(CASE).passed  # the planted fault broke it
    suspects = [
        Suspect(op, "extraction" if kind in CONSTRUCTION else "retrieval")
        for op, step in replayer.steps().items()
        for kind in [step.split(":", 1)[0]]
        if kind in CONSTRUCTION or kind in RETRIEVAL
    ]
    found = executed_label(replayer, CASE, suspects, op_of(replayer, f"answer:{CASE}"))
    return replayer, names, (found.op_id, found.error_type, found.status)


CONSTRUCTION = ("boundary", "memcell", "extract")  # in execution order, as the label needs
RETRIEVAL = ("search", "round1", "round2", "rerank")


def test_evermemos_extraction_repair_keeps_the_evidence_in_episode_and_event_log(
    tmp_path: Path,
) -> None:
    fault = Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0"}))
    replayer, names, label = evermemos_label(tmp_path, fault)
    extract = op_of(replayer, "extract:memcell-00001")
    assert label == (extract, "ExtractionError", "decisive")
    assert names[extract] == "memory_system.extract_memory"
    fixed = replayer.replay(CASE, [extract])
    assert fixed.passed and "episode: restored 1" in fixed.repaired[0].detail
    assert "event log: restored 1" in fixed.repaired[0].detail


@pytest.mark.parametrize("step", ["memcell:memcell-00001", "boundary:D1:2"])
def test_evermemos_memcell_repair_keeps_the_evidence_of_the_unit_built_from_it(
    tmp_path: Path, step: str
) -> None:
    fault = Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0"}))
    replayer, _ = traced(tmp_path, "evermemos", CITY, [fault])
    op = op_of(replayer, step)
    fixed = replayer.replay(CASE, [op])
    assert fixed.passed
    assert [(r.op_id, r.error_type) for r in fixed.repaired] == [(op, "ExtractionError")]


@pytest.mark.parametrize(
    ("anchor", "step", "name"),
    [
        (CASE, f"search:{CASE}", "memory_system.hybrid_retrieval"),
        (f"rerank:{CASE}", f"rerank:{CASE}", "memory_system.agentic_final_rerank"),
    ],
)
def test_evermemos_retrieval_repair_adds_the_unit_holding_the_evidence(
    tmp_path: Path, anchor: str, step: str, name: str
) -> None:
    fault = Fault("fault-1", "RetrievalError", CASE, anchor, frozenset({"D1:1#0"}))
    replayer, names, label = evermemos_label(tmp_path, fault)
    op = op_of(replayer, step)
    assert label == (op, "RetrievalError", "decisive") and names[op] == name
    fixed = replayer.replay(CASE, [op])
    assert fixed.passed and fixed.repaired[0].detail == "added memory-unit-00001"


def test_evermemos_an_ignored_context_is_a_response_error(tmp_path: Path) -> None:
    fault = Fault("fault-1", "ResponseError", CASE, CASE, frozenset({"D1:1#0"}))
    replayer, _, label = evermemos_label(tmp_path, fault)
    assert label == (op_of(replayer, f"answer:{CASE}"), "ResponseError", "response")


def test_a_mem0_lib_memory_holds_evidence_as_the_offline_judge_reads_it() -> None:
    from memtrace.reading import LEXICAL, holds

    assert holds(LEXICAL, "I ran a 5k race.", ["Farid ran a 5k race for the children's hospital"])
    assert not holds(LEXICAL, "I ran a 5k race.", ["Farid ran"])  # a word is missing
    assert not holds(LEXICAL, "Oh wow!", ["Chloe: oh wow, I know"])  # no content words


def test_what_still_stands_between_a_wrong_answer_and_its_evidence() -> None:
    def after(missing: dict[str, Loss | None], passed: bool = False, keys: str = "k") -> str | None:
        return still_lost_at(QuestionResult("c", "single-hop", passed, "", tuple(keys), missing))

    retrieval, extraction = Loss("RetrievalError", "op-2"), Loss("ExtractionError", "op-1")
    assert after({"a": retrieval}, passed=True) is None
    assert after({}, keys="") == UNSUPPORTED  # no evidence sentence to follow
    assert after({}) == "ResponseError"  # all of it reached the context
    assert after({"a": None}) is None  # the trail of the missing sentence is lost
    most = {"a": retrieval, "b": Loss("RetrievalError", "op-3"), "c": extraction, "d": None}
    assert after(most) == "RetrievalError"
    assert after({"a": retrieval, "b": extraction}) == "ExtractionError"  # a tie: the earliest


def test_a_joint_replay_answers_only_the_cases_asked_and_the_answer_step_by_its_oracle(
    tmp_path: Path,
) -> None:
    second = Question(2, "Where does Ana walk every evening?", "the river", ("D1:3",), "single-hop")
    turns = [(turn.speaker, turn.text) for turn in LISBON.sessions[0].turns]
    two = conversation(turns, [*LISBON.questions, second])
    replayer, names = traced(tmp_path, "mem0", two)
    answer_op = next(op for op, name in names.items() if name == SYSTEMS["mem0"].answer_op)
    other = "locomo-qa-9-2"
    asked = {CASE: [answer_op]}
    assert replayer.joint_cost(asked) == 0
    assert dict(replayer.replay_jointly(asked)) == {CASE: ReplayedAnswer(True)}
    assert dict(replayer.replay_jointly(asked, cases=[other])) == {}
    assert replayer.replays == 0


def test_a_joint_replay_builds_the_memory_with_every_repaired_construction_step(
    tmp_path: Path,
) -> None:
    fault = Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0"}))
    replayer, _ = traced(tmp_path, "mem0", LISBON, [fault])
    extract = op_of(replayer, "extract:D1:1")
    assert dict(replayer.replay_jointly({CASE: [extract]})) == {CASE: ReplayedAnswer(True)}
    unrepaired = replayer.replay(CASE)
    assert (unrepaired.case_id, unrepaired.passed) == (CASE, False)  # the fault drops the fact


# -- the engine's shared work: each memory built once, resumed where its repair starts ---------
SISTER = "I moved to Lisbon last spring. My sister Clara lives in Porto now."
TWO_SESSIONS = Conversation(
    9,
    "hand-9",
    ("Ana", "Ben"),
    (
        Session(1, DATE, (Turn("D1:1", "Ana", SISTER), Turn("D1:2", "Ben", LATER_TEXT))),
        Session(
            2,
            "1:00 pm on 9 May, 2023",
            (
                Turn("D2:1", "Ana", THIRD_TEXT),
                Turn("D2:2", "Ben", "The harbour office closes early on Fridays in summer."),
                Turn("D2:3", "Ana", "Clara promised to bring her two dogs along next month."),
            ),
        ),
    ),
    (
        Question(1, "Where did Ana move to?", "Lisbon", ("D1:1",), "single-hop"),
        Question(2, "Where does Clara live?", "Porto", ("D1:1",), "single-hop"),
    ),
)
PORTO = "locomo-qa-9-2"


def sister_trace(tmp_path: Path) -> TraceReplayer:
    """TWO_SESSIONS with both sentences of D1:1 dropped at extraction: each case's repair of
    that one step restores its own sentence (Lisbon for CASE, Porto for PORTO)."""
    dropped = Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0", "D1:1#1"}))
    replayer, _ = traced(tmp_path, "mem0", TWO_SESSIONS, [dropped])
    return replayer


def constructions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The session every memory construction of a mem0 system starts at (``resume``), from now
    on: what a replay builds, and from where."""
    from memtrace.systems.mem0 import Mem0System

    started: list[int] = []
    construct = Mem0System.construct

    def counted(system: Mem0System, conv: Conversation, **options: Any) -> None:
        started.append(options.get("resume", 0))
        construct(system, conv, **options)

    monkeypatch.setattr(Mem0System, "construct", counted)
    return started


def test_two_cases_repairing_the_same_construction_step_each_restore_their_own_evidence(
    tmp_path: Path,
) -> None:
    replayer = sister_trace(tmp_path)
    extract = op_of(replayer, "extract:D1:1")
    assert replayer.evidence_sources(CASE) != replayer.evidence_sources(PORTO)
    lisbon = replayer.replay(CASE, [extract])
    porto = replayer.replay(PORTO, [extract])  # the same step, another case's evidence
    assert (lisbon.passed, porto.passed) == (True, True)
    assert "Porto" in porto.prediction and "Porto" not in lisbon.prediction


def test_each_memory_is_built_once_and_a_repair_resumes_at_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replayer = sister_trace(tmp_path)
    built = constructions(monkeypatch)
    first, later = op_of(replayer, "extract:D1:1"), op_of(replayer, "extract:D2:1")
    for _ in range(2):  # asked again, every memory is the cached one
        for case_id in (CASE, PORTO):
            replayer.replay(case_id)
        replayer.replay(CASE, [later])
        replayer.replay(CASE, [first, later])
    # the step map's run, the unrepaired memory (with its snapshots), then each repaired memory
    # resumed before the session of its first repaired step
    assert built == [0, 0, 1, 0]
    assert replayer.replays == 8


def test_the_memories_kept_are_bounded_and_the_unrepaired_one_is_never_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from itertools import combinations

    from memtrace.replay.engine import MAX_BUILT

    replayer = sister_trace(tmp_path)
    extracts = sorted(op for op, step in replayer.steps().items() if step.startswith("extract:"))
    repairs = [ops for n in range(1, len(extracts) + 1) for ops in combinations(extracts, n)]
    assert len(repairs) > MAX_BUILT
    replayer.replay(CASE)  # the unrepaired memory
    built = constructions(monkeypatch)
    for ops in repairs[: MAX_BUILT - 1]:
        replayer.replay(CASE, ops)
    replayer.replay(CASE, repairs[0])
    replayer.replay(CASE)
    assert len(built) == MAX_BUILT - 1  # MAX_BUILT memories kept: none built again
    replayer.replay(CASE, repairs[MAX_BUILT - 1])  # one more: the oldest repaired one goes
    replayer.replay(CASE)
    assert len(built) == MAX_BUILT
    replayer.replay(CASE, repairs[0])
    assert len(built) == MAX_BUILT + 1


def test_a_system_without_snapshots_replays_from_the_first_session_what_snapshots_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mem0-lib's path (its memory is in Mem0's store: no snapshot), run on the offline mem0:
    the step map's run is the unrepaired memory, and each repaired memory is built from the
    first session; the answers are those of a replayer that resumes from snapshots."""
    from memtrace.systems.mem0 import Mem0System

    replayer = sister_trace(tmp_path)
    first, later = op_of(replayer, "extract:D1:1"), op_of(replayer, "extract:D2:1")
    jobs = [(CASE, ()), (PORTO, ()), (CASE, (later,)), (CASE, (first,)), (PORTO, (first,))]
    expected = [replayer.replay(case_id, ops) for case_id, ops in jobs]
    assert [r.passed for r in expected] == [False, False, False, True, True]
    monkeypatch.setattr(Mem0System, "replay_snapshots", False)
    rebuilt = make_replayer(replayer.inputs)
    built = constructions(monkeypatch)
    assert [rebuilt.replay(case_id, ops) for case_id, ops in jobs] == expected
    assert built == [0, 0, 0, 0]  # the step map's run, then the three repaired memories


# -- what a replay reads back of a trace ---------------------------------------------------------
def records_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rewritten(path: Path, edit: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """The trace's records, each passed through ``edit`` (which changes it in place)."""
    records = records_of(path)
    for record in records:
        edit(record)
    return records


def test_a_trace_gives_back_the_conversation_faults_and_settings_that_ran(tmp_path: Path) -> None:
    from memtrace.prompts import Prompt
    from memtrace.replay.inputs import inputs_from_records
    from memtrace.systems.prompts import DEFAULTS, QUESTION_ANSWERING
    from memtrace.systems.rankers import TrigramRanker

    unseen = Question(3, "What did Ana cook?", "sardines", ("D2:1", "D7:4"), "multi-hop")
    conv = dataclasses.replace(TWO_SESSIONS, questions=(*TWO_SESSIONS.questions, unseen))
    faults = (
        Fault("fault-1", "ExtractionError", CASE, "D1:1", frozenset({"D1:1#0", "D1:1#1"})),
        Fault("fault-2", "RetrievalError", PORTO, PORTO, frozenset({"D1:1#1"})),
    )
    default = DEFAULTS[QUESTION_ANSWERING]
    answering = Prompt(
        default.name, default.version + 1, default.text + " Be brief.", default.inputs
    )
    params = Params(top_k=3, answer_items=1)
    built = make_system(
        "mem0",
        make_backend("offline"),
        params=params,
        faults=faults,
        prompts={QUESTION_ANSWERING: answering},
        ranker=TrigramRanker(),
    )
    planted = {"planted": [{**dataclasses.asdict(f), "sources": sorted(f.sources)} for f in faults]}
    _, path = run_conversation(built, conv, tmp_path, clock=SimClock(), metadata={"bench": planted})
    assert path is not None
    inputs = read_native(path)
    assert inputs.conversation == conv  # D7:4 is no turn: the trace keeps it as missing evidence
    assert inputs.faults == faults
    assert (inputs.params, inputs.retriever, inputs.backend) == (params, "trigrams", "offline")
    assert inputs.prompts == {QUESTION_ANSWERING: answering}  # only what the run changed

    def without_dia_id(record: dict[str, Any]) -> None:
        if record.get("category") == "message":  # an older trace: the turn is in the name
            del record["metadata"]["dia_id"]

    def renamed(record: dict[str, Any]) -> None:
        if record.get("category") == "message":  # the recorded dia id comes before the name
            record["name"] = f"turn:{record['name']}"

    for edit in (without_dia_id, renamed):
        again = inputs_from_records(rewritten(path, edit), "edited")
        assert again.conversation == conv


def test_recorded_model_calls_are_served_in_the_order_the_operations_ran(tmp_path: Path) -> None:
    from memtrace.replay.inputs import inputs_from_records

    traced(tmp_path, "mem0", LISBON)
    path = next(tmp_path.glob("*.jsonl"))
    calls = {  # op id -> (request digest, reply); op-000003 recorded a request and no reply
        "op-000001": ("digest-a", "first"),
        "op-000002": ("digest-b", "other"),
        "op-000003": ("digest-a", None),
        "op-000004": ("digest-a", "second"),
    }

    def recorded(record: dict[str, Any]) -> None:
        if record["type"] == "operation" and record["id"] in calls:
            request, reply = calls[record["id"]]
            record["metadata"] = {"llm_request": request, "llm_reply": reply}

    records = rewritten(path, recorded)
    head, rest = records[0], records[1:]
    shuffled = [head, *reversed(rest)]  # the graph returns operations in no order
    inputs = inputs_from_records(shuffled, "from the graph")
    assert inputs.recorded == {"digest-a": ("first", "second"), "digest-b": ("other",)}


def test_what_a_trace_cannot_rebuild_is_refused_by_name(tmp_path: Path) -> None:
    from memtrace.replay.inputs import inputs_from_records

    traced(tmp_path, "mem0", LISBON)
    path = next(tmp_path.glob("*.jsonl"))

    def own_case(record: dict[str, Any]) -> None:
        if record["type"] == "case":
            record["id"] = "my-question-7"

    def no_sessions(record: dict[str, Any]) -> None:
        if record["type"] == "session":
            record["name"] = "chat"

    def wrote_other(record: dict[str, Any]) -> None:
        if record.get("id") == "op-000001":  # the same op name, other variables written
            record["writes"] = ["facts:D9:9@1"]

    with pytest.raises(NotReplayableError, match="case 'my-question-7' is not a LoCoMo question"):
        inputs_from_records(rewritten(path, own_case), "t")
    with pytest.raises(NotReplayableError, match=r"^t: no LoCoMo sessions \(locomo-N-session-K\)"):
        inputs_from_records(rewritten(path, no_sessions), "t")
    edited = inputs_from_records(rewritten(path, wrote_other), "t")
    with pytest.raises(NotReplayableError, match="does not reproduce"):
        make_replayer(edited).replay(CASE)


def test_a_replay_searches_with_the_ranker_the_trace_recorded(tmp_path: Path) -> None:
    from memtrace.systems.rankers import BM25Ranker, TrigramRanker

    conv = conversation(  # "relocate" reaches "relocated" by trigrams only; BM25 finds "city"
        [
            ("Ana", "I relocated to Lisbon last spring for the harbour job."),
            ("Ben", "Ana, the city with the best food in the whole country is Porto."),
        ],
        [Question(1, "Which city did Ana relocate to?", "Lisbon", ("D1:1",), "single-hop")],
    )
    answered = {}
    for ranker in (TrigramRanker(), BM25Ranker()):
        built = make_system("mem0", make_backend("offline"), params=Params(top_k=1), ranker=ranker)
        folder = tmp_path / ranker.name
        original, path = run_conversation(built, conv, folder, clock=SimClock())
        assert path is not None
        answered[ranker.name] = (original.results[0].passed, make_replayer(read_native(path)))
    assert [passed for passed, _ in answered.values()] == [True, False]
    for passed, replayer in answered.values():
        assert replayer.replay(CASE).passed == passed


def test_a_setting_that_changed_during_the_run_is_refused_and_one_read_again_is_not(
    tmp_path: Path,
) -> None:
    from memtrace.replay.inputs import inputs_from_records

    traced(tmp_path, "mem0", LISBON)
    path = next(tmp_path.glob("*.jsonl"))
    records = records_of(path)
    top_k = next(r for r in records if r.get("category") == "parameter" and r["name"] == "top_k")
    again = {**top_k, "id": "parameter:top_k@2", "version": 2}  # the same value, recorded twice
    assert inputs_from_records([*records, again], "t").params == read_native(path).params
    changed = {**again, "value": json.dumps(json.loads(top_k["value"]) + 1)}
    with pytest.raises(NotReplayableError, match=r"^t: parameter 'top_k' changed during the run"):
        inputs_from_records([*records, changed], "t")


def test_records_in_any_order_and_a_trace_without_cases_read_back_the_same_run(
    tmp_path: Path,
) -> None:
    from memtrace.replay.inputs import RecordedCase, inputs_from_records

    traced(tmp_path, "mem0", LISBON)
    path = next(tmp_path.glob("*.jsonl"))
    head, *rest = records_of(path)
    shuffled = inputs_from_records([head, *reversed(rest)], "from the graph")  # no order there
    inputs = read_native(path)
    assert shuffled == inputs
    assert inputs.trace_id == head["id"] == "mem0-locomo-9"
    prediction = inputs.cases[CASE].prediction
    assert inputs.cases == {CASE: RecordedCase(CASE, True, prediction)} and "Lisbon" in prediction
    # the conversation alone (no question asked, no operation): nothing to replay, nothing lost
    kept = [r for r in rest if r["type"] == "session" or r.get("category") == "message"]
    alone = inputs_from_records([head, *kept], "t")
    assert alone.conversation.sessions == LISBON.sessions and alone.conversation.questions == ()
    assert (alone.cases, alone.operations, alone.recorded) == ({}, {}, {})
    with pytest.raises(NotReplayableError, match=r"^t: no LoCoMo sessions"):
        inputs_from_records([head], "t")
