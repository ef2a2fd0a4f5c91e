"""The executed label and the replay judge's decision, pinned on scripted replayers.

A scripted replayer says, per repaired set, whether the case is rescued and what each repair
restored; nothing is guessed from an op's kind where a repair restored something else. The
small hand-built case (one message, one memory rewritten, one deleted) is plain enough that the
text matching of ``attribution/text.py`` cannot read it two ways.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pytest

from memtrace.attribution.counterfactual import (
    AnswererLabel,
    ExecutedLabel,
    Suspect,
    executed_label,
)
from memtrace.attribution.judges import CaseView
from memtrace.attribution.model import Anchor, Candidate, CaseGraph, Evidence, Memory, OpRef, Trail
from memtrace.attribution.replay_judge import ReplayJudge, _rewriters
from memtrace.attribution.walk import Found
from memtrace.taxonomy import ErrorType
from memtrace.usage import Usage


@dataclass(frozen=True)
class Change:
    op_id: str
    detail: str
    error_type: ErrorType


@dataclass(frozen=True)
class Ran:
    passed: bool
    repaired: tuple[Change, ...]
    context: bool | None = None


@dataclass
class Scripted:
    """Rescued exactly for the repaired sets in ``rescued``; a repaired op reports what its
    repair restored (``restores``: op -> error type) unless it is in ``unchanged``. The evidence
    reaches the answer's context exactly for the sets in ``reached`` (None: the replayer does
    not say, as a user's replayer leaving ``Replayed.context`` unset)."""

    rescued: set[frozenset[str]]
    restores: Mapping[str, ErrorType] = field(default_factory=dict)
    unchanged: set[str] = field(default_factory=set)
    reached: set[frozenset[str]] | None = None
    calls: list[frozenset[str]] = field(default_factory=list)

    def replay(self, case_id: str, repaired: Sequence[str] = ()) -> Ran:
        assert case_id == "case"
        key = frozenset(repaired)
        self.calls.append(key)
        done = tuple(
            Change(op, f"restored for {op}", self.restores.get(op, "RetrievalError"))
            for op in sorted(key)
            if op not in self.unchanged
        )
        context = None if self.reached is None else key in self.reached
        return Ran(key in self.rescued, done, context)


@dataclass
class WithDownstream(Scripted):
    later: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def downstream(self, op_id: str) -> Sequence[str]:
        return self.later.get(op_id, ())


def sets(*groups: Iterable[str]) -> set[frozenset[str]]:
    return {frozenset(group) for group in groups}


ORIGINAL = frozenset[str]()  # the run as it was: nothing repaired


def label_of(
    replayer: Scripted, kinds: Sequence[tuple[str, str]], answer: str | None = "ans"
) -> ExecutedLabel:
    return executed_label(replayer, "case", [Suspect(op, kind) for op, kind in kinds], answer)


# -- the executed label -------------------------------------------------------------------------


def test_the_error_type_is_what_the_repair_restored_not_the_op_kind() -> None:
    # a search op whose repair restored a memory an update had lost: UpdateError
    replayer = Scripted(
        rescued=sets("ab", "b"), restores={"a": "ExtractionError", "b": "UpdateError"}
    )
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("decisive", "b", "UpdateError")
    assert found.case_id == "case"
    assert found.reason == (
        "replayed with b and its ideal downstream repaired, the answer is correct; "
        "without b's repair it is not (restored for b)"
    )
    by_op = {o.op_id: o for o in found.outcomes}
    assert (by_op["a"].error_type, by_op["b"].error_type) == ("ExtractionError", "UpdateError")
    assert [o.decisive for o in found.outcomes] == [False, True]
    assert by_op["b"].changed == "restored for b"


