"""A reference system on the OpenAI-compatible backend replayed against a real local server:
no repair reproduces every answer with every call answered by the cache; a repair re-asks only
the calls whose request it changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import SecretStr

from memtrace.llm import LLMClient
from memtrace.replay import TraceReplayer, read_native
from memtrace.settings import LLMSettings
from memtrace.systems.core import Fault
from memtrace.systems.locomo import Conversation, Question, Session, Turn
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.openai_backend import OpenAIBackend
from memtrace.systems.registry import SYSTEMS
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

CONV = Conversation(
    9,
    "tiny",
    ("Ana", "Ben"),
    (
        Session(
            1,
            "1:00 pm on 8 May, 2023",
            (
                Turn("D1:1", "Ana", "I adopted a puppy named Mochi."),
                Turn("D1:2", "Ben", "My sister moved to Porto last year."),
            ),
        ),
    ),
    (
        Question(1, "What is the name of Ana's puppy?", "Mochi", ("D1:1",), "single-hop"),
        Question(2, "Where did Ben's sister move?", "Porto", ("D1:2",), "single-hop"),
    ),
)


def responder(body: dict[str, Any]) -> Reply:
    """Replies that depend on the request only: facts = the message, always ADD, the answer is
    every memory line, the judge checks the gold answer is in the generated one."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system.startswith("You extract"):
        return Reply(json.dumps({"facts": [user]}))
    if system.startswith("You maintain"):
        fact = json.loads(user).get("fact", "")
        return Reply(json.dumps({"actions": [{"event": "ADD", "text": fact}]}))
    if system.startswith("Answer the question"):
        memories = user.split("Memories:\n", 1)[-1].split("\n\nQuestion:", 1)[0]
        return Reply(memories.replace("\n", " "))
    gold = user.split("Gold answer: ", 1)[1].split("\n", 1)[0]
    generated = user.split("Generated answer: ", 1)[1]
    label = "CORRECT" if gold.lower() in generated.lower() else "WRONG"
    return Reply(json.dumps({"reasoning": "gold in answer", "label": label}))


def test_openai_backend_replay_reuses_the_cache(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.responder = responder
    settings = LLMSettings(base_url=fake_openai.base_url, api_key=SecretStr("k"), model="m")

    def backend() -> OpenAIBackend:
        return OpenAIBackend(LLMClient(settings, tmp_path / "cache", sleep=lambda _: None))

    fault = Fault("fault-1", "ExtractionError", "locomo-qa-9-1", "D1:1", frozenset({"D1:1#0"}))
    system = Mem0System(backend(), faults=[fault])
    planted = {"id": fault.id, "type": fault.type, "target": fault.target,
               "anchor": fault.anchor, "sources": sorted(fault.sources)}  # fmt: skip
    meta = {"bench": {"planted": [planted]}}  # as bench make records it: a replay plants it again
    run, path = run_conversation(system, CONV, tmp_path, clock=SimClock(), metadata=meta)
    assert path is not None
    assert [r.passed for r in run.results] == [False, True]
    sent = len(fake_openai.chat_requests)
    replayer = TraceReplayer(read_native(path), backend())
    for result in run.results:
        again = replayer.replay(result.case_id)
        assert (again.passed, again.prediction) == (result.passed, result.prediction)
    assert len(fake_openai.chat_requests) == sent  # every unchanged call came from the cache
    extract = next(op for op, step in replayer.steps().items() if step == "extract:D1:1")
    fixed = replayer.replay("locomo-qa-9-1", [extract])
    assert fixed.passed
    new = fake_openai.chat_requests[sent:]
    assert new and all(not r.body["messages"][0]["content"].startswith("You extract") for r in new)


def test_the_answer_steps_oracle_is_judged_with_the_runs_judge_prompt(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A what-if that blames the answer op gives it the gold answer, judged for real: by the
    judge prompt the run used (the trace records only prompts it changed) and the question."""
    fake_openai.responder = responder
    settings = LLMSettings(base_url=fake_openai.base_url, api_key=SecretStr("k"), model="m")
    backend = OpenAIBackend(LLMClient(settings, tmp_path / "cache", sleep=lambda _: None))
    _, path = run_conversation(Mem0System(backend), CONV, tmp_path, clock=SimClock())
    assert path is not None
    inputs = read_native(path)
    replayer = TraceReplayer(inputs, backend)
    answer = next(
        op for op, sig in inputs.operations.items() if sig[0] == SYSTEMS["mem0"].answer_op
    )
    judged = len(fake_openai.chat_requests)
    assert replayer.replay_jointly({"locomo-qa-9-1": [answer]})["locomo-qa-9-1"].passed
    (request,) = fake_openai.chat_requests[judged:]
    system_prompt, user = (
        request.body["messages"][0]["content"],
        request.body["messages"][-1]["content"],
    )
    judge = next(r for r in fake_openai.chat_requests[:judged] if "Gold answer" in str(r.body))
    assert system_prompt == judge.body["messages"][0]["content"]  # the run's judge prompt
    assert "What is the name of Ana's puppy?" in user and "Gold answer: Mochi" in user
    assert "Generated answer: Mochi" in user
