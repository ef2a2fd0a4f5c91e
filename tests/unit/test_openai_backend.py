"""The openai backend and embedding search, against a real local OpenAI-compatible server."""

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
from memtrace.systems.judge import parse_label
from memtrace.systems.locomo import SAMPLE_PATH, Subset, load_locomo
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.openai_backend import OpenAIBackend, fact_sources
from memtrace.systems.params import Params
from memtrace.systems.rankers import BM25Ranker, EmbeddingRanker
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

CONVERSATION = [
    {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
                {"speaker": "Ana", "dia_id": "D1:2", "text": "Hi! Actually I renamed him Mochi."},
            ],
        },
        "qa": [
            {
                "question": "What is Ana's puppy called?",
                "answer": "Mochi",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "Who adopted a puppy?",
                "answer": "Ana",
                "evidence": ["D1:1"],
                "category": 4,
            },
        ],
    }
]


def reply(data: object) -> Reply:
    return Reply(content=json.dumps(data) if not isinstance(data, str) else data)


def backend(server: FakeOpenAI) -> OpenAIBackend:
    settings = LLMSettings(base_url=server.base_url, api_key=SecretStr("k"), model="m")
    return OpenAIBackend(LLMClient(settings, None, sleep=lambda _: None))


def test_mem0_on_openai_backend_traces_llm_decisions(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(CONVERSATION))
    (conv,) = load_locomo(data)
    fake_openai.script(
        reply({"facts": ["Ana adopted a puppy named Biscuit."]}),
        reply({"actions": [{"event": "ADD", "text": "Ana adopted a puppy named Biscuit."}]}),
        reply({"facts": ["renamed the puppy Mochi"]}),
        reply(
            {
                "actions": [
                    {
                        "event": "UPDATE",
                        "id": "memory-unit-00001",
                        "text": "Ana adopted a puppy, now named Mochi.",
                    },
                    {"event": "DELETE", "id": "memory-unit-99999"},  # invented id: ignored
                ]
            }
        ),
        reply("Mochi"),
        reply({"reasoning": "same name", "label": "CORRECT"}),
        reply("Ben"),
        reply({"reasoning": "The answer is incorrect.", "label": "WRONG"}),
    )
    system = Mem0System(backend(fake_openai))
    run, path = run_conversation(system, conv, tmp_path, clock=SimClock())
    assert path is not None
    assert [r.passed for r in run.results] == [True, False]
    records = check_trace(path)
    memory = [r for r in records if r["type"] == "variable" and r["name"] == "memory-unit-00001"]
    assert [json.loads(m["value"])["memory"] for m in memory] == [
        "Ana adopted a puppy named Biscuit.",
        "Ana adopted a puppy, now named Mochi.",
    ]
    ops = [r for r in records if r["type"] == "operation"]
    assert not any("delete_marker" in target for op in ops for _, target in op.get("edges", []))
    tokens = {op["name"]: op.get("metadata", {}).get("tokens_in") for op in ops}
    assert tokens == {  # every LLM call's usage lands on its operation
        "memory_system.extract_facts": 11,
        "memory_system.update_memory_decision": 11,
        "memory_system.add_to_vector_store": None,
        "memory_system.search_vector_store": None,
        "question-answering": 11,
        "llm-judge": 11,
    }
    requests = fake_openai.chat_requests
    assert len(requests) == 8
    extraction = requests[0].body["messages"]
    assert extraction[0]["content"].startswith("You extract durable personal facts")
    assert extraction[-1]["content"] == "Ana: I adopted a puppy named Biscuit."
    decision = json.loads(requests[3].body["messages"][-1]["content"])
    assert decision["memories"][0]["id"] == "memory-unit-00001"
    assert "Mochi" in requests[4].body["messages"][-1]["content"]


def test_a_judge_label_outside_correct_wrong_is_an_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(reply({"reasoning": "close", "label": "INCORRECT"}))
    response = backend(fake_openai).judge("p", "q", "gold", "pred", Params())
    with pytest.raises(LLMError, match="INCORRECT"):
        parse_label(response)


def test_paraphrased_facts_keep_their_source_sentence() -> None:
    text = "Hi there! I adopted a puppy named Biscuit. We went hiking."
    assert fact_sources("Ana has a puppy called Biscuit", "D1:1", text) == {"D1:1#1"}
    assert fact_sources("unrelated", "D1:1", text) == {"D1:1#0", "D1:1#1", "D1:1#2"}


def test_search_by_embeddings_from_the_endpoint(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    settings = LLMSettings(base_url=fake_openai.base_url, api_key=SecretStr("k"), model="m")
    ranker = EmbeddingRanker(LLMClient(settings, None), "embed-model")
    (conv,) = load_locomo(SAMPLE_PATH, Subset(conversations=("1",), questions=3))
    system = Mem0System(OfflineBackend(), ranker=ranker)
    _, path = run_conversation(system, conv, tmp_path, clock=SimClock())
    assert path is not None
    records = check_trace(path)
    retriever = [r for r in records if r["type"] == "variable" and r["name"] == "retriever"]
    assert [r["value"] for r in retriever] == ["embeddings:embed-model"]
    searches = [r for r in records if r.get("name") == "memory_system.search_vector_store"]
    assert len(searches) == 3 and all(retriever[0]["id"] in s["reads"] for s in searches)
    embedded = [
        t for r in fake_openai.requests if r.path.endswith("/embeddings") for t in r.body["input"]
    ]
    assert all(r.body["model"] == "embed-model" for r in fake_openai.requests)
    assert len(embedded) == len(set(embedded))  # each text embedded once per run
    questions = {q.text for q in conv.questions}
    assert questions <= set(embedded)


def test_bm25_ranks_by_content_words() -> None:
    docs = ["Ana: I adopted a puppy.", "Ben: I moved to Oslo.", "Ana: The puppy is called Mochi."]
    assert BM25Ranker().rank("What is the puppy called?", docs)[0] == 2
    assert BM25Ranker().rank("anything", []) == []
