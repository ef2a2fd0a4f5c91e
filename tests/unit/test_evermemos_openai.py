"""The EverMemOS-style system on the openai backend, against a real local OpenAI-compatible
server with scripted replies (including malformed ones)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import SecretStr
from trace_checks import check_trace

from memtrace.errors import LLMError
from memtrace.llm import LLMClient
from memtrace.settings import LLMSettings
from memtrace.systems.evermemos import EverMemOSSystem
from memtrace.systems.evermemos_openai import OpenAIEpisodeSteps
from memtrace.systems.evermemos_steps import Said
from memtrace.systems.locomo import load_locomo
from memtrace.systems.openai_backend import OpenAIBackend
from memtrace.systems.params import Params
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

TURNS = [
    ("D1:1", "Ana", "I adopted a puppy named Biscuit."),
    ("D1:2", "Ben", "That is lovely! Dogs are great."),
    ("D1:3", "Ana", "Hi! Actually I renamed him Mochi."),
]
CONVERSATION = [
    {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": d, "text": t} for d, s, t in TURNS],
        },
        "qa": [
            {
                "question": "What is Ana's puppy called?",
                "answer": "Mochi",
                "evidence": ["D1:3"],
                "category": 4,
            }
        ],
    }
]


def reply(data: object) -> Reply:
    return Reply(content=json.dumps(data) if not isinstance(data, str) else data)


def backend(server: FakeOpenAI) -> OpenAIBackend:
    settings = LLMSettings(base_url=server.base_url, api_key=SecretStr("k"), model="m")
    return OpenAIBackend(LLMClient(settings, None, sleep=lambda _: None))


def test_evermemos_on_the_openai_backend(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(CONVERSATION))
    (conv,) = load_locomo(data)
    fake_openai.script(
        reply({"reasoning": "a reply", "should_end": False, "confidence": 0.9}),
        reply("no json here"),  # the boundary of D1:3: malformed twice -> not split
        reply("still none"),
        reply({"title": "Ana's puppy", "content": "Ana adopted Biscuit. She renamed him Mochi."}),
        reply({"time": "8 May 2023", "atomic_fact": ["Ana renamed her puppy Mochi."]}),
        reply({"is_sufficient": False, "reasoning": "no", "missing_information": ["name"]}),
        reply({"queries": ["puppy name", "Mochi"]}),
        reply("Mochi"),
        reply({"reasoning": "same name", "label": "CORRECT"}),
    )
    system = EverMemOSSystem(backend(fake_openai), params=Params(final_rerank=1))
    run, path = run_conversation(system, conv, tmp_path, clock=SimClock())
    assert path is not None
    assert [r.passed for r in run.results] == [True]
    records = check_trace(path)
    (unit,) = [r for r in records if r["type"] == "variable" and r["name"] == "memory-unit-00001"]
    assert json.loads(unit["value"]) == [
        "memory-unit-00001: Ana's puppy (8 May 2023)",
        "Ana adopted Biscuit.",
        "She renamed him Mochi.",
        "event log: Ana renamed her puppy Mochi.",
    ]
    # provenance survives the rewording, by shared content words: "renamed ... Mochi" from
    # D1:3's second sentence, "puppy" from D1:1 (never from D1:2, which shares none)
    assert {k for p in system.units[0].facts for k in p.sources} == {"D1:1#0", "D1:3#1"}
    assert system.holders["D1:1#0"] == {"memory-unit-00001"}
    ops = [r for r in records if r["type"] == "operation"]
    tokens: dict[str, int] = {}
    for op in ops:
        tokens[op["name"]] = tokens.get(op["name"], 0) + op.get("metadata", {}).get("tokens_in", 0)
    assert tokens == {
        "memory_system.message_buffer_update": 0,
        "evermemos.boundary_detection": 11,  # the failed call is not counted on the op
        "memory_system.finalize_memory_unit": 0,
        "memory_system.extract_memory": 22,
        "memory_system.hybrid_retrieval": 0,
        "memory_system.agentic_round1_bundle": 11,
        "memory_system.agentic_round2_bundle": 11,
        "memory_system.agentic_final_rerank": 0,
        "question-answering": 11,
        "llm-judge": 11,
    }
    (decision,) = [
        json.loads(r["value"])
        for r in records
        if r["type"] == "variable" and r["name"] == "boundary:D1:3"
    ]
    assert decision["should_end"] is False and decision["reasoning"].startswith("no decision")
    requests = fake_openai.chat_requests
    assert len(requests) == 9
    systems = [r.body["messages"][0]["content"] for r in requests]
    assert systems[0].startswith("You segment a chat into episodes")
    assert systems[3].startswith("You write the memory of one episode")
    assert systems[4].startswith("You list the atomic facts")
    assert systems[5].startswith("You check whether retrieved memories")
    assert systems[6].startswith("Retrieved memories did not answer")
    assert systems[7].startswith("Answer the question from the episodes")
    assert (
        "New message:\n[8 May 2023] Ben: That is lovely!"
        in requests[0].body["messages"][-1]["content"]
    )
    assert requests[5].body.get("temperature") == 0
    (queries,) = [
        r for r in records if r["type"] == "variable" and r["name"].startswith("refined_queries:")
    ]
    assert json.loads(queries["value"]) == ["puppy name", "Mochi"]


def test_failed_checks_count_as_sufficient_and_an_empty_event_log_is_an_error(
    fake_openai: FakeOpenAI,
) -> None:
    steps = OpenAIEpisodeSteps(backend(fake_openai))
    fake_openai.script(reply("?"), reply("??"))
    check = steps.sufficiency("p", "q", ["u"], Params())
    assert check.sufficient and check.reasoning.startswith("no check")
    fake_openai.script(reply({"atomic_fact": []}), reply({"time": "x", "atomic_fact": []}))
    with pytest.raises(LLMError):
        steps.event_log("p", [Said("D1:1", "Ana", "Hello there.", "8 May 2023")], Params())
    fake_openai.script(reply({"queries": ["  "]}))
    assert steps.refine("p", "the question", ["u"], check, Params()) == ["the question"]


def test_the_openai_steps_need_the_openai_backend() -> None:
    from memtrace.systems.offline import OfflineBackend

    with pytest.raises(TypeError, match="needs the openai backend"):
        OpenAIEpisodeSteps(OfflineBackend())
