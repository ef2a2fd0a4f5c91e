"""The edges of the trails and the walks, on small hand-built cases: every filter of the
stale-memory rule, the cutoff at the first retrieval, how far a trail got, which ops become
candidates, and the walks' answer-op fallback (on a scripted judge)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pytest

from memtrace.attribution.judges import CaseView, followed
from memtrace.attribution.model import (
    Anchor,
    Candidate,
    CaseGraph,
    Check,
    Evidence,
    FlowStep,
    Memory,
    OpRef,
    Trail,
)
from memtrace.attribution.trails import (
    _reach,
    candidates,
    off_path,
    question_cutoff,
    stale_memories,
    trace_all,
    trace_evidence,
)
from memtrace.attribution.walk import Found, binary, linear, search
from memtrace.errors import JudgeError, LLMError
from memtrace.usage import Usage

# -- stale memory: each filter of the rule, one at a time ----------------------------------------
# Chloe first said she works as a cashier (stored at seq 4); message m2 (seq 10) says she now
# works as a baker; an additive pipeline stored it beside the old memory and the answer followed
# the old one.

NEWER_TEXT = "I started working as a baker at a workshop last week."
OLD_TEXT = "Chloe: I started a new job as a cashier at the mall."
NEW_TEXT = f"Chloe: {NEWER_TEXT}"
EXTRACT = OpRef("extract-2", 11, "extraction", "memory_system.extract_memories")
ADD = OpRef("add-2", 12, "embedding", "memory_system.add_to_vector_store")
OLD_ADD = OpRef("add-1", 3, "embedding", "memory_system.add_to_vector_store")
SEARCH = OpRef("search", 19, "retrieval", "search")
ANSWER = OpRef("answer", 20, "generation", "answer")
JOB = Anchor(
    "t", "c2", "What job did Chloe start?", ("baker",), OLD_TEXT, True, "q",
    ANSWER, (SEARCH,), ("m2",),
)  # fmt: skip
KEY = Trail("m2", NEWER_TEXT, "context", None, None, "reached the answer's context")


def stored(mid: str, seq: int, text: str, deleted_by: OpRef | None = None) -> Memory:
    return Memory(mid, seq, f'{{"id": "{mid}", "memory": "{text}"}}', OLD_ADD, None, None, None,
                  deleted_by)  # fmt: skip


OLD = stored("old@1", 4, OLD_TEXT)


@dataclass(frozen=True)
class JobCase:
    anchor: Anchor = JOB
    old: Memory = OLD
    flow: tuple[FlowStep, ...] = (
        FlowStep("m2", 1, EXTRACT, "m2", "extracted", NEW_TEXT),
        FlowStep("m2", 2, ADD, "extracted", "new@1", NEW_TEXT),
    )
    context: tuple[str, ...] = (OLD_TEXT, NEW_TEXT)
    trail: Trail = KEY

    def graph(self) -> CaseGraph:
        memories = (self.old, stored("new@1", 13, NEW_TEXT))
        ctx = tuple((f"ctx{i}", value) for i, value in enumerate(self.context))
        return CaseGraph(self.anchor, (Evidence("m2", NEWER_TEXT, seq=10),), self.flow,
                         memories, ctx)  # fmt: skip

    def stale(self) -> list[tuple[str, str, str]]:
        return [(s.trail.message_id, s.memory.id, s.superseding.id)
                for s in stale_memories(self.graph(), [self.trail])]  # fmt: skip


def test_the_stale_memory_case_is_found() -> None:
    assert JobCase().stale() == [("m2", "old@1", "extract-2")]
    lost = replace(KEY, stage="lost", stop=EXTRACT, error_type="ExtractionError")
    assert JobCase(trail=lost).stale() == [("m2", "old@1", "extract-2")]


BOTH = f"{OLD_TEXT} I started working at a workshop last week."


def test_each_trail_is_looked_at_and_two_question_words_make_a_topic() -> None:
    graph = JobCase().graph()
    others = [replace(KEY, role="answer part"), replace(KEY, stage="stored", stop=SEARCH)]
    assert [s.memory.id for s in stale_memories(graph, [*others, KEY])] == ["old@1"]
    two = JobCase(anchor=replace(JOB, question="What job did Chloe take?"))  # chloe, job
    assert two.stale() == [("m2", "old@1", "extract-2")]


UPDATE = OpRef("decide-2", 12, "update", "memory_system.update_memory_decision")
DELETE = OpRef("delete-1", 8, "deletion", "memory_system.delete_memory")


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(JobCase(anchor=replace(JOB, prediction=None)), id="no-prediction"),
        pytest.param(JobCase(anchor=replace(JOB, failed=False)), id="case-passed"),
        pytest.param(
            JobCase(anchor=replace(JOB, prediction=JOB.question)),
            id="answer-says-only-the-question",
        ),
        pytest.param(JobCase(trail=replace(KEY, role="answer part")), id="not-the-key-sentence"),
        pytest.param(
            JobCase(flow=(*JobCase().flow, FlowStep("m2", 3, UPDATE, "extracted", "d", "ADD"))),
            id="an-update-op-on-the-way",
        ),
        pytest.param(JobCase(flow=JobCase().flow[1:]), id="no-extraction-op"),
        pytest.param(
            JobCase(trail=replace(KEY, stage="stored", stop=SEARCH, error_type="RetrievalError")),
            id="stored-not-retrieved",
        ),
        pytest.param(
            JobCase(trail=replace(KEY, stage="lost", stop=DELETE, error_type="DeletionError")),
            id="lost-by-a-deletion",
        ),
        pytest.param(
            JobCase(trail=replace(KEY, stage="lost", stop=None, error_type="ExtractionError")),
            id="lost-nowhere",
        ),
        pytest.param(JobCase(old=stored("old@1", 14, OLD_TEXT)), id="stored-after-the-message"),
        pytest.param(JobCase(old=stored("old@1", 4, OLD_TEXT, DELETE)), id="deleted-before-asked"),
        pytest.param(
            JobCase(
                anchor=replace(JOB, prediction="Chloe started a job as a pilot at the airport.")
            ),
            id="answer-did-not-follow-it",
        ),
        pytest.param(
            JobCase(anchor=replace(JOB, question="What does she do for a living now?")),
            id="not-about-what-is-asked",
        ),
        pytest.param(JobCase(anchor=replace(JOB, golden_answers=("cashier",))), id="holds-gold"),
        pytest.param(  # 5 of the key sentence's 6 content words, not the gold answer
            JobCase(old=stored("old@1", 4, BOTH), context=(BOTH, NEW_TEXT)),
            id="holds-the-evidence",
        ),
        pytest.param(JobCase(context=(NEW_TEXT,)), id="not-in-the-context"),
    ],
)
def test_a_memory_is_not_stale_when_one_condition_fails(case: JobCase) -> None:
    assert case.stale() == []


# -- trails: the cutoff at the first retrieval, how far a trail got -----------------------------

SENTENCE = "Ann adopted a grey kitten named Pixel from the shelter."
KITTEN_ANSWER = OpRef("answer", 30, "generation", "answer")
KITTEN = Anchor(
    "t", "c1", "What is the name of the kitten?", ("Pixel",), "no idea", True, "q",
    KITTEN_ANSWER,
    (OpRef("search-2", 25, "retrieval", "search"), OpRef("search-1", 20, "retrieval", "search")),
    ("m1",),
)  # fmt: skip
READ = OpRef("extract", 2, "extraction", "extract_facts")


def kitten_case(*memories: Memory, anchor: Anchor = KITTEN) -> CaseGraph:
    flow = (FlowStep("m1", 1, READ, "m1", "facts", f"Ann: {SENTENCE}"),)
    return CaseGraph(anchor, (Evidence("m1", SENTENCE, seq=1),), flow, memories,
                     (("ctx", "Ann: likes tea."),))  # fmt: skip


def kept(mid: str, seq: int, deleted_by: OpRef | None = None) -> Memory:
    return Memory(mid, seq, f"Ann: {SENTENCE}", READ, None, None, None, deleted_by)


def test_the_store_is_looked_at_when_the_first_retrieval_runs() -> None:
    assert question_cutoff(kitten_case()) == 20
    assert question_cutoff(kitten_case(anchor=replace(KITTEN, retrievals=()))) == 30
    assert question_cutoff(kitten_case(anchor=replace(KITTEN, retrievals=(), answer=None))) > 10**9
    # stored between the first and the second search: not there when the store was looked at
    (late,) = trace_all(kitten_case(kept("mem@1", 22)))
    assert (late.stage, late.error_type) == ("lost", "ExtractionError")
    (early,) = trace_all(kitten_case(kept("mem@1", 19)))
    assert early.holders == ("mem@1",)
    assert [word.lower() for word in early.answer_words] == ["pixel"]  # the gold answer's word
    assert (early.stage, early.stop, early.error_type) == ("stored", KITTEN.retrievals[1],
                                                           "RetrievalError")  # fmt: skip
    # deleted between the two searches: still live at the first
    (deleted,) = trace_all(kitten_case(kept("mem@1", 4, OpRef("del", 22, "deletion"))))
    assert deleted.stage == "stored"
    (gone,) = trace_all(kitten_case(kept("mem@1", 4, OpRef("del", 18, "deletion"))))
    assert gone.holders == ("mem@1",)
    (said,) = trace_all(replace(kitten_case(), context=(("ctx", f"Ann: {SENTENCE}"),)))
    assert (said.stage, said.stop, said.detail) == ("context", None, "reached the answer's context")
    assert gone.stop is not None
    assert (gone.stage, gone.stop.id, gone.error_type) == ("lost", "del", "DeletionError")


def test_a_stored_sentence_with_no_retrieval_op_stops_nowhere() -> None:
    (trail,) = trace_all(kitten_case(kept("mem@1", 4), anchor=replace(KITTEN, retrievals=())))
    assert (trail.stage, trail.stop, trail.error_type) == ("stored", None, "RetrievalError")


def test_how_far_a_trail_got_ranks_context_then_store_then_the_latest_loss() -> None:
    def trail(stage: str, seq: int | None) -> Trail:
        stop = OpRef(f"op{seq}", seq) if seq is not None else None
        return Trail("m", "s", stage, stop, None, "")  # type: ignore[arg-type]

    ordered = [trail("lost", 3), trail("lost", 7), trail("stored", 1), trail("context", None)]
    assert sorted(reversed(ordered), key=_reach) == ordered
    assert _reach(trail("lost", None)) > _reach(trail("lost", 7))
    assert _reach(trail("stored", 1)) > _reach(trail("lost", 99))


def test_of_two_equally_likely_key_sentences_the_one_that_got_further_is_followed() -> None:
    dog, cat = "Ann keeps a dog named Rex at home.", "Ann keeps a cat named Tom at home."
    anchor = replace(KITTEN, question="Which pet does Ann keep?", golden_answers=("both",))
    message = Evidence("m1", f"{dog} {cat}", seq=1)
    cat_memory = Memory("mem@1", 4, f"Ann: {cat}", READ, None, None, None, None)
    for text in (f"{dog} {cat}", f"{cat} {dog}"):  # either order
        graph = CaseGraph(anchor, (replace(message, text=text),), (), (cat_memory,), ())
        found = trace_evidence(graph, replace(message, text=text))
        assert (found.key_sentence, found.stage) == (cat, "stored")


def test_a_rewrite_that_kept_the_sentence_is_no_loss_the_later_deletion_is() -> None:
    merge, drop = OpRef("merge", 5, "update", "merge"), OpRef("drop", 7, "deletion", "drop")
    memories = (
        Memory("mem@1", 4, f"Ann: {SENTENCE}", READ, "mem@2", 5, merge, None),
        Memory("mem@2", 5, f"Ann: {SENTENCE}\nAnn: likes tea.", merge, None, None, None, drop),
    )
    (trail,) = trace_all(kitten_case(*memories))
    assert trail.stop is not None
    assert (trail.stage, trail.stop.id, trail.error_type) == ("lost", "drop", "DeletionError")


# -- where a never-stored sentence left the flow (no extraction op lost it) -----------------------

COPY = OpRef("copy", 2, "other", "")
SPLIT = OpRef("split", 3, "other", "split_turns")
HELD_FACT = f"Ann: {SENTENCE}"


def lost_at(*steps: FlowStep) -> tuple[str | None, str]:
    graph = CaseGraph(KITTEN, (Evidence("m1", SENTENCE, seq=1),), steps, (),
                      (("ctx", "Ann: likes tea."),))  # fmt: skip
    (trail,) = trace_all(graph)
    assert (trail.stage, trail.error_type) == ("lost", "ExtractionError")
    return (trail.stop.id if trail.stop else None), trail.detail


def test_a_sentence_no_extraction_lost_stops_at_the_op_that_wrote_nothing_holding_it() -> None:
    # steps listed out of order: the flow is read in execution order
    steps = (
        FlowStep("m1", 2, SPLIT, "x1", "x2", "Ann: likes tea."),
        FlowStep("m1", 1, COPY, "m1", "x1", HELD_FACT),
    )
    assert lost_at(*steps) == ("split", "split_turns received it but wrote no output holding it")
    # an op without a name is named by its kind
    assert lost_at(FlowStep("m1", 1, COPY, "m1", "x1", "Ann: hi."))[1].startswith("other received")


def test_an_extraction_that_dropped_it_is_the_stop_even_when_later_ops_drop_it_too() -> None:
    assert lost_at(FlowStep("m1", 1, READ, "m1", "facts", "[]")) == (
        "extract", "the extraction output does not contain it"
    )  # fmt: skip
    # the extraction kept it, a later op did not: that op, not the extraction
    steps = (
        FlowStep("m1", 1, READ, "m1", "facts", HELD_FACT),
        FlowStep("m1", 2, SPLIT, "facts", "x2", "Ann: likes tea."),
    )
    assert lost_at(*steps)[0] == "split"


def test_a_sentence_passed_on_to_the_end_but_never_stored_stops_at_the_first_op() -> None:
    steps = (
        FlowStep("m1", 1, COPY, "m1", "x1", HELD_FACT),
        FlowStep("m1", 2, SPLIT, "x1", "x2", HELD_FACT),
        FlowStep("m1", 3, OpRef("late", 4, "other", ""), "y", "z", "Ann: likes tea."),
    )
    assert lost_at(*steps) == ("copy", "no memory ever held it")
    assert lost_at() == (None, "no operation read the message")


def test_a_retrieval_step_that_dropped_it_is_named_by_its_kind_without_a_name() -> None:
    rerank = OpRef("rerank", 21, "retrieval", "")
    anchor = replace(KITTEN, retrievals=(KITTEN.retrievals[1], rerank))
    steps = (
        FlowStep("m1", 1, READ, "m1", "facts", HELD_FACT),
        FlowStep("m1", 2, KITTEN.retrievals[1], "mem@1", "r1", f"[{HELD_FACT}]"),
        FlowStep("m1", 3, rerank, "r1", "ctx", "[Ann: likes tea.]"),
    )
    graph = replace(kitten_case(kept("mem@1", 4), anchor=anchor), flow=steps)
    (trail,) = trace_all(graph)
    assert trail.stop == rerank
    assert trail.detail == "retrieval received r1 holding it but passed no result holding it on"


# -- candidates: which ops become suspects -------------------------------------------------------

EMBED = OpRef("embed", 3, "embedding", "embed")
MOVE = OpRef("move", 4, "other", "move")
MERGE = OpRef("merge", 5, "update", "merge")
DROP = OpRef("drop", 6, "deletion", "drop")


def suspects(graph: CaseGraph, trails: Sequence[Trail]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.op.id, c.role, c.message_ids) for c in candidates(graph, trails)]


def test_candidates_are_the_extraction_readers_deleters_retrievals_answer_and_trail_ends() -> None:
    graph = replace(
        kitten_case(),
        candidate_ops=(
            (READ, "reads_evidence"), (EMBED, "reads_evidence"), (MOVE, "trail"),
            (MERGE, "new_version"), (DROP, "deletes"), (KITTEN_ANSWER, "answer"),
        ),
    )  # fmt: skip
    ended = Trail("m1", SENTENCE, "lost", MERGE, "UpdateError", "rewritten")
    spared = Trail("m1", "x", "lost", MOVE, "ExtractionError", "", needed=False)
    assert suspects(graph, [ended, spared]) == [
        ("extract", "reads_evidence", ()),
        ("merge", "trail end", ("m1",)),
        ("drop", "deletes", ()),
        ("search-1", "retrieval", ()),
        ("search-2", "retrieval", ()),
        ("answer", "answer", ()),
    ]


def test_the_op_that_left_a_stale_memory_is_a_candidate_with_its_message() -> None:
    assert suspects(JobCase().graph(), [KEY]) == [
        ("extract-2", "stale memory", ("m2",)),
        ("search", "retrieval", ()),
        ("answer", "answer", ()),
    ]


def test_without_an_extraction_reader_every_reader_is_a_candidate() -> None:
    graph = replace(kitten_case(), candidate_ops=((EMBED, "reads_evidence"), (MOVE, "trail")))
    assert [op for op, _, _ in suspects(graph, [])] == ["embed", "search-1", "search-2", "answer"]


# -- the walks on a scripted judge: the answer-op fallback ---------------------------------------

OPS = [OpRef(f"op{i}", i, kind) for i, kind in enumerate(["extraction", "update", "retrieval"])]
ANSWER_OP = OpRef("answer", 9, "generation", "answer")


@dataclass
class ScriptedJudge:
    """Faulty/decisive per op id; intact after an op while its seq is below ``broken_from``."""

    checks: Mapping[str, Check] = field(default_factory=dict)
    broken_from: int = 10**9
    fail_on: str | None = None
    name: str = "scripted"
    model: str | None = None
    reads_operations: bool = False

    def check(self, view: CaseView, candidate: Candidate) -> tuple[Check, Usage]:
        if candidate.op.id == self.fail_on:
            raise LLMError("endpoint down", usage=Usage(calls=1))
        fine = Check(False, False, None, "fine", 0.9)
        return self.checks.get(candidate.op.id, fine), Usage(calls=1, tokens_in=10)

    def intact_after(self, view: CaseView, candidate: Candidate) -> tuple[bool, Usage]:
        if candidate.op.id == self.fail_on:
            raise LLMError("endpoint down", usage=Usage(calls=1))
        return candidate.op.seq < self.broken_from, Usage(calls=1)


def walk_view(answer: OpRef | None = ANSWER_OP) -> CaseView:
    anchor = replace(KITTEN, answer=answer)
    return CaseView(CaseGraph(anchor, (), (), (), ()), ())


def cands(with_answer: bool = True) -> list[Candidate]:
    ops = [*OPS, ANSWER_OP] if with_answer else OPS
    return [Candidate(op, "r") for op in ops]


def blamed(found: Found) -> tuple[str | None, str | None, float]:
    return (found.candidate.op.id if found.candidate else None, found.error_type, found.confidence)


Walk = Callable[[ScriptedJudge, CaseView, Sequence[Candidate]], Found]


def test_linear_blames_the_first_faulty_and_decisive_op() -> None:
    judge = ScriptedJudge(
        {
            "op0": Check(True, False, "ExtractionError", "faulty, not decisive", 0.7),
            "op1": Check(True, True, None, "faulty and decisive", 0.6),
            "op2": Check(True, True, "RetrievalError", "later", 0.9),
        }
    )
    found = linear(judge, walk_view(), cands())
    assert blamed(found) == ("op1", "UpdateError", 0.6)  # no type given: the op kind's
    assert found.checked == ["op0", "op1"] and found.usage == Usage(calls=2, tokens_in=20)


def test_binary_blames_the_first_op_after_which_evidence_is_broken() -> None:
    judge = ScriptedJudge({"op2": Check(True, True, "UpdateError", "x", 0.5)}, broken_from=2)
    found = binary(judge, walk_view(), cands())
    assert blamed(found) == ("op2", "UpdateError", 0.5)  # the check's type, not the kind's
    assert found.checked == ["op1", "op2", "op2"]  # two intact_after, then the check
    assert found.reason == "x" and found.usage == Usage(calls=3, tokens_in=10)
    # broken only after the last candidate: it is checked too
    last = binary(ScriptedJudge(broken_from=9), walk_view(), cands())
    assert blamed(last) == ("answer", "ResponseError", 0.9) and last.reason == "fine"
    judge = ScriptedJudge(broken_from=0)
    assert blamed(binary(judge, walk_view(), cands())) == ("op0", "ExtractionError", 0.9)


@pytest.mark.parametrize(("walk", "why"), [(linear, "no candidate was judged faulty"),
                                           (binary, "the evidence stayed intact")])  # fmt: skip
def test_with_nothing_found_the_answer_op_is_blamed_with_no_confidence(
    walk: Walk, why: str
) -> None:
    found = walk(ScriptedJudge(), walk_view(), cands())
    assert blamed(found) == ("answer", "ResponseError", 0.0)
    assert found.reason.startswith(why) and "answer op is blamed" in found.reason
    assert found.checked and found.usage.calls == len(found.checked)  # what the walk spent
    # the answer candidate is found by id, wherever it stands
    found = walk(ScriptedJudge(), walk_view(), [Candidate(ANSWER_OP, "r"), *cands(False)])
    assert blamed(found) == ("answer", "ResponseError", 0.0)
    nothing = walk(ScriptedJudge(), walk_view(), cands(with_answer=False))
    assert blamed(nothing) == (None, None, 0.0) and nothing.reason.startswith(why)
    assert nothing.checked and nothing.usage.calls == len(nothing.checked)
    other_answer = walk(ScriptedJudge(), walk_view(OpRef("elsewhere", 8)), cands())
    assert blamed(other_answer) == (None, None, 0.0)


@pytest.mark.parametrize("walk", [linear, binary])
def test_a_failing_judge_reports_what_the_walk_spent_and_checked(walk: Walk) -> None:
    judge = ScriptedJudge(fail_on="op2", broken_from=0)
    if walk is binary:
        judge = ScriptedJudge(fail_on="op0", broken_from=0)
    with pytest.raises(JudgeError) as caught:
        walk(judge, walk_view(), cands())
    assert caught.value.usage is not None and caught.value.usage.calls >= 2
    assert caught.value.checked[-1] == judge.fail_on and len(caught.value.checked) >= 2
    assert str(caught.value) == "endpoint down"


def test_a_deciding_judge_decides_the_whole_case() -> None:
    view = walk_view()

    class Decider(ScriptedJudge):
        def decide(self, strategy: str, seen: CaseView, found: Sequence[Candidate]) -> Found:
            assert seen is view
            return Found(found[1], "DeletionError", strategy, 1.0)

    found = search("binary", Decider(), view, cands())
    assert blamed(found) == ("op1", "DeletionError", 1.0) and found.reason == "binary"
    assert blamed(search("linear", ScriptedJudge(), walk_view(), cands()))[0] == "answer"


def test_a_context_holding_another_messages_copy_is_not_said_to_be_this_ones() -> None:
    """Two evidence messages say the same; only m2 was noted (m1's extraction wrote ``[]``):
    the reason names where the context's copy did not come from."""
    noted = OpRef("extract-2", 5, "extraction", "pamem.take_note")
    flow = (
        FlowStep("m1", 1, READ, "m1", "facts-1", "[]"),
        FlowStep("m2", 1, noted, "m2", "facts-2", f"Ann: {SENTENCE}"),
    )
    graph = CaseGraph(
        KITTEN,
        (Evidence("m1", SENTENCE, seq=1), Evidence("m2", SENTENCE, seq=4)),
        flow,
        (),
        (("ctx", f"Ann: {SENTENCE}"),),
    )
    first, second = trace_all(graph)
    assert first.stage == second.stage == "context"
    assert first.detail == (
        "is in the answer's context, but not from m1: its extraction extract_facts extract wrote "
        "nothing holding it (the context's copy came from another message)"
    )
    assert second.detail == "reached the answer's context"
    assert "reached the answer's context" not in followed([first])
    assert "but not from m1" in followed([first, second])


# -- the answer's path: a parallel branch that never feeds the answer is no suspect --------------
# cognee-like: the graph extraction (an extraction, first) and the summarization (a generation)
# both read the message; only the summary is stored and searched; the graph's triplets lost the
# sentence's words and go to the graph, which nothing the answer reads comes from.

GRAPH = OpRef("graph", 2, "extraction", "extract_graph_from_data")
SUMMARY = OpRef("summary", 3, "generation", "summarize_text")
STORE = OpRef("store", 4, "embedding", "add_data_points")
NODES = OpRef("nodes", 5, "other", "add_graph_nodes")
ALLERGY = "I'm allergic to peanuts, so no satay for me."
ANSWER_TENNIS = OpRef("answer", 9, "generation", "answer")
PEANUTS = Anchor(
    "t", "c", "What is Maya allergic to?", ("peanuts",), "tennis", True, "q",
    ANSWER_TENNIS, (OpRef("search", 8, "retrieval", "search"),), ("m1",),
)  # fmt: skip
TRIPLETS = '[["Maya", "has_condition", "allergy"]]'
BRANCHES = (
    FlowStep("m1", 1, GRAPH, "m1", "triplets", TRIPLETS),
    FlowStep("m1", 2, NODES, "triplets", "node:maya", "Maya has_condition allergy"),
    FlowStep("m1", 1, SUMMARY, "m1", "summary", "Maya cooks a lot and plays tennis."),
    FlowStep("m1", 2, STORE, "summary", "chunk@1", "Maya cooks a lot and plays tennis."),
)


def branches(*flow: FlowStep) -> CaseGraph:
    chunk = Memory("chunk@1", 5, "Maya cooks a lot and plays tennis.", STORE, None, None, None,
                   None)  # fmt: skip
    return CaseGraph(
        PEANUTS, (Evidence("m1", ALLERGY, seq=1),), flow, (chunk,),
        (("ctx", "Maya cooks a lot and plays tennis."),),
        ((GRAPH, "reads_evidence"), (SUMMARY, "reads_evidence"), (ANSWER_TENNIS, "answer")),
    )  # fmt: skip


def test_a_branch_that_never_feeds_the_answer_is_neither_the_stop_nor_a_suspect() -> None:
    graph = branches(*BRANCHES)
    assert off_path(graph) == {"graph"}  # its triplets flow on, to the graph only
    (trail,) = trace_all(graph)
    assert (trail.stage, trail.stop, trail.error_type) == ("lost", SUMMARY, "ExtractionError")
    assert trail.detail == "summarize_text received it but wrote no output holding it"
    assert [op for op, _, _ in suspects(graph, [trail])] == ["summary", "search", "answer"]


def test_the_branch_read_by_the_answer_after_all_is_on_the_path() -> None:
    read = FlowStep("m1", 3, OpRef("ground", 7, "retrieval", "graph_search"), "node:maya", "ctx",
                    "Maya has an allergy")  # fmt: skip
    assert off_path(branches(*BRANCHES, read)) == frozenset()


def test_an_emptied_output_nothing_reads_is_no_branch_and_stays_the_stop() -> None:
    # an extraction that dropped everything (its output flows nowhere) before a later one that
    # reads the same message as its recent history and is stored (Mem0 2.x's last-k messages)
    dropped = OpRef("extract-1", 2, "extraction", "extract_memories")
    later = OpRef("extract-2", 3, "extraction", "extract_memories")
    flow = (
        FlowStep("m1", 1, dropped, "m1", "facts-1", "[]"),
        FlowStep("m1", 1, later, "m1", "facts-2", '["Maya: I like tennis."]'),
        FlowStep("m1", 2, STORE, "facts-2", "chunk@1", "Maya cooks a lot and plays tennis."),
    )
    graph = replace(branches(*flow), candidate_ops=((dropped, "reads_evidence"),))
    assert off_path(graph) == frozenset()
    (trail,) = trace_all(graph)
    assert trail.stop == dropped


def test_with_nothing_reaching_the_answer_or_a_memory_the_path_is_not_known() -> None:
    # nothing stored or read: every reader stays a suspect and the first extraction that lacks
    # the sentence is where it stopped
    unknown = replace(branches(*BRANCHES), memories=(), context=(("ctx", "Maya: hi"),))
    assert off_path(unknown) == frozenset()
    (trail,) = trace_all(unknown)
    assert trail.stop == GRAPH
    assert [op for op, _, _ in suspects(unknown, [trail])] == ["graph", "search", "answer"]
