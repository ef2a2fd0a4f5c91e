"""The LLM side of attribution, decision by decision: what the hybrid judge lets the model move,
what the LLM judge shows it, and when the asking reader asks. Against the local scripted
OpenAI-compatible server (real HTTP, the real ``openai`` client)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pytest
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import SecretStr
from test_attribution_core import FACT, UPDATE, graph, job_case, memory

from memtrace import llm
from memtrace.attribution.asking import HOLDS_SYSTEM, AskingReader
from memtrace.attribution.hybrid import OVERRIDE_CONFIDENCE, HybridJudge, decisive, rivals
from memtrace.attribution.judges import CaseView, OfflineJudge
from memtrace.attribution.llm_judge import (
    CONTEXT_BUDGET,
    SYSTEM,
    VIEW_BUDGET,
    LLMJudge,
    render_view,
)
from memtrace.attribution.model import Candidate, CaseGraph, Check, Evidence, OperationView, OpRef
from memtrace.attribution.trails import candidates, trace_all
from memtrace.attribution.walk import Found, linear
from memtrace.llm import LLMClient
from memtrace.reading import LEXICAL, Reading, read_one_by_one
from memtrace.settings import LLMSettings


@pytest.fixture(autouse=True)
def forget_output_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's server is a new endpoint, but ports get reused: start with no memory."""
    monkeypatch.setattr(llm, "_known_modes", {})


def client_of(server: FakeOpenAI) -> LLMClient:
    settings = LLMSettings(base_url=server.base_url, api_key=SecretStr("sk-t"), model="m")
    return LLMClient(settings, None)


def hybrid(server: FakeOpenAI) -> HybridJudge:
    client = client_of(server)
    return HybridJudge(LLMJudge(client), client=client)


def reply(
    faulty: bool, decisive: bool, error_type: str | None = None, confidence: float = 0.9
) -> Reply:
    fields: dict[str, object] = {"faulty": faulty, "decisive": decisive, "reason": "the check"}
    fields |= {"error_type": error_type, "confidence": confidence}
    return Reply(content=json.dumps(fields))


FINE = reply(False, False)

# The memory holding the kitten's name was overwritten: the offline walk proposes the update
# (UpdateError, 0.99); its only rival is the search after it.
OVERWRITTEN = graph(
    (memory("mem@1", 4, FACT, "mem@2", 6, UPDATE), memory("mem@2", 6, "Ann: I like tea.")),
    ("Memory: Ann: I like tea.",),
)
# The context held the fact: the offline walk proposes the answer; its only rival is the
# search before it.
ANSWERED_WRONG = graph((memory("mem@1", 4, FACT),), ("Memory: unrelated", f"Memory: {FACT}"))


def decide(judge: HybridJudge, case: CaseGraph) -> tuple[Found, Found]:
    """The hybrid judge's verdict and the offline one it started from."""
    view = CaseView(case, tuple(trace_all(case)))
    found = candidates(case, view.trails)
    return judge.decide("linear", view, found), linear(OfflineJudge(), view, found)


def op_id(found: Found) -> str | None:
    return found.candidate.op.id if found.candidate else None


# -- hybrid: when the model may move the verdict ---------------------------------------------------


def test_decisive_is_faulty_decisive_complete_and_confident_enough() -> None:
    sure = Check(True, True, "UpdateError", "r", OVERRIDE_CONFIDENCE)
    assert decisive(sure)
    assert not decisive(replace(sure, confidence=OVERRIDE_CONFIDENCE - 0.01))
    assert not decisive(replace(sure, faulty=False))
    assert not decisive(replace(sure, decisive=False))
    assert not decisive(replace(sure, complete=False))


def test_the_rivals_are_the_nearest_candidate_on_each_side_earlier_first() -> None:
    five = [Candidate(OpRef(f"op{i}", i, "retrieval", f"search{i}"), "retrieval") for i in range(5)]
    assert rivals(five, five[2]) == [five[1], five[3]]
    assert rivals(five, five[1]) == [five[0], five[2]]
    assert rivals(five, five[0]) == [five[1]]
    assert rivals(five, five[4]) == [five[3]]