def test_a_decisive_repair_that_reported_nothing_takes_the_type_of_the_op_kind() -> None:
    replayer = Scripted(rescued=sets("ab"), unchanged={"a"})
    found = label_of(replayer, [("a", "deletion"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("decisive", "a", "DeletionError")
    assert found.outcomes[0].changed == "" and found.outcomes[0].error_type is None
    assert found.reason.endswith("without a's repair it is not (repaired)")


def test_only_the_transition_is_decisive_and_each_fix_alone_is_replayed() -> None:
    # ok(0) = abc, ok(1) = bc rescued; ok(2) = c not: b is decisive, the earliest is b
    replayer = Scripted(rescued=sets("abc", "bc", "b"), restores={"b": "DeletionError"})
    found = label_of(replayer, [("a", "extraction"), ("b", "other"), ("c", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("decisive", "b", "DeletionError")
    assert [(o.op_id, o.downstream, o.alone, o.decisive) for o in found.outcomes] == [
        ("a", True, False, False),
        ("b", True, True, True),
        ("c", False, False, False),
    ]
    assert found.replays == len(set(replayer.calls)) == 5  # abc, bc, c, a, b


def test_a_repair_that_changed_nothing_is_not_replayed_alone() -> None:
    # b's repair changes nothing in any replay: b alone is the original (wrong) run, not replayed;
    # a and c changed something and are replayed alone (a alone rescues it)
    replayer = Scripted(rescued=sets("abc", "a"), unchanged={"b"})
    found = label_of(replayer, [("a", "extraction"), ("b", "update"), ("c", "retrieval")])
    assert (found.status, found.op_id) == ("decisive", "a")
    assert frozenset("b") not in replayer.calls
    assert {frozenset("a"), frozenset("c")} <= set(replayer.calls)
    assert [o.alone for o in found.outcomes] == [True, False, False]
    assert [o.decisive for o in found.outcomes] == [True, False, False]
    assert found.replays == 4  # abc, bc, a, c


def test_an_unchanged_repair_is_replayed_alone_unless_a_replay_before_it_ran_as_it_did() -> None:
    # abc rescues the answer, bc does not: c's own downstream replay (every op before c as it
    # ran) never happened, so c reported no change only with a and b repaired: c is replayed
    # alone all the same
    replayer = Scripted(rescued=sets("abc"), unchanged={"c"})
    found = label_of(replayer, [("a", "extraction"), ("b", "update"), ("c", "retrieval")])
    assert (found.status, found.op_id) == ("decisive", "a")
    assert frozenset("c") in replayer.calls


def test_fix_alone_can_be_left_out() -> None:
    replayer = Scripted(rescued=sets("ab", "a"))
    found = executed_label(
        replayer, "case", [Suspect("a", "extraction"), Suspect("b", "retrieval")], "ans", False
    )
    assert found.op_id == "a" and not any(o.alone for o in found.outcomes)
    assert set(replayer.calls) == sets("ab", "b")


def test_every_repair_together_failing_is_a_response_error_at_the_answer() -> None:
    replayer = Scripted(rescued=set())
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("response", "ans", "ResponseError")
    assert [o.downstream for o in found.outcomes] == [False, False]
    assert found.reason == (
        "with all 2 non-answer candidates and their ideal downstream repaired the answer is "
        "still wrong (what reached the answer's context is not known: read by the answer)"
    )
    assert (found.case_id, found.replays) == ("case", 3)  # ab, b, a


def test_no_candidate_but_the_answer_is_a_response_error_after_one_replay() -> None:
    # one replay, the run as it was (a replayer of its own that does not say what reached the
    # answer's context: read by the answer)
    replayer = Scripted(rescued=set())
    found = label_of(replayer, [("ans", "generation")])
    assert (found.status, found.op_id, found.error_type) == ("response", "ans", "ResponseError")
    assert found.replays == 1 and found.outcomes == ()
    assert found.reason.startswith("with all 0 non-answer candidates")


def test_no_answer_op_and_no_rescue_blames_nothing() -> None:
    found = label_of(Scripted(rescued=set()), [("a", "extraction")], answer=None)
    assert (found.status, found.op_id, found.error_type) == ("no_single", None, None)


def test_interacting_repairs_are_no_single_decisive_op() -> None:
    replayer = Scripted(rescued=sets("bc"))
    found = label_of(replayer, [("a", "extraction"), ("b", "update"), ("c", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("no_single", None, None)
    assert [o.decisive for o in found.outcomes] == [False, True, False]
    assert [o.downstream for o in found.outcomes] == [False, True, False]
    assert (found.case_id, found.replays) == ("case", len(set(replayer.calls)))
    assert "the repairs interact" in found.reason


def test_the_ideal_downstream_repairs_the_later_construction_ops_too() -> None:
    # a's repair is undone by z (no candidate) unless z is repaired along with it
    replayer = WithDownstream(rescued=sets("abz"), later={"a": ("z",)})
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("decisive", "a", "RetrievalError")
    assert frozenset("abz") in replayer.calls and frozenset("ab") not in replayer.calls


def test_the_label_as_json() -> None:
    replayer = Scripted(rescued=sets("ab", "b"))
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert found.as_dict() == {
        "status": "decisive",
        "op_id": "b",
        "error_type": "RetrievalError",
        "basis": "answer",
        "replays": 3,
        "with_your_answerer": {
            "status": "decisive", "op_id": "b", "error_type": "RetrievalError"
        },
        "candidates": [
            {"op_id": "a", "context": True, "downstream": True, "alone": False,
             "decisive": False, "rescued": False, "changed": "restored for a"},
            {"op_id": "b", "context": True, "downstream": True, "alone": True,
             "decisive": True, "rescued": True, "changed": "restored for b"},
        ],
    }  # fmt: skip


# -- the paper's label: what reached the answer's context (an ideal answer step) ----------------


def test_a_lost_fact_is_blamed_where_it_was_lost_though_your_answerer_stays_wrong() -> None:
    # issue 38's mem0-lib case: a's repair puts the dropped fact into the answer's context, the
    # real answerer still answers wrong: the label is a, "with your answerer" the answer op
    replayer = Scripted(rescued=set(), reached=sets("ab"), restores={"a": "ExtractionError"})
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("decisive", "a", "ExtractionError")
    assert found.basis == "context"
    assert found.reason == (
        "replayed with a and its ideal downstream repaired, the evidence reaches the answer's "
        "context; without a's repair it does not (restored for a)"
    )
    assert found.answerer == AnswererLabel("response", "ans", "ResponseError")
    assert [
        (o.op_id, o.context, o.downstream, o.alone, o.decisive, o.rescued) for o in found.outcomes
    ] == [("a", True, False, False, True, False), ("b", False, False, False, False, False)]
    assert found.replays == 3 and set(replayer.calls) == sets("ab", "b", "a")


def test_a_response_error_only_when_the_evidence_was_in_the_context_as_the_run_went() -> None:
    # every repair keeps the evidence in the context, the run as it was too: the answer step
    # had it and answered wrong; the original run is replayed to know that
    replayer = Scripted(rescued=set(), reached=sets("ab", "b", ""))
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("response", "ans", "ResponseError")
    assert found.reason == (
        "the evidence was in the answer's context in the run as it was, and the answer is wrong"
    )
    assert ORIGINAL in replayer.calls and found.replays == 4  # ab, b, (), a
    assert [o.context for o in found.outcomes] == [True, True]
    assert not any(o.decisive for o in found.outcomes)
    assert found.answerer == AnswererLabel("response", "ans", "ResponseError")


def test_a_repair_that_does_not_keep_the_evidence_to_the_original_run_is_decisive() -> None:
    # ab and b reach the context, the run as it was does not: b is the last candidate, decisive
    replayer = Scripted(rescued=sets("ab"), reached=sets("ab", "b"))
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id) == ("decisive", "b")
    assert [o.decisive for o in found.outcomes] == [False, True]
    assert ORIGINAL in replayer.calls
    # your answerer turns right only with a's repair too
    assert found.answerer == AnswererLabel("decisive", "a", "RetrievalError")
    assert [o.rescued for o in found.outcomes] == [True, False]
    assert [o.downstream for o in found.outcomes] == [True, False]


def test_no_repair_restoring_the_evidence_is_unrestored_and_blames_nothing() -> None:
    # nothing reaches the context: no label; the original run is not replayed for it (a repair
    # only restores)
    replayer = Scripted(rescued=set(), reached=set())
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("unrestored", None, None)
    assert found.reason == (
        "with all 2 non-answer candidates and their ideal downstream repaired the evidence "
        "still does not reach the answer's context"
    )
    assert ORIGINAL not in replayer.calls and found.replays == 3  # ab, b, a
    assert [o.context for o in found.outcomes] == [False, False]
    assert found.answerer == AnswererLabel("response", "ans", "ResponseError")


@pytest.mark.parametrize(
    ("reached", "status", "reason"),
    [
        (set(), "unrestored", "no non-answer candidate, and the evidence was not in the answer's "
         "context"),
        ({ORIGINAL}, "response", "the evidence was in the answer's context in the run as it was, "
         "and the answer is wrong"),
    ],
)  # fmt: skip
def test_with_the_answer_op_alone_the_original_context_decides(
    reached: set[frozenset[str]], status: str, reason: str
) -> None:
    replayer = Scripted(rescued=set(), reached=reached)
    found = label_of(replayer, [("ans", "generation")])
    assert (found.status, found.reason, found.replays) == (status, reason, 1)
    assert found.op_id == ("ans" if status == "response" else None)


def test_repairs_that_interact_on_the_context_are_no_single_decisive_op() -> None:
    # bc reaches the context, abc does not (a's repair pushes it out again): no single op
    replayer = Scripted(rescued=set(), reached=sets("bc"))
    found = label_of(replayer, [("a", "extraction"), ("b", "update"), ("c", "retrieval")])
    assert (found.status, found.op_id, found.error_type) == ("no_single", None, None)
    assert found.reason == (
        "repairing every candidate leaves the evidence out of the answer's context, yet "
        "repairing only later ones puts it there: the repairs interact and no single "
        "operation is decisive"
    )
    assert [o.context for o in found.outcomes] == [False, True, False]
    assert [o.decisive for o in found.outcomes] == [False, True, False]
    assert ORIGINAL in replayer.calls  # where the last turn is needs the original run


def test_interacting_repairs_with_the_evidence_in_the_original_context_blame_the_answer() -> None:
    replayer = Scripted(rescued=set(), reached=sets("bc", ""))
    found = label_of(replayer, [("a", "extraction"), ("b", "update"), ("c", "retrieval")])
    assert (found.status, found.op_id) == ("response", "ans")


def test_your_answerer_gives_no_single_op_when_its_rescues_interact() -> None:
    replayer = Scripted(rescued=sets("bc"), reached=sets("abc", "bc", "c"))
    found = label_of(replayer, [("a", "extraction"), ("b", "update"), ("c", "retrieval")])
    assert (found.status, found.op_id) == ("decisive", "c")
    assert found.answerer == AnswererLabel("no_single", None, None)
    assert [o.rescued for o in found.outcomes] == [False, True, False]


def test_without_an_answer_op_a_restoring_repair_still_decides_and_nothing_else_does() -> None:
    found = label_of(Scripted(rescued=set(), reached=sets("ab")), [("a", "x"), ("b", "y")], None)
    assert (found.status, found.op_id, found.error_type) == ("decisive", "a", "RetrievalError")
    assert found.answerer == AnswererLabel("no_single", None, None)
    for reached in (sets("ab", "b", ""), sets("b")):
        found = label_of(Scripted(rescued=set(), reached=reached), [("a", "x"), ("b", "y")], None)
        assert (found.status, found.op_id, found.error_type) == ("no_single", None, None)
        assert found.reason == "no answer operation to blame"


def test_read_by_the_answer_the_original_run_is_never_replayed() -> None:
    # ab and b rescue the answer: b is decisive without replaying the run as it was
    replayer = Scripted(rescued=sets("ab", "b"))
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert (found.status, found.op_id, found.basis) == ("decisive", "b", "answer")
    assert ORIGINAL not in replayer.calls


def test_the_label_on_the_context_as_json() -> None:
    replayer = Scripted(rescued=set(), reached=sets("ab"))
    found = label_of(replayer, [("a", "extraction"), ("b", "retrieval")])
    assert found.as_dict() == {
        "status": "decisive",
        "op_id": "a",
        "error_type": "RetrievalError",
        "basis": "context",
        "replays": 3,
        "with_your_answerer": {"status": "response", "op_id": "ans", "error_type": "ResponseError"},
        "candidates": [
            {"op_id": "a", "context": True, "downstream": False, "alone": False,
             "decisive": True, "rescued": False, "changed": "restored for a"},
            {"op_id": "b", "context": False, "downstream": False, "alone": False,
             "decisive": False, "rescued": False, "changed": "restored for b"},
        ],
    }  # fmt: skip


# -- the replay judge: which op it blames -------------------------------------------------------

SENTENCE = "Ana moved to Lisbon for a harbour office job."
EXTRACT = OpRef("extract", 2, "extraction", "extract_facts")
ADD = OpRef("add", 3, "embedding", "add")
REWRITE = OpRef("rewrite", 5, "update", "update_memory")
DELETE = OpRef("delete", 6, "deletion", "delete_memory")
SEARCH = OpRef("search", 8, "retrieval", "search")
ANSWER = OpRef("answer", 9, "generation", "answer")
LATE = OpRef("late", 12, "update", "update_memory")
ANCHOR = Anchor(
    "trace", "case", "Where did Ana move?", ("Lisbon",), "Porto", True, "q",
    ANSWER, (SEARCH,), ("msg",),
)  # fmt: skip
HELD = f"Ana: {SENTENCE}"
OTHER = "Ana: likes sardines."


def holder(mid: str, seq: int, value: str = HELD, **fate: object) -> Memory:
    return Memory(
        mid,
        seq,
        value,
        ADD,
        fate.get("next_id"),  # type: ignore[arg-type]
        fate.get("next_seq"),  # type: ignore[arg-type]
        fate.get("next_creator"),  # type: ignore[arg-type]
        fate.get("deleted_by"),  # type: ignore[arg-type]
    )


def case_view(*memories: Memory) -> CaseView:
    graph = CaseGraph(ANCHOR, (Evidence("msg", SENTENCE, seq=1),), (), memories, ())
    trail = Trail("msg", SENTENCE, "lost", EXTRACT, "ExtractionError", "never stored")
    return CaseView(graph, (trail,))


REWRITTEN = (
    holder("mem@1", 4, next_id="mem@2", next_seq=5, next_creator=REWRITE),
    holder("mem@2", 5, OTHER),
)


@pytest.mark.parametrize(
    ("memories", "expected"),
    [
        pytest.param(REWRITTEN, ["rewrite"], id="rewritten-without-it"),
        pytest.param((holder("mem@1", 4, deleted_by=DELETE),), ["delete"], id="deleted"),
        pytest.param(
            (
                holder("mem@1", 4, next_id="mem@2", next_seq=5, next_creator=REWRITE),
                holder("mem@2", 5, f"{HELD}\n{OTHER}"),
            ),
            [],
            id="rewrite-kept-it",
        ),
        pytest.param(
            (
                holder("mem@1", 4, OTHER, next_id="mem@2", next_seq=5, next_creator=REWRITE),
                holder("mem@2", 5, "Ana: likes tea."),
                holder("mem@3", 4, OTHER, deleted_by=DELETE),
            ),
            [],
            id="never-held-it",
        ),
        pytest.param((holder("mem@1", 10, deleted_by=LATE),), [], id="stored-after-the-answer"),
        pytest.param((holder("mem@1", 4, deleted_by=LATE),), [], id="deleted-after-the-answer"),
        pytest.param(
            (
                holder("mem@1", 4, next_id="mem@2", next_seq=12, next_creator=LATE),
                holder("mem@2", 12, OTHER),
            ),
            [],
            id="rewritten-after-the-answer",
        ),
        pytest.param(
            (
                holder("mem@1", 4, next_id="mem@2", next_seq=5, next_creator=REWRITE),
                holder("mem@2", 5, OTHER, deleted_by=DELETE),
                holder("mem@3", 4, deleted_by=DELETE),
            ),
            ["rewrite", "delete"],
            id="each-op-once",
        ),
    ],
)
def test_rewriters_are_ops_that_lost_a_held_key_sentence_before_the_answer(
    memories: tuple[Memory, ...], expected: list[str]
) -> None:
    assert [op.id for op in _rewriters(case_view(*memories))] == expected


def test_a_rewrite_between_the_search_and_the_answer_counts() -> None:
    # the replay judge's cutoff is the answer (a replay reruns everything before it)
    between = OpRef("between", 8, "update", "update_memory")
    view = case_view(holder("mem@1", 4, deleted_by=between))
    assert [op.id for op in _rewriters(view)] == ["between"]


@dataclass
class OneTrace:
    replayer: Scripted
    asked: list[str] = field(default_factory=list)

    def for_trace(self, trace_id: str) -> Scripted:
        self.asked.append(trace_id)
        return self.replayer


CANDIDATES = [
    Candidate(EXTRACT, "reads_evidence"),
    Candidate(SEARCH, "retrieval"),
    Candidate(ANSWER, "answer"),
]


def decide(replayer: Scripted, view: CaseView) -> Found:
    replayers = OneTrace(replayer)
    found = ReplayJudge(replayers).decide("linear", view, CANDIDATES)
    assert replayers.asked == ["trace"]
    return found


def test_the_replay_judge_blames_a_rewriter_off_every_trail() -> None:
    # the rewrite is no Cypher candidate; its repair restores what the update lost
    replayer = Scripted(
        rescued=sets(["extract", "rewrite", "search"], ["rewrite", "search"]),
        restores={"rewrite": "UpdateError", "extract": "ExtractionError"},
    )
    found = decide(replayer, case_view(*REWRITTEN))
    assert found.candidate == Candidate(REWRITE, "rewrote a holder")
    assert found.error_type == "UpdateError" and found.confidence == 1.0
    assert found.checked == ["extract", "search", "answer"]  # the Cypher candidates
    assert "replay (decisive)" in found.reason and found.usage == Usage()  # no model call
    assert found.outcomes is not None
    outcomes = json.loads(found.outcomes)
    assert found.outcomes == json.dumps(outcomes, separators=(",", ":"))  # compact JSON
    assert [c["op_id"] for c in outcomes["candidates"]] == ["extract", "rewrite", "search"]
    assert found.replays == outcomes["replays"] == len(set(replayer.calls))
    assert all("answer" not in call for call in replayer.calls)  # the answer runs for real


def test_the_replay_judge_keeps_a_cypher_candidate_as_it_came() -> None:
    replayer = Scripted(
        rescued=sets(["extract", "rewrite", "search"]), restores={"extract": "RetrievalError"}
    )
    found = decide(replayer, case_view(*REWRITTEN))
    assert found.candidate is CANDIDATES[0]
    assert found.error_type == "RetrievalError"  # what the repair restored, not "extraction"


def test_the_replay_judge_blames_the_answer_when_no_repair_rescues_it() -> None:
    found = decide(Scripted(rescued=set()), case_view(*REWRITTEN))
    assert found.candidate is CANDIDATES[2]
    assert (found.error_type, found.confidence) == ("ResponseError", 1.0)


def test_the_replay_judge_blames_nothing_when_repairs_interact() -> None:
    replayer = Scripted(rescued=sets(["rewrite", "search"]))
    found = decide(replayer, case_view(*REWRITTEN))
    assert (found.candidate, found.error_type, found.confidence) == (None, None, 0.0)
    assert "replay (no_single)" in found.reason


def test_the_replay_judge_decides_whole_cases_only() -> None:
    judge = ReplayJudge(OneTrace(Scripted(rescued=set())))
    with pytest.raises(NotImplementedError, match="decides whole cases"):
        judge.check(case_view(), CANDIDATES[0])
    with pytest.raises(NotImplementedError, match="decides whole cases"):
        judge.intact_after(case_view(), CANDIDATES[0])


def test_every_rewriter_is_a_suspect_and_an_unchanged_one_takes_its_kind() -> None:
    # two ops off every trail; the rewrite's repair reports nothing, yet it is decisive
    replayer = Scripted(
        rescued=sets(["extract", "rewrite", "delete", "search"], ["rewrite", "delete", "search"]),
        unchanged={"rewrite"},
    )
    view = case_view(
        holder("mem@1", 4, next_id="mem@2", next_seq=5, next_creator=REWRITE),
        holder("mem@2", 5, OTHER),
        holder("mem@3", 4, deleted_by=DELETE),
    )
    found = decide(replayer, view)
    outcomes = json.loads(found.outcomes or "")
    assert [c["op_id"] for c in outcomes["candidates"]] == [
        "extract",
        "rewrite",
        "delete",
        "search",
    ]
    assert found.candidate == Candidate(REWRITE, "rewrote a holder")
    assert found.error_type == "UpdateError"  # the kind of the rewrite (an update)


def test_a_case_without_an_answer_op_blames_nothing_when_no_repair_rescues_it() -> None:
    graph = replace(case_view(*REWRITTEN).graph, anchor=replace(ANCHOR, answer=None))
    view = CaseView(graph, case_view().trails)
    found = ReplayJudge(OneTrace(Scripted(rescued=set()))).decide("linear", view, CANDIDATES[:2])
    assert (found.candidate, found.error_type) == (None, None)
    assert "no answer operation to blame" in found.reason


def test_the_replay_judge_blames_where_the_evidence_was_lost_not_your_answerer() -> None:
    # the extraction's repair puts the evidence into the answer's context; the answer stays
    # wrong: the extraction is blamed, "with your answerer" kept in the outcomes
    replayer = Scripted(
        rescued=set(),
        reached=sets(["extract", "rewrite", "search"]),
        restores={"extract": "ExtractionError"},
    )
    found = decide(replayer, case_view(*REWRITTEN))
    assert found.candidate is CANDIDATES[0]
    assert (found.error_type, found.confidence) == ("ExtractionError", 1.0)
    outcomes = json.loads(found.outcomes or "")
    assert outcomes["with_your_answerer"]["error_type"] == "ResponseError"
    assert outcomes["basis"] == "context"


def test_the_replay_judge_blames_nothing_when_no_repair_restores_the_evidence() -> None:
    found = decide(Scripted(rescued=set(), reached=set()), case_view(*REWRITTEN))
    assert (found.candidate, found.error_type, found.confidence) == (None, None, 0.0)
    assert "replay (unrestored)" in found.reason
