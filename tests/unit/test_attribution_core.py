"""The pure attribution core on small hand-built case graphs: trails, walks, retrieval."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import date

import pytest

from memtrace.attribution.answer_model import (
    Restored,
    Selection,
    _ranked,
    _scores,
    rescues,
    restored,
    selection,
)
from memtrace.attribution.evidence import (
    asked_about,
    bm25_ranking,
    dense_ranking,
    reciprocal_rank_fusion,
    retrieve,
    retrieved_evidence,
)
from memtrace.attribution.judges import CaseView, OfflineJudge
from memtrace.attribution.model import (
    Anchor,
    CaseGraph,
    Check,
    Evidence,
    FlowStep,
    Memory,
    OpRef,
    Trail,
    Verdict,
)
from memtrace.attribution.records import attribution_rows, memtrace_record
from memtrace.attribution.store import FLOW_DEPTH, explain_cypher
from memtrace.attribution.text import memory_text, message_speaker, message_text
from memtrace.attribution.trails import candidates, trace_all
from memtrace.attribution.walk import binary, linear
from memtrace.cypher import get_query
from memtrace.reading.keys import key_sentences
from memtrace.reading.lexical import containment, content_words, holds, ranking_words

SENTENCE = "I adopted a grey kitten named Pixel from the shelter."
MESSAGE = Evidence("m1", f"Guess what! {SENTENCE} She sleeps all day.")
EXTRACT = OpRef("extract", 1, "extraction", "extract_facts")
ADD = OpRef("add", 3, "embedding", "add")
UPDATE = OpRef("update", 5, "update", "update_decision")
SEARCH = OpRef("search", 8, "retrieval", "search")
ANSWER = OpRef("answer", 9, "generation", "answer")
ANCHOR = Anchor(
    "t", "c1", "What is the name of the kitten?", ("Pixel",), "no idea", True, "q",
    ANSWER, (SEARCH,), ("m1",),
)  # fmt: skip
FACT = f"Ann: {SENTENCE}"


def memory(
    mid: str, seq: int, value: str, next_id: str | None = None, next_seq: int | None = None,
    next_creator: OpRef | None = None, deleted_by: OpRef | None = None,
) -> Memory:  # fmt: skip
    return Memory(mid, seq, value, ADD, next_id, next_seq, next_creator, deleted_by)


def flow(extracted: str) -> tuple[FlowStep, ...]:
    return (FlowStep("m1", 1, EXTRACT, "m1", "facts", extracted),)


def graph(
    memories: tuple[Memory, ...], context: tuple[str, ...], extracted: str = FACT
) -> CaseGraph:
    ctx = tuple((f"ctx{i}", value) for i, value in enumerate(context))
    return CaseGraph(ANCHOR, (MESSAGE,), flow(extracted), memories, ctx)


def verdict(case: CaseGraph) -> tuple[str | None, str | None, str | None, str | None]:
    trails = tuple(trace_all(case))
    view = CaseView(case, trails)
    cands = candidates(case, trails)
    a, b = linear(OfflineJudge(), view, cands), binary(OfflineJudge(), view, cands)
    return (
        a.candidate.op.id if a.candidate else None,
        a.error_type,
        b.candidate.op.id if b.candidate else None,
        b.error_type,
    )


def test_key_sentence_prefers_the_gold_answer() -> None:
    assert key_sentences(MESSAGE.text, ANCHOR.question, ["Pixel"]) == [SENTENCE]


def test_message_text_strips_memory_framework_suffix() -> None:
    value = '{"content": "Hi there.\\nBelow is this message\'s metadata:\\nSpeaker Name: A"}'
    assert message_text(value) == "Hi there."


def test_what_a_memory_and_a_message_say_in_their_json_values() -> None:
    assert memory_text('{"text": "Ann likes tea"}') == "Ann likes tea"
    assert memory_text('{"content": "Ann likes tea", "id": 1}') == "Ann likes tea"
    assert memory_text('{"memory": "first", "text": "second"}') == "first"
    assert memory_text('{"id": 3}') == '{"id": 3}'  # no text field: the value as it is
    # a blank or non-text speaker field names no one; the next field may
    assert message_speaker('{"speaker": "  ", "name": "Ann", "content": "hi"}') == "Ann"
    assert message_speaker('{"speaker": 7, "content": "hi"}') is None


def test_containment_is_per_line() -> None:
    words = content_words(SENTENCE)
    assert containment(words, f"other\n{FACT}") == 1.0
    scattered = "adopted grey\nkitten named Pixel\nshelter"
    assert containment(words, scattered) < 0.75


def test_response_error_when_the_context_holds_the_evidence() -> None:
    case = graph((memory("mem@1", 4, FACT),), ("Memory: unrelated", f"Memory: {FACT}"))
    assert verdict(case) == ("answer", "ResponseError", "answer", "ResponseError")


def test_retrieval_error_when_stored_but_not_retrieved() -> None:
    case = graph((memory("mem@1", 4, FACT),), ("Memory: unrelated",))
    assert verdict(case) == ("search", "RetrievalError", "search", "RetrievalError")


def extractive(
    context: list[str], quoted: list[str], gold: str = "Pixel", question: str = ANCHOR.question
) -> CaseGraph:
    """The kitten case, stored but not retrieved, answered by quoting ``quoted`` of ``context``
    (a JSON list of dated lines, as the reference systems write it)."""
    prediction = " ".join(f"{line} (8 May 2023)" for line in quoted)
    anchor = replace(ANCHOR, question=question, prediction=prediction, golden_answers=(gold,))
    lines = json.dumps([f"[8 May 2023] {line}" for line in context])
    ctx = (("parameter:answer_items@1", str(len(quoted))), ("ctx0", lines))
    return CaseGraph(anchor, (MESSAGE,), flow(FACT), (memory("mem@1", 4, FACT),), ctx)


NAMES = ["Ann: The kitten toy has a name tag.", "Ann: My kitten name tag list is long."]
# the names share three of its words (name, tag, kitten), the lost fact two (name, kitten)
TAG_QUESTION = "Which name tag does the kitten wear?"


def search_check(case: CaseGraph) -> Check:
    view = CaseView(case, tuple(trace_all(case)))
    search = next(c for c in candidates(case, view.trails) if c.op.id == "search")
    return OfflineJudge().check(view, search)[0]


def test_lost_evidence_your_extractive_answer_would_not_have_quoted_is_still_the_loss() -> None:
    # the label's answer step is ideal: what your answerer would do is said beside, not decided
    case = extractive([*NAMES, "Ann: I like tea."], NAMES, question=TAG_QUESTION)
    assert verdict(case) == ("search", "RetrievalError", "search", "RetrievalError")
    check = search_check(case)
    assert check.faulty and check.decisive and check.error_type == "RetrievalError"
    assert check.reason.startswith(f"key sentence {SENTENCE!r} of m1 stopped at search")
    assert check.reason.endswith(
        "; with your answerer: the answer quotes the 2 context item(s) that best match the "
        "question; with what the lost evidence would restore, those would still not hold the "
        "gold answer"
    )


def test_lost_evidence_an_extractive_answer_would_have_quoted_stays_the_loss() -> None:
    others = ["Ann: I like tea.", "Ann: Rain again today."]
    assert verdict(extractive(others, others)) == (
        "search", "RetrievalError", "search", "RetrievalError"
    )  # fmt: skip
    assert "with your answerer" not in search_check(extractive(others, others)).reason


def test_lost_evidence_quoted_without_the_gold_answer_is_the_loss_not_the_answer() -> None:
    # the lost fact would be quoted, but the gold answer says "tabby", which no item holds
    others = ["Ann: I like tea.", "Ann: Rain again today."]
    case = extractive(others, others, gold="a tabby kitten named Pixel")
    assert verdict(case) == ("search", "RetrievalError", "search", "RetrievalError")
    assert "with your answerer: the answer quotes the 2" in search_check(case).reason


def test_an_answer_that_quoted_its_whole_context_could_quote_the_restored_item_too() -> None:
    # one item, quoted: how many the step would quote from more is unknown (a starved search)
    assert verdict(extractive(NAMES[:1], NAMES[:1])) == (
        "search", "RetrievalError", "search", "RetrievalError"
    )  # fmt: skip


def test_the_answer_model_is_not_trusted_where_it_does_not_explain_the_quotes() -> None:
    # the answer quoted the item that matches the question worst: its selection is unknown
    tea = "Ann: I like tea."
    assert verdict(extractive([*NAMES, tea], [tea])) == (
        "search", "RetrievalError", "search", "RetrievalError"
    )  # fmt: skip


def test_a_stored_sentence_is_lost_at_the_retrieval_step_that_dropped_it() -> None:
    """An agentic search (EverMemOS-style): the hybrid search returned the unit, round 2 kept
    it, the final rerank left it out: the rerank is blamed, not the first search step."""
    hybrid = OpRef("hybrid", 6, "retrieval", "memory_system.hybrid_retrieval")
    round2 = OpRef("round2", 7, "retrieval", "memory_system.agentic_round2_bundle")
    rerank = OpRef("rerank", 8, "retrieval", "memory_system.agentic_final_rerank")
    anchor = Anchor(
        "t", "c1", ANCHOR.question, ("Pixel",), "no idea", True, "q", ANSWER,
        (hybrid, round2, rerank), ("m1",),
    )  # fmt: skip
    unit = memory("unit@1", 4, FACT)
    steps = (
        *flow(FACT),
        FlowStep("m1", 3, hybrid, "unit@1", "r1", f"[{FACT}]"),
        FlowStep("m1", 4, round2, "r1", "r2", f"[{FACT}, other]"),
        FlowStep("m1", 5, rerank, "r2", "ctx0", "[other]"),
    )
    case = CaseGraph(anchor, (MESSAGE,), steps, (unit,), (("ctx0", "Memory: other"),))
    assert verdict(case) == ("rerank", "RetrievalError", "rerank", "RetrievalError")
    (trail,) = trace_all(case)
    assert "received r2 holding it" in trail.detail
    # no step ever received it: the case's first retrieval step missed it
    missed = CaseGraph(anchor, (MESSAGE,), flow(FACT), (unit,), (("ctx0", "Memory: other"),))
    assert verdict(missed) == ("hybrid", "RetrievalError", "hybrid", "RetrievalError")


def test_update_error_when_overwritten() -> None:
    memories = (
        memory("mem@1", 4, FACT, "mem@2", 6, UPDATE),
        memory("mem@2", 6, "Ann: I like tea."),
    )
    assert verdict(graph(memories, ("Memory: Ann: I like tea.",))) == (
        "update", "UpdateError", "update", "UpdateError",
    )  # fmt: skip


def test_a_merge_that_keeps_the_sentence_is_not_a_loss() -> None:
    memories = (
        memory("mem@1", 4, FACT, "mem@2", 6, UPDATE),
        memory("mem@2", 6, f"{FACT} Ann: I like tea."),
    )
    assert verdict(graph(memories, ("x",)))[:2] == ("search", "RetrievalError")


def test_a_loss_before_the_message_existed_is_not_its_loss() -> None:
    # A long-context window: an earlier message saying the same was trimmed (seq 3) before the
    # evidence message (seq 4) arrived; the trim of the evidence message itself is the fault.
    early, late, admit = OpRef("trim-early", 3), OpRef("trim-late", 6), OpRef("admit", 5)
    memories = (
        memory("win@1", 2, f"Bob: {SENTENCE}", "win@2", 3, early),
        memory("win@2", 3, "Bob: hi", "win@3", 5, admit),
        memory("win@3", 5, f"Bob: hi\n{FACT}", "win@4", 6, late),
        memory("win@4", 6, "Bob: hi"),
    )
    message = Evidence(MESSAGE.id, MESSAGE.text, seq=4)
    case = CaseGraph(ANCHOR, (message,), flow(FACT), memories, (("ctx", "Bob: hi"),))
    assert verdict(case) == ("trim-late", "UpdateError", "trim-late", "UpdateError")


def test_trimming_a_verbatim_copy_is_a_loss_even_if_a_lookalike_line_stays() -> None:
    # The window keeps a different line with 5 of the sentence's 6 content words after the trim
    # of the evidence line (seq 6); that lookalike is trimmed a session later (seq 7).
    lookalike = "Bob: I adopted a grey kitten named Pixel from the pet store."
    assert containment(content_words(SENTENCE), lookalike) >= 0.75
    trim, later = OpRef("trim", 6), OpRef("later", 7)
    memories = (
        memory("win@1", 5, f"{lookalike}\n{FACT}", "win@2", 6, trim),
        memory("win@2", 6, lookalike, "win@3", 7, later),
        memory("win@3", 7, "Bob: hi"),
    )
    case = CaseGraph(ANCHOR, (MESSAGE,), flow(FACT), memories, (("ctx", "Bob: hi"),))
    assert verdict(case) == ("trim", "UpdateError", "trim", "UpdateError")


def test_deletion_error_when_deleted() -> None:
    memories = (memory("mem@1", 4, FACT, deleted_by=UPDATE),)
    assert verdict(graph(memories, ("x",))) == (
        "update",
        "DeletionError",
        "update",
        "DeletionError",
    )


def test_extraction_error_when_never_stored() -> None:
    case = graph((memory("mem@1", 4, "Ann: I like tea."),), ("x",), extracted="[]")
    assert verdict(case) == ("extract", "ExtractionError", "extract", "ExtractionError")


def test_deletion_after_the_question_does_not_count() -> None:
    late = OpRef("late", 20, "update")
    case = graph((memory("mem@1", 4, FACT, deleted_by=late),), ("x",))
    assert verdict(case)[:2] == ("search", "RetrievalError")


def test_bm25_and_rrf() -> None:
    corpus = [("a", "we went hiking"), ("b", "my kitten Pixel"), ("c", "kitten food")]
    assert bm25_ranking(corpus, "name of the kitten Pixel")[0] == "b"
    assert reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)[0] == "b"
    # 1 / (k + rank), ranks from 1: twice second beats once first; once first ties twice third
    assert reciprocal_rank_fusion([["a", "b"], ["c", "b"]], k=1) == ["b", "a", "c"]
    assert reciprocal_rank_fusion([["a", "x", "b"], ["y", "z", "b"]], k=1)[:2] == ["a", "b"]


def test_dense_ranking_is_by_cosine_and_retrieve_picks_the_retriever() -> None:
    vocabulary = ("kitten", "pixel", "tea")

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[float(text.split().count(word)) for word in vocabulary] for text in texts]

    corpus = [
        ("long", "tea tea tea kitten"),  # the largest vector, pointing elsewhere
        ("empty", ""),  # no words: a zero vector scores 0, not NaN
        ("match", "kitten pixel"),
        ("same", "kitten pixel"),  # a tie keeps the corpus order
    ]
    query = "kitten pixel"
    assert dense_ranking(corpus, query, embed) == ["match", "same", "long", "empty"]
    assert retrieve(corpus, query) == bm25_ranking(corpus, query)  # bm25 unless told
    assert retrieve(corpus, query, "dense", embed) == ["match", "same", "long", "empty"]
    fused = reciprocal_rank_fusion(
        [bm25_ranking(corpus, query), dense_ranking(corpus, query, embed)]
    )
    assert retrieve(corpus, query, "hybrid", embed) == fused
    with pytest.raises(ValueError, match="the dense retriever needs an embedding function"):
        retrieve(corpus, query, "dense")


def test_retrieved_evidence_queries_question_and_gold_answer_by_default() -> None:
    corpus = [("m1", MESSAGE.text), ("m2", "Pixel is a phone brand I like")]
    anchor = Anchor("t", "c", "Which pet did Ann adopt?", ("Pixel",), None, True, "q", ANSWER,
                    (), ())  # fmt: skip
    seen: list[str] = []

    def embed(texts: list[str]) -> list[list[float]]:
        seen.append(texts[0])
        return [[float(len(t)), 1.0] for t in texts]

    found = retrieved_evidence(anchor, corpus, retriever="hybrid", embed=embed)  # type: ignore[arg-type]
    assert seen == ["Which pet did Ann adopt? Pixel"]
    assert {e.id for e in found} <= {"m1", "m2"}
    retrieved_evidence(anchor, corpus, retriever="dense", query_mode="question", embed=embed)  # type: ignore[arg-type]
    assert seen[-1] == "Which pet did Ann adopt?"
    with pytest.raises(ValueError):
        retrieved_evidence(anchor, corpus, retriever="dense")


def _anchor(question: str, gold: str, prediction: str | None) -> Anchor:
    return Anchor("t", "c", question, (gold,), prediction, True, "q", ANSWER, (), ())


def test_retrieved_evidence_tie_breaks_away_from_what_misled_the_answer() -> None:
    corpus = [
        ("quoted", "Lately I looked into counseling as a career. I want to help people."),
        ("other", "I am thinking of counseling work with trans people, supporting them."),
        ("asks", "What kind of counseling do you want to do?"),
    ]
    wrong = "Caroline: Lately I looked into counseling as a career. (27 June 2023)"
    found = retrieved_evidence(_anchor("What career path?", "counseling", wrong), corpus)
    assert [e.id for e in found] == ["other"]
    # Without the misleading prediction the better-ranked message stays first.
    found = retrieved_evidence(_anchor("What career path?", "counseling", None), corpus)
    assert [e.id for e in found] == ["quoted"]


def test_retrieved_evidence_prefers_the_person_the_question_names_on_a_tie() -> None:
    corpus = [
        ("gina", "Yeah, me too! Contemporary dance is so expressive."),
        ("jon", "I love all dances, but contemporary is my top pick."),
    ]
    speakers = {"gina": "Gina", "jon": "Jon"}
    anchor = _anchor("What is Jon's favorite style of dance?", "Contemporary", None)
    assert [e.id for e in retrieved_evidence(anchor, corpus, speakers=speakers)] == ["jon"]
    # A date answer covers no message: the named person's statement still comes first.
    corpus = [("gina", "Paris?! That is great Jon!"), ("jon", "I was in Paris yesterday.")]
    anchor = _anchor("When was Jon in Paris?", "28 January 2023", None)
    assert [e.id for e in retrieved_evidence(anchor, corpus, speakers=speakers)] == ["jon"]
    assert asked_about("Did Jon and Gina meet?", {"Jon", "Gina"}) is None


def test_json_list_contexts_are_split_into_items() -> None:
    words = content_words(SENTENCE)
    context = '["[1 May] Ann: adopted grey", "kitten named Pixel shelter"]'
    assert containment(words, context) < 0.75
    assert containment(words, f'["x", "{FACT}"]') == 1.0


def test_short_sentences_must_be_held_completely() -> None:
    short = content_words("I signed up for a pottery class yesterday.")
    assert len(short) == 4
    assert not holds(short, ["Melanie: I made it in pottery class yesterday."])
    assert holds(short, ["Melanie: I signed up for a pottery class yesterday!"])


@pytest.mark.parametrize("name", ["attribution/evidence_flow", "attribution/candidates"])
def test_trail_reach_bound_matches_flow_depth(name: str) -> None:
    # Cypher cannot take a variable-length bound as a parameter: the literal must follow
    # FLOW_DEPTH (the reach plus the one last step make a trail).
    bounds = re.findall(r"\[:FLOWS_TO\*1\.\.(\d+)\]", get_query(name).text)
    assert bounds == [str(FLOW_DEPTH - 1)]


def test_candidate_check_replies_take_safe_defaults() -> None:
    from memtrace.attribution.llm_judge import DEFAULT_CONFIDENCE, CandidateCheck

    bare = CandidateCheck.model_validate_json('{"faulty": true, "decisive": false}')
    assert (bare.error_type, bare.reason, bare.confidence) == (None, "", DEFAULT_CONFIDENCE)
    assert bare.model_fields_set == {"faulty", "decisive"}  # the hybrid judge will not trust it
    loose = CandidateCheck.model_validate(
        {"faulty": True, "decisive": True, "error_type": "Extraction", "confidence": 85}
    )
    assert (loose.error_type, loose.confidence) == (None, 0.85)
    assert (
        CandidateCheck.model_validate(
            {"faulty": True, "decisive": True, "confidence": "high"}
        ).confidence
        == DEFAULT_CONFIDENCE
    )


# An answer taken from two sentences of one message: the key sentence (most words shared with
# question + answer) and another that holds the rest of the gold answer ("online platform").
PLANS = "Taking your advice, I'm sprucing up my business plan and tweaking my pitch to investors."
PLATFORM = "I'm also working on an online platform for the studio."
PLANS_MESSAGE = Evidence("m2", f"{PLANS} {PLATFORM} Did you like the event?")
PLANS_ANCHOR = Anchor(
    "t", "c2", "What plans does Jon have after the networking event?",
    ("Sprucing up his business plan, tweaking his pitch to investors, and working on an online "
     "platform.",),
    "Jon is sprucing up his business plan.", True, "q", ANSWER, (SEARCH,), ("m2",),
)  # fmt: skip
PLANS_FACT, PLATFORM_FACT = f"Jon: {PLANS}", f"Jon: {PLATFORM}"


def plans_case(memories: tuple[Memory, ...], context: tuple[str, ...]) -> CaseGraph:
    steps = (
        FlowStep("m2", 1, EXTRACT, "m2", "facts", f"{PLANS_FACT}\n{PLATFORM_FACT}"),
    )  # fmt: skip
    ctx = tuple((f"ctx{i}", value) for i, value in enumerate(context))
    return CaseGraph(PLANS_ANCHOR, (PLANS_MESSAGE,), steps, memories, ctx)


def reason_of(case: CaseGraph) -> str:
    trails = tuple(trace_all(case))
    found = linear(OfflineJudge(), CaseView(case, trails), candidates(case, trails))
    return found.reason


def test_every_sentence_holding_part_of_the_gold_answer_is_followed() -> None:
    case = plans_case((memory("plans@1", 4, PLANS_FACT), memory("platform@1", 4, PLATFORM_FACT)),
                      (f"Memory: {PLANS_FACT}",))  # fmt: skip
    trails = trace_all(case)
    assert [(t.key_sentence, t.role, t.stage) for t in trails] == [
        (PLANS, "key", "context"),
        (PLATFORM, "answer part", "stored"),  # the question sentence is not followed
    ]
    assert trails[1].answer_words == ("working", "online", "platform")


def test_a_lost_answer_sentence_is_blamed_though_the_key_sentence_survived() -> None:
    # Retrieval left out the memory holding "online platform": the answer could not say it.
    stored = (memory("plans@1", 4, PLANS_FACT), memory("platform@1", 4, PLATFORM_FACT))
    case = plans_case(stored, (f"Memory: {PLANS_FACT}",))
    assert verdict(case) == ("search", "RetrievalError", "search", "RetrievalError")
    assert reason_of(case) == (
        f"sentence {PLATFORM!r} of m2 (gold answer: 'working', 'online', 'platform') stopped at "
        "search search: stored in platform@1 but not in the retrieved context; also followed: "
        f"key sentence {PLANS!r} of m2 reached the answer's context"
    )
    # An UPDATE overwrote it instead (the case of issue 25): the update op is blamed.
    overwritten = (
        memory("plans@1", 4, PLANS_FACT),
        memory("platform@1", 4, PLATFORM_FACT, "platform@2", 6, UPDATE),
        memory("platform@2", 6, "Jon: I like tea."),
    )
    case = plans_case(overwritten, (f"Memory: {PLANS_FACT}", "Memory: Jon: I like tea."))
    assert verdict(case) == ("update", "UpdateError", "update", "UpdateError")
    assert "platform@1 was rewritten as platform@2 without it" in reason_of(case)


def test_a_lost_answer_sentence_whose_words_reached_the_context_does_not_count() -> None:
    # The platform sentence was overwritten, but another memory brought "working on an online
    # platform" into the context: the answer step had every part of the gold answer.
    memories = (
        memory("plans@1", 4, PLANS_FACT),
        memory("platform@1", 4, PLATFORM_FACT, "platform@2", 6, UPDATE),
        memory("platform@2", 6, "Jon: I like tea."),
    )
    context = (f"Memory: {PLANS_FACT}", "Memory: Jon is working on an online platform.")
    case = plans_case(memories, context)
    assert verdict(case) == ("answer", "ResponseError", "answer", "ResponseError")
    assert reason_of(case) == (
        "the answer is wrong although the evidence followed did not stop before its context: "
        f"key sentence {PLANS!r} of m2 reached the answer's context; sentence {PLATFORM!r} of m2 "
        "(gold answer: 'working', 'online', 'platform') stopped at update_decision update: "
        "platform@1 was rewritten as platform@2 without it (its gold-answer words are "
        "in the context all the same)"
    )
    both = plans_case((memories[0], memory("platform@1", 4, PLATFORM_FACT)),
                      (f"Memory: {PLANS_FACT}", f"Memory: {PLATFORM_FACT}"))  # fmt: skip
    assert reason_of(both) == (
        "the answer is wrong although the evidence followed did not stop before its context: "
        f"key sentence {PLANS!r} of m2 reached the answer's context; sentence {PLATFORM!r} of m2 "
        "(gold answer: 'working', 'online', 'platform') reached the answer's context"
    )


def test_one_shared_word_does_not_make_a_sentence_part_of_the_answer() -> None:
    message = Evidence("m1", f"{SENTENCE} The shelter was named Paws.")
    case = CaseGraph(ANCHOR, (message,), flow(FACT), (memory("mem@1", 4, FACT),),
                     (("ctx", f"Memory: {FACT}"),))  # fmt: skip
    assert [t.role for t in trace_all(case)] == ["key"]  # "Pixel" has one word: all of it


# -- failure mode stale-memory: an additive pipeline kept an older, contradicted memory -------

NEWER = Evidence("m2", "I started working as a baker at a workshop last week.", seq=10)
EXTRACT_NEWER = OpRef("extract-2", 11, "extraction", "memory_system.extract_memories")
ADD_NEWER = OpRef("add-2", 12, "embedding", "memory_system.add_to_vector_store")
STALE = '{"id": "old", "memory": "Chloe: I started a new job as a cashier at the mall."}'
FRESH = '{"id": "new", "memory": "Chloe: I started working as a baker at a workshop last week."}'
JOB = Anchor(
    "t", "c2", "What job did Chloe start?", ("baker",),
    "Chloe: I started a new job as a cashier at the mall.", True, "q",
    OpRef("answer", 20, "generation", "answer"),
    (OpRef("search", 19, "retrieval", "search"),), ("m2",),
)  # fmt: skip


def job_case(*, stored: bool, via: OpRef = EXTRACT_NEWER) -> CaseGraph:
    fresh = "Chloe: I started working as a baker at a workshop last week."
    steps: tuple[FlowStep, ...] = (
        FlowStep("m2", 1, via, "m2", "extracted", fresh if stored else "[]"),
    )
    if stored:
        steps += (FlowStep("m2", 2, ADD_NEWER, "extracted", "new@1", FRESH),)
    memories: tuple[Memory, ...] = (Memory("old@1", 4, STALE, ADD, None, None, None, None),)
    context = ["Chloe: I started a new job as a cashier at the mall."]
    if stored:
        memories += (Memory("new@1", 13, FRESH, ADD_NEWER, None, None, None, None),)
        context.append(fresh)
    ctx = tuple((f"ctx{i}", value) for i, value in enumerate(context))
    return CaseGraph(JOB, (NEWER,), steps, memories, ctx)


def stale_verdict(case: CaseGraph) -> list[tuple[str | None, str | None, str | None]]:
    trails = tuple(trace_all(case))
    view = CaseView(case, trails)
    cands = candidates(case, trails)
    found = [walk(OfflineJudge(), view, cands) for walk in (linear, binary)]
    return [
        (f.candidate.op.id if f.candidate else None, f.error_type, f.failure_mode) for f in found
    ]


def test_stale_memory_beside_the_newer_one_is_an_update_error_at_the_extraction() -> None:
    assert (
        stale_verdict(job_case(stored=True)) == [("extract-2", "UpdateError", "stale-memory")] * 2
    )


def test_stale_memory_when_the_newer_one_was_never_stored_stays_an_extraction_error() -> None:
    assert (
        stale_verdict(job_case(stored=False))
        == [("extract-2", "ExtractionError", "stale-memory")] * 2
    )


def test_with_an_update_step_on_the_way_the_classic_types_apply() -> None:
    decision = OpRef("extract-2", 11, "update", "memory_system.update_memory_decision")
    assert (
        stale_verdict(job_case(stored=True, via=decision))
        == [("answer", "ResponseError", None)] * 2
    )


def test_retrieved_evidence_finds_an_answer_told_in_a_question_and_says_when_none_covers() -> None:
    corpus = [
        ("told", "Did I ever tell you I'm allergic to peanuts?"),
        ("other", "I had a sandwich for lunch at work today."),
        ("asks", "What should I cook for dinner tonight?"),
    ]
    (found,) = retrieved_evidence(_anchor("What am I allergic to?", "peanuts", None), corpus)
    assert (found.id, found.covers) == ("told", True)
    # a statement that covers the answer still comes before a question that does
    corpus.append(("states", "I am allergic to peanuts, sadly."))
    (found,) = retrieved_evidence(_anchor("What am I allergic to?", "peanuts", None), corpus)
    assert (found.id, found.covers) == ("states", True)
    # nothing covers it: the best-ranked statement, marked as not covering
    (found,) = retrieved_evidence(_anchor("What did I eat for lunch?", "ramen", None), corpus)
    assert (found.id, found.covers) == ("other", False)


def test_a_verdict_resting_on_no_trail_says_so_at_a_low_confidence() -> None:
    from memtrace.attribution.judges import CONFIDENCE, CONFIDENCE_NO_TRAIL, NO_TRAIL

    case = extractive(["Ann: I like tea."], ["Ann: I like tea."])
    view = CaseView(case, ())  # nothing to follow
    answer = next(c for c in candidates(case, ()) if view.is_answer(c))
    check, _ = OfflineJudge().check(view, answer)
    assert (check.error_type, check.reason, check.confidence) == (
        "ResponseError", NO_TRAIL, CONFIDENCE_NO_TRAIL
    )  # fmt: skip
    assert min(v for k, v in CONFIDENCE.items() if k != "lost at retrieval") > CONFIDENCE_NO_TRAIL


def test_the_offline_judges_check_of_each_candidate_and_its_confidence() -> None:
    """What the offline judge says of each candidate: the op a trail stopped at is faulty and
    decisive, at the confidence of its basis; the others, and the answer when evidence was
    lost, are passed through (not a verdict); the answer with all evidence in its context, or
    with no trail at all, is the ResponseError."""
    from memtrace.attribution.judges import CONFIDENCE, CONFIDENCE_NO_TRAIL, CONFIDENCE_PASSED

    def checks(case: CaseGraph, trails: tuple[Trail, ...] | None = None) -> dict[str, Check]:
        view = CaseView(case, tuple(trace_all(case)) if trails is None else trails)
        return {c.op.id: OfflineJudge().check(view, c)[0] for c in candidates(case, view.trails)}

    def said(check: Check) -> tuple[bool, bool, str | None, float]:
        return (check.faulty, check.decisive, check.error_type, check.confidence)

    passed = (False, False, None, CONFIDENCE_PASSED)
    retrieval = checks(graph((memory("mem@1", 4, FACT),), ("Memory: unrelated",)))
    assert said(retrieval["search"]) == (
        True,
        True,
        "RetrievalError",
        CONFIDENCE["lost at retrieval"],
    )
    assert retrieval["search"].reason.startswith(
        f"key sentence {SENTENCE!r} of m1 stopped at search search: "
    )
    assert "also followed" not in retrieval["search"].reason  # one trail, nothing else
    assert said(retrieval["answer"]) == passed
    assert retrieval["answer"].reason.startswith(
        "the context lacked evidence, so the answer could not be right: key sentence "
    )
    lost = checks(graph((), ("Memory: unrelated",), extracted="[]"))
    assert said(lost["extract"]) == (True, True, "ExtractionError", CONFIDENCE["lost in store"])
    assert said(lost["search"]) == passed  # the sentence never reached it
    assert lost["search"].reason == "the evidence passed through"
    reached = checks(graph((memory("mem@1", 4, FACT),), (f"Memory: {FACT}",)))
    basis = CONFIDENCE["evidence reached the answer"]
    assert said(reached["answer"]) == (True, True, "ResponseError", basis)
    assert said(checks(graph((), ()), ())["answer"]) == (
        True, True, "ResponseError", CONFIDENCE_NO_TRAIL
    )  # fmt: skip
    case = graph((memory("mem@1", 4, FACT),), ("Memory: unrelated",))
    view = CaseView(case, tuple(trace_all(case)))
    answer = next(c for c in candidates(case, view.trails) if view.is_answer(c))
    assert OfflineJudge().intact_after(view, answer)[0] is False  # the wrong answer's own op


def test_a_stale_memory_check_says_what_was_lost_and_what_misled_at_a_prior_confidence() -> None:
    from memtrace.attribution.judges import CONFIDENCE

    case = job_case(stored=False)
    view = CaseView(case, tuple(trace_all(case)))
    extract = next(c for c in candidates(case, view.trails) if c.op.id == "extract-2")
    check = OfflineJudge().check(view, extract)[0]
    (stale,) = view.stale
    assert (check.faulty, check.decisive, check.error_type, check.failure_mode) == (
        True, True, "ExtractionError", "stale-memory"
    )  # fmt: skip
    assert check.confidence == CONFIDENCE["stale memory"]
    assert check.reason == (
        f"key sentence {stale.trail.key_sentence!r} of m2: {stale.trail.detail}; {stale.reason}"
    )


# -- the answer model: an extractive answer step, as observed on one case ------------------------


def context_case(prediction: str | None, *values: str) -> CaseGraph:
    anchor = replace(ANCHOR, prediction=prediction)
    ctx = tuple((f"ctx{i}", value) for i, value in enumerate(values))
    return CaseGraph(anchor, (MESSAGE,), flow(FACT), (memory("mem@1", 4, FACT),), ctx)


def test_the_answer_steps_items_are_every_json_list_it_read() -> None:
    first = json.dumps(["[8 May 2023] Ann: my cat is grey"])
    second = "  " + json.dumps(["Ann: I like tea.", "Ann: the kitten name is Tom"])
    found = selection(context_case("Ann: the kitten name is Tom", first, "kitten", second))
    assert found is not None and found.quoted == 1
    assert found.items == tuple(
        ranking_words(item)
        for item in ("Ann: my cat is grey", "Ann: I like tea.", "Ann: the kitten name is Tom")
    )
    assert selection(context_case(None, second)) is None  # no prediction quotes nothing


def test_an_item_counts_as_quoted_from_nine_tenths_of_its_words() -> None:
    ten = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    nine = " ".join(ten.split()[:9])
    found = selection(context_case(f"{nine} kitten name", json.dumps([ten, "kitten name"])))
    assert found is not None and found.quoted == 2


def test_items_rank_by_idf_weighted_question_words_ties_by_position() -> None:
    items = [frozenset({"tea"}), frozenset({"kitten", "tea"}), frozenset({"kitten", "name"})]
    question = frozenset({"kitten", "name"})
    assert _scores(items, question) == [
        0.0, math.log(1 + 3 / 2), math.log(1 + 3 / 2) + math.log(1 + 3 / 1)
    ]  # fmt: skip
    assert _ranked(items, question) == [2, 1, 0]
    assert _ranked([frozenset({"a"}), frozenset({"b"})], frozenset()) == [0, 1]


def lost_trail(message_id: str, holders: tuple[str, ...] = ()) -> Trail:
    sentence = "I adopted a grey kitten yesterday."
    return Trail(message_id, sentence, "lost", SEARCH, "RetrievalError", "", holders)


def test_what_a_repair_restores_is_the_best_holding_line_else_the_sentence_as_said() -> None:
    said = (
        Evidence("m0", "other", speaker="Bob", said_on=date(2023, 1, 2)),
        Evidence("m1", "I adopted a grey kitten yesterday.", speaker="Ann",
                 said_on=date(2023, 5, 8)),
    )  # fmt: skip
    lines = json.dumps(["[8 May 2023] Ann likes tea", "[8 May 2023] Ann adopted a grey kitten"])
    case = replace(context_case(None), evidence=said, memories=(memory("mem@9", 4, lines),))
    assert restored(case, lost_trail("m1", ("mem@9",))) == Restored(
        "Ann adopted a grey kitten", ("8 May 2023", "7 May 2023")
    )
    gone = restored(case, lost_trail("m1", ("mem@404",)))  # a holder the case does not have
    assert gone.text == "Ann: I adopted a grey kitten yesterday."
    unknown = restored(case, lost_trail("m7"))  # no such message: no speaker, no day
    assert unknown == Restored("I adopted a grey kitten yesterday.", ())


def test_a_restored_item_is_quoted_where_it_ties_and_brings_the_dates_it_refers_to() -> None:
    kitten = frozenset({"kitten", "grey"})
    found = Selection((kitten, frozenset({"tea"})), 1)
    back = [Restored("kitten Pixel", ("7 May 2023", "8 May 2023"))]
    # the restored item ties with the quoted one: it is quoted, the gold answer is all it says
    assert rescues(found, "Which kitten?", back, "Pixel")
    assert not rescues(found, "Which kitten?", back, "Pixel grey")  # one quota: not both
    assert rescues(found, "Which kitten?", back, "8 May 2023")  # the dates it refers to
    every = Selection((kitten, frozenset({"tea"})), 2)  # quoted its whole context: quotes all
    assert rescues(every, "Which tea?", [Restored("Pixel", ())], "Pixel")
    assert not rescues(Selection((kitten,), 0), "Which kitten?", back, "Pixel")


# -- the verdict's records: what the store writes and the CLI prints ------------------------------


def test_a_verdict_is_written_with_its_set_fields_and_the_ops_it_checked() -> None:
    plain = Verdict("t", "c1", None, None, "nothing to blame", "offline", checked=["search"])
    moved = Verdict(
        "t", "c2", "search", "RetrievalError", "LLM: dropped", "hybrid", model="m",
        confidence=0.8, llm_calls=2, tokens_in=10, tokens_out=3, seconds=1.23456,
        overridden_from="update", overridden_type="UpdateError", checked=["update", "search"],
    )  # fmt: skip
    rows = attribution_rows([plain, moved])
    assert [(r["trace_id"], r["case_id"], r["op_id"]) for r in rows] == [
        ("t", "c1", None), ("t", "c2", "search"),
    ]  # fmt: skip
    assert rows[0]["props"] == {
        "trace_id": "t", "case_id": "c1", "reason": "nothing to blame", "judge": "offline",
        "confidence": 0.0, "llm_calls": 0, "tokens_in": 0, "tokens_out": 0, "seconds": 0.0,
        "strategy": "linear", "evidence": "gold", "replays": 0, "checked_ops": ["search"],
    }  # fmt: skip
    assert rows[1]["props"]["overridden_from"] == "update" and "checked" not in rows[1]["props"]
    assert rows[1]["props"]["checked_ops"] == ["update", "search"]


def test_the_memtrace_record_carries_only_what_the_verdict_has() -> None:
    plain = Verdict("t", "c1", None, None, "nothing to blame", "offline", seconds=0.123456)
    assert memtrace_record(plain) == {
        "trace_id": "t", "case_id": "c1",
        "error_attribution_result": {"error_type": None, "op_id": None,
                                     "reason": "nothing to blame"},
        "judge": "offline", "confidence": 0.0, "llm_calls": 0, "tokens_in": 0, "tokens_out": 0,
        "seconds": 0.1235,
    }  # fmt: skip
    full = replace(
        plain, op_id="search", error_type="RetrievalError", error="timed out",
        failure_mode="stale-memory", reading="lexical", replays=3,
        replay_outcomes='{"search": {"decisive": true}}', overridden_from="update",
        overridden_type="UpdateError",
    )  # fmt: skip
    record = memtrace_record(full)
    assert record["error_attribution_result"]["op_id"] == "search"
    assert (record["error"], record["failure_mode"], record["reading"]) == (
        "timed out", "stale-memory", "lexical",
    )  # fmt: skip
    assert (record["replays"], record["counterfactuals"]) == (3, {"search": {"decisive": True}})
    assert record["overridden_from"] == {"op_id": "update", "error_type": "UpdateError"}


def test_a_step_that_quoted_its_whole_context_quotes_even_the_worst_restored_item() -> None:
    found = Selection((frozenset({"kitten", "grey"}), frozenset({"tea"})), 2)
    # the restored item matches the question worst: quoted only because every item is
    assert rescues(found, "Which kitten drinks tea?", [Restored("Pixel", ())], "Pixel")
    # what it quotes says exactly the gold answer's words, no more: that is enough
    alone = Selection((frozenset({"tea"}), frozenset({"rain"})), 1)
    assert rescues(alone, "Which kitten?", [Restored("kitten Pixel", ())], "Pixel kitten")


def test_the_browser_query_of_a_case_starts_from_the_messages_the_judge_started_from() -> None:
    assert explain_cypher("t", "c1", 9, ["m1", "m2"]) == "\n".join(
        [
            ':param trace_id => "t";',
            ':param case_id => "c1";',
            ':param message_ids => ["m1", "m2"];',
            ":param max_seq => 9;",
            get_query("attribution/explain_view").text,
        ]
    )
    assert ":param message_ids => [];" in explain_cypher("t", "c1", 9)