def test_a_rival_the_model_finds_decisive_takes_the_verdict_with_the_offline_one_recorded(
    fake_openai: FakeOpenAI,
) -> None:
    # a rival takes the type the model names, not its op kind's (what the search left out is
    # what an update lost: the type is what was lost, as in the executed label)
    fake_openai.script(FINE, reply(True, True, "UpdateError", 0.8))
    found, offline = decide(hybrid(fake_openai), OVERWRITTEN)
    assert (op_id(offline), offline.error_type) == ("update", "UpdateError")
    assert (op_id(found), found.error_type) == ("search", "UpdateError")
    assert (found.reason, found.confidence) == ("LLM: the check", 0.8)
    assert found.overridden_from == offline.candidate and found.overridden_type == "UpdateError"
    assert found.checked == ["update", "update", "search"] and found.usage.calls == 2
    assert len(fake_openai.chat_requests) == 2


def test_a_rival_named_without_a_type_gets_its_kinds_type(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(FINE, reply(True, True, None))  # the type answered, but none named
    found, _ = decide(hybrid(fake_openai), ANSWERED_WRONG)
    assert (op_id(found), found.error_type) == ("search", "RetrievalError")


def test_the_rival_before_the_proposal_is_asked_and_can_take_the_verdict(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(FINE, reply(True, True, "RetrievalError"))
    found, offline = decide(hybrid(fake_openai), ANSWERED_WRONG)
    assert (op_id(offline), op_id(found), found.error_type) == (
        "answer",
        "search",
        "RetrievalError",
    )
    assert found.checked == [*offline.checked, "answer", "search"]


def test_a_proposal_the_model_calls_faulty_but_not_decisive_yields_to_a_decisive_rival(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(reply(True, False, "UpdateError"), reply(True, True, "RetrievalError"))
    found, _ = decide(hybrid(fake_openai), OVERWRITTEN)
    assert (op_id(found), found.error_type) == ("search", "RetrievalError")


def test_a_proposal_the_model_confirms_unsurely_keeps_the_verdict_over_a_decisive_rival(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(reply(True, True, "UpdateError", 0.5), reply(True, True, "RetrievalError"))
    found, offline = decide(hybrid(fake_openai), OVERWRITTEN)
    assert (op_id(found), found.error_type, found.overridden_from) == (
        "update",
        "UpdateError",
        None,
    )
    assert found.reason == f"{offline.reason} (offline; LLM gave no decisive rival)"
    assert (found.confidence, found.checked) == (offline.confidence, ["update", "update", "search"])
    assert found.usage.calls == 2


def test_the_model_retypes_the_proposal_within_its_stage_only(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(reply(True, True, "DeletionError", 0.75), FINE)
    found, offline = decide(hybrid(fake_openai), OVERWRITTEN)
    assert (op_id(found), found.error_type, found.confidence) == ("update", "DeletionError", 0.75)
    assert (found.overridden_from, found.overridden_type) == (offline.candidate, "UpdateError")
    assert found.reason == "LLM: the check" and found.checked == ["update", "update", "search"]
    assert found.usage.calls == 2
    fake_openai.script(reply(True, True, "ExtractionError"), FINE)  # another stage: kept
    found, _ = decide(hybrid(fake_openai), OVERWRITTEN)
    assert (found.error_type, found.overridden_type) == ("UpdateError", None)
    assert found.reason.endswith("(offline; LLM agrees)")


def test_a_confirmed_proposal_keeps_the_offline_verdict_and_says_the_model_agrees(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(reply(True, True, "ExtractionError"), FINE)
    case = job_case(stored=False)  # a stale memory misled the answer: the offline failure mode
    found, offline = decide(hybrid(fake_openai), case)
    assert offline.failure_mode == "stale-memory"
    assert (found.candidate, found.error_type, found.failure_mode) == (
        offline.candidate, "ExtractionError", "stale-memory",
    )  # fmt: skip
    assert found.reason == f"{offline.reason} (offline; LLM agrees)"
    assert found.confidence == offline.confidence and found.usage.calls == 2
    assert found.checked == ["extract-2", "extract-2", "search"]


def test_a_failed_check_keeps_the_offline_verdict_and_counts_what_it_cost(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(Reply(content="not json"), Reply(content="still not json"))
    found, offline = decide(hybrid(fake_openai), OVERWRITTEN)
    assert (found.candidate, found.error_type) == (offline.candidate, offline.error_type)
    assert found.reason.startswith(f"{offline.reason} (offline; LLM check failed: ")
    assert "returned invalid JSON twice" in found.reason
    assert found.usage.calls == 2 and found.checked == ["update", "update"]


def test_without_a_client_an_unsure_reading_is_not_put_to_the_model(
    fake_openai: FakeOpenAI,
) -> None:
    view = CaseView(OVERWRITTEN, tuple(replace(t, sure=False) for t in trace_all(OVERWRITTEN)))
    judge = HybridJudge(LLMJudge(client_of(fake_openai)))  # checks, but asks no reading
    fake_openai.script(reply(True, True, "UpdateError"), FINE)
    found = judge.decide("linear", view, candidates(OVERWRITTEN, view.trails))
    assert (op_id(found), found.usage.calls) == ("update", 2)
    assert judge.model == "m"


def test_the_hybrid_judges_per_candidate_questions_are_the_models(fake_openai: FakeOpenAI) -> None:
    view = CaseView(OVERWRITTEN, tuple(trace_all(OVERWRITTEN)))
    update = candidates(OVERWRITTEN, view.trails)[0]
    fake_openai.script(
        reply(True, True, "DeletionError", 0.8),
        Reply(content=json.dumps({"intact": False, "reason": "gone"})),
        Reply(content=json.dumps({"intact": True})),
    )
    judge = hybrid(fake_openai)
    check, usage = judge.check(view, update)
    assert (check.error_type, check.confidence, usage.calls) == ("DeletionError", 0.8, 1)
    intact, spent = judge.intact_after(view, update)
    assert (intact, spent.calls) == (False, 1)
    assert judge.intact_after(view, update)[0] is True
    asked = fake_openai.chat_requests[1].body["messages"][-1]["content"]
    assert "After this operation, is the information needed to answer still intact" in asked


# -- the LLM judge: what the model is shown --------------------------------------------------------


def operation(**changes: object) -> OperationView:
    op = OperationView("update", "update_decision", "update", 5, (), (), ())
    return replace(op, **changes)  # type: ignore[arg-type]


def test_an_operation_view_shows_its_values_without_the_system_prompts() -> None:
    op = operation(
        inputs=(
            {"id": "p1", "category": "prompt", "value": "You are a memory manager."},
            {"id": "mem@1", "category": "memory", "value": "Ann:  adopted\n a kitten"},
        ),
        outputs=({"id": "mem@2", "category": "memory", "value": 42},),
        deletes=("mem@0",),
    )
    assert render_view(op) == (
        "operation update_decision (stage update, #5)\n"
        "input mem@1 [memory]: Ann: adopted a kitten\n"
        "output mem@2 [memory]: 42\n"
        "deletes mem@0"
    )


def test_an_operation_view_is_cut_to_its_budget() -> None:
    head = "operation update_decision (stage update, #5)\ninput i [memory]: "
    fits = operation(inputs=({"id": "i", "category": "memory", "value": "x" * 10},))
    value = "x" * (VIEW_BUDGET - len(head))
    exact = operation(inputs=({"id": "i", "category": "memory", "value": value},))
    assert render_view(exact) == head + value  # at the budget: whole
    over = operation(inputs=({"id": "i", "category": "memory", "value": value + "y"},))
    cut = render_view(over)
    assert len(cut) == VIEW_BUDGET and cut == (head + value)[: VIEW_BUDGET - 3] + "..."
    assert render_view(fits).endswith("x" * 10)


def prompt_of(server: FakeOpenAI, index: int = 0) -> tuple[str, str]:
    """The system and user message of a chat request."""
    messages = server.chat_requests[index].body["messages"]
    return messages[0]["content"], messages[-1]["content"]


def test_the_llm_judge_shows_the_case_and_the_operation_and_reads_every_field(
    fake_openai: FakeOpenAI,
) -> None:
    long = "Ann  said:\n" + "w" * CONTEXT_BUDGET
    anchor = replace(OVERWRITTEN.anchor, golden_answers=("Pixël",), prediction=None)
    case = replace(OVERWRITTEN, anchor=anchor, evidence=(Evidence("m1", long),))
    update = Candidate(OpRef("update", 5, "update", "update_decision"), "overwrite")
    view = CaseView(case, (), {"update": operation()})
    judge = LLMJudge(client_of(fake_openai))
    assert judge.model == "m"
    fake_openai.script(reply(True, True, "DeletionError", 0.8))
    check, usage = judge.check(view, update)
    assert check == Check(True, True, "DeletionError", "the check", 0.8, complete=True)
    assert usage.calls == 1 and fake_openai.chat_requests[0].body["temperature"] == 0
    system, asked = prompt_of(fake_openai)
    assert system.startswith(SYSTEM.text)
    shown = " ".join(long.split())
    assert f"- m1: {shown[: CONTEXT_BUDGET - 3]}...\n" in asked
    assert 'Gold answer: ["Pixël"]\nWrong prediction: \n' in asked
    assert (
        "Operation under review (overwrite):\noperation update_decision (stage update, #5)" in asked
    )


def test_the_llm_judge_says_what_it_could_not_find(fake_openai: FakeOpenAI) -> None:
    case = replace(OVERWRITTEN, evidence=(Evidence("m1", "a"), Evidence("m2", "b")))
    search = Candidate(OpRef("search", 8, "retrieval", "search"), "retrieval")
    fake_openai.script(Reply(content=json.dumps({"faulty": True, "decisive": True})))
    check, _ = LLMJudge(client_of(fake_openai)).check(CaseView(case, ()), search)
    assert (check.error_type, check.reason, check.complete) == (None, "", False)
    asked = prompt_of(fake_openai)[1]
    assert "Wrong prediction: no idea\n" in asked and "- m1: a\n- m2: b\n" in asked
    assert "Operation under review (retrieval):\noperation search (not found)" in asked
    fake_openai.script(FINE)
    LLMJudge(client_of(fake_openai)).check(CaseView(replace(case, evidence=()), ()), search)
    assert "Evidence messages that hold the answer:\n(none found)\n" in prompt_of(fake_openai, 1)[1]


def test_the_intact_question_shows_the_same_case(fake_openai: FakeOpenAI) -> None:
    update = Candidate(OpRef("update", 5, "update", "update_decision"), "overwrite")
    view = CaseView(OVERWRITTEN, (), {"update": operation(deletes=("mem@1",))})
    fake_openai.script(Reply(content=json.dumps({"intact": False, "reason": "deleted"})))
    intact, usage = LLMJudge(client_of(fake_openai)).intact_after(view, update)
    assert (intact, usage.calls) == (False, 1)
    assert fake_openai.chat_requests[0].body["temperature"] == 0
    system, asked = prompt_of(fake_openai)
    assert system.startswith(SYSTEM.text)
    assert asked.startswith(f'Question: {OVERWRITTEN.anchor.question}\nGold answer: ["Pixel"]\n')
    assert f"- m1: {OVERWRITTEN.evidence[0].text}\n" in asked
    assert "Operation (overwrite):\noperation update_decision (stage update, #5)\n" in asked
    assert "deletes mem@1" in asked


# -- the asking reader: one question where the reader cannot tell ---------------------------------


class Unsure:
    """A reader that can never tell (a meaning score in its blind band), and what it was given."""

    name = "unsure"

    def __init__(self) -> None:
        self.given: list[tuple[str, list[str], frozenset[str]]] = []

    def read(self, sentence: str, texts: object, needs: frozenset[str] = frozenset()) -> Reading:
        self.given.append((sentence, list(texts), needs))  # type: ignore[call-overload]
        return Reading(False, 0.55, False, "meaning:test")

    def read_each(
        self, sentence: str, texts: Sequence[str], needs: frozenset[str] = frozenset()
    ) -> list[Reading]:
        return read_one_by_one(self, sentence, texts, needs)

    def for_trace(self, copying: object) -> Unsure:
        return self


HOLDS = Reply(content=json.dumps({"holds": True, "confidence": 0.7}))


def test_the_asking_reader_asks_once_per_case_with_what_the_answer_needs(
    fake_openai: FakeOpenAI,
) -> None:
    unsure = Unsure()
    asking = AskingReader(client_of(fake_openai), unsure)
    assert asking.name == "unsure+llm:m"
    fake_openai.script(HOLDS)
    memories = json.dumps(["Ann has a kitten", "Ann likes tea"])
    needs = frozenset({"pixel", "kitten"})
    assert asking.read("I adopted Pixel.", [memories, None, "line one\nline two"], needs) == (
        Reading(True, 0.7, True, "llm:m")  # at SURE_ANSWER: sure
    )
    assert unsure.given == [("I adopted Pixel.", [memories, "line one\nline two"], needs)]
    system, asked = prompt_of(fake_openai)
    assert system.startswith(HOLDS_SYSTEM.text) and asked.startswith("A message said: I ado")
    assert "needs from it: kitten, pixel\n" in asked
    assert "Text (a memory, or the lines given to the answering step):\n" in asked
    assert "\nAnn has a kitten\nAnn likes tea\nline one\nline two\n" in asked
    assert fake_openai.chat_requests[0].body["temperature"] == 0
    assert (asking.asked, asking.usage.calls) == (1, 1)
    # the budget (one by default) spent: the reader's own reading stands
    assert asking.read("I adopted Pixel.", ["Ann has a kitten"]).sure is False
    assert len(fake_openai.chat_requests) == 1 and asking.asked == 1


def test_the_asking_reader_asks_for_the_whole_statement_and_keeps_an_unsure_answer_unsure(
    fake_openai: FakeOpenAI,
) -> None:
    asking = AskingReader(client_of(fake_openai), Unsure(), budget=2)
    fake_openai.script(Reply(content=json.dumps({"holds": False, "confidence": 0.69})))
    assert asking.read("I adopted Pixel.", ["Ann has a cat"]) == Reading(
        False, 0.69, False, "llm:m"
    )
    assert "needs from it: (the whole statement)\n" in prompt_of(fake_openai)[1]
    fake_openai.script(Reply(content="not json"), Reply(content="nor this"))
    assert asking.read("I adopted Pixel.", ["Ann has a cat"]) == Reading(
        False, 0.55, False, "meaning:test"
    )  # a failed question: the reader's reading, its cost counted
    assert (asking.asked, asking.usage.calls) == (2, 3)


def test_the_asking_reader_asks_nothing_of_a_sure_reading_or_of_no_text(
    fake_openai: FakeOpenAI,
) -> None:
    asking = AskingReader(client_of(fake_openai), LEXICAL)
    assert asking.read("I adopted Pixel.", ["I adopted Pixel."]).sure
    unsure = AskingReader(client_of(fake_openai), Unsure())
    assert unsure.read("I adopted Pixel.", [None]) == Reading(False, 0.55, False, "meaning:test")
    assert fake_openai.chat_requests == [] and asking.asked == unsure.asked == 0


def test_the_asking_reader_reads_each_memory_in_order_asking_within_its_budget(
    fake_openai: FakeOpenAI,
) -> None:
    unsure = Unsure()
    asking = AskingReader(client_of(fake_openai), unsure)
    fake_openai.script(HOLDS)
    needs = frozenset({"pixel"})
    assert asking.read_each("I adopted Pixel.", ["Ann has Pixel", "Ann has tea"], needs) == [
        Reading(True, 0.7, True, "llm:m"),  # asked: the first memory
        Reading(False, 0.55, False, "meaning:test"),  # the budget spent: the reader's own
    ]
    assert unsure.given == [
        ("I adopted Pixel.", ["Ann has Pixel"], needs),
        ("I adopted Pixel.", ["Ann has tea"], needs),
    ]
    assert "needs from it: pixel\n" in prompt_of(fake_openai)[1]
    assert "\nAnn has Pixel\n" in prompt_of(fake_openai)[1]
