"""The real Mem0 1.0.x library, traced: `memtrace run mem0-lib` against a local
OpenAI-compatible server whose replies are valid for Mem0's prompts; planted faults are
attributed to the op and type they were planted in; a broken pinned-range assumption is a clear
error; replays reproduce the run from the trace's recorded model calls, each repair restores
what its planted fault lost, and the replay judge names the planted op and type. Runs where
mem0ai 1.0.x is installed (2.x: test_mem0_lib_v2.py)."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Mem0Replies, Reply, fake_openai_fixture  # noqa: F401
from mem0_lib_helpers import (
    cli_json,
    recorded_calls,
    repaired_alone,
    replays_identically,
    skip_unless_mem0,
    step_op,
    traced_run,
    use_endpoint,
)

from memtrace.admin import delete_trace
from memtrace.db import Database
from memtrace.integrations import mem0 as integration
from memtrace.replay import make_replayer, read_native
from memtrace.settings import load_settings
from memtrace.systems.mem0_lib import import_mem0, memory_config
from memtrace.systems.params import Params
from memtrace.tracing import trace, variable

skip_unless_mem0("1.0.", "memtrace-graph[mem0-v1]")
pytestmark = pytest.mark.integration


@pytest.fixture
def endpoint(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Mem0Replies:
    replies = Mem0Replies()
    fake_openai.responder = replies
    use_endpoint(fake_openai, monkeypatch)
    return replies


@pytest.fixture
def traced(db: Database, run_id: str, tmp_path: Path) -> Iterator[str]:
    trace_id = f"{run_id}-mem0-lib-locomo-1"
    yield trace_id
    delete_trace(db, trace_id)


def run_and_attribute(run_id: str, out: Path, trace_id: str) -> dict[str, dict[str, str]]:
    summary = cli_json(
        "run", "mem0-lib", "--out", str(out), "--conversations", "1", "--backend", "offline",
        "--trace-prefix", f"{run_id}-", "--deterministic", "--load", "--json",
    )  # fmt: skip
    assert summary["loaded"] == [trace_id]
    records = cli_json(
        "attribute", "--trace", trace_id, "--judge", "offline", "--no-write", "--json"
    )
    return {r["case_id"]: r["error_attribution_result"] for r in records}


def test_real_mem0_run_loads_with_provenance(
    db: Database, endpoint: Mem0Replies, traced: str, run_id: str, tmp_path: Path
) -> None:
    verdicts = run_and_attribute(run_id, tmp_path, traced)
    ops = db.run(
        "MATCH (o:Operation {trace_id: $t}) RETURN o.name AS name, o.kind AS kind, count(*) AS n",
        t=traced,
    )
    kinds = {row["name"]: row["kind"] for row in ops}
    assert kinds["memory_system.extract_facts"] == "extraction"
    assert kinds["memory_system.update_memory_decision"] == "update"
    assert kinds["memory_system.add_to_vector_store"] == "embedding"
    assert kinds["memory_system.search_vector_store"] == "retrieval"
    # the message flows through extraction and decision into a memory Mem0 stored
    (row,) = db.run(
        "MATCH (m:Variable {trace_id: $t, name: 'U1:D1:3'})-[:FLOWS_TO*1..4]->(e:Variable "
        "{category: 'memory_entry'}) RETURN count(DISTINCT e) AS memories, "
        "collect(e.value)[0] AS value",
        t=traced,
    )
    assert row["memories"] >= 1 and "5k race" in row["value"]
    # every failed case got a verdict (the sample's relative dates fail the lexical judge)
    failed = db.run("MATCH (c:Case {trace_id: $t}) WHERE c.failed RETURN c.id AS id", t=traced)
    assert failed and {r["id"] for r in failed} == set(verdicts)


def blamed(db: Database, trace_id: str, op_id: str) -> dict[str, Any]:
    (row,) = db.run(
        "MATCH (o:Operation {trace_id: $t, id: $op}) "
        "OPTIONAL MATCH (o)-[:READS]->(m:Variable {category: 'message'}) "
        "OPTIONAL MATCH (o)-[:DELETES]->(d:Variable) "
        "RETURN o.name AS name, collect(DISTINCT m.name) AS messages, "
        "collect(DISTINCT d.value) AS deleted",
        t=trace_id,
        op=op_id,
    )
    return dict(row)


def test_planted_faults_are_attributed_to_their_op_and_type(
    db: Database,
    endpoint: Mem0Replies,
    fake_openai: FakeOpenAI,
    traced: str,
    run_id: str,
    tmp_path: Path,
) -> None:
    endpoint.drop.add("5k race")  # the extraction of D1:3 returns no fact
    fake_openai.hidden.add("Kyoto")  # D3:3's memory is embedded away from every question
    endpoint.delete["baker"] = "pottery class"  # D4:6's decision deletes D2:6's memory
    endpoint.overwrite["Silent Harbor"] = "rabbit named"  # D4:3's decision rewrites D2:3's
    verdicts = run_and_attribute(run_id, tmp_path, traced)
    (extraction,) = db.run(
        "MATCH (o:Operation {trace_id: $t, name: 'memory_system.extract_facts'})-[:READS]->"
        "(:Variable {name: 'U1:D1:3'}) RETURN o.id AS id",
        t=traced,
    )
    for case in ("locomo-qa-1-1", "locomo-qa-1-2"):
        assert verdicts[case] == {**verdicts[case], "error_type": "ExtractionError"}
        assert verdicts[case]["op_id"] == extraction["id"]
    for case in ("locomo-qa-1-7", "locomo-qa-1-8"):  # the retrieval miss
        assert verdicts[case]["error_type"] == "RetrievalError"
        assert blamed(db, traced, verdicts[case]["op_id"])["name"] == (
            "memory_system.search_vector_store"
        )
    deletion = verdicts["locomo-qa-1-5"]
    assert deletion["error_type"] == "DeletionError"
    found = blamed(db, traced, deletion["op_id"])
    assert found["name"] == "memory_system.update_memory_decision"
    assert any("pottery class" in value for value in found["deleted"])
    (decision,) = db.run(
        "MATCH (m:Variable {trace_id: $t, name: 'U1:D4:6'})<-[:READS]-(:Operation)-[:WRITES]->"
        "(f:Variable)<-[:READS]-(o:Operation {id: $op}) RETURN count(*) AS n",
        t=traced,
        op=deletion["op_id"],
    )
    assert decision["n"] == 1  # the decision on D4:6's facts
    assert {p["event"] for p in endpoint.planted} == {"DELETE", "UPDATE"}
    update = verdicts["locomo-qa-1-3"]
    assert update["error_type"] == "UpdateError"
    assert blamed(db, traced, update["op_id"])["name"] == "memory_system.update_memory_decision"
    (rewrite,) = db.run(
        "MATCH (o:Operation {trace_id: $t, id: $op})-[:WRITES]->(new:Variable)"
        "<-[:NEXT_VERSION]-(old:Variable) RETURN old.value AS old, new.value AS new",
        t=traced,
        op=update["op_id"],
    )
    assert "rabbit named Biscuit" in rewrite["old"] and "Silent Harbor" in rewrite["new"]


def test_a_broken_pinned_range_assumption_is_a_clear_error(
    endpoint: Mem0Replies, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = import_mem0(load_settings().home).from_config(
        memory_config(load_settings(), tmp_path, "assumptions")
    )
    state = integration.instrument(memory)
    with pytest.raises(integration.Mem0InstrumentationError, match="instrumented already"):
        integration.instrument(memory)

    # a Mem0 whose add() stores facts without an update decision (as mem0ai 2.x does)
    def additive(messages: Any, metadata: Any, filters: Any, infer: Any) -> list[Any]:
        memory.llm.generate_response(
            messages=[
                {"role": "system", "content": "You are a Personal Information Organizer"},
                {"role": "user", "content": "Input:\nuser: Farid: I ran a 5k race."},
            ]
        )
        memory_id = memory._create_memory(data="Farid ran a 5k", existing_embeddings=[0.1] * 64)
        return [{"id": memory_id, "memory": "Farid ran a 5k", "event": "ADD"}]

    monkeypatch.setattr(memory, "_add_to_vector_store", additive)
    endpoint.drop.clear()
    path = tmp_path / "broken.jsonl"
    with trace(path, "broken"):
        message = variable("m", "Farid: I ran a 5k race.", category="message")
        with (
            state.inputs(message),
            pytest.raises(
                integration.Mem0InstrumentationError,
                match=r"facts without one.*mem0ai>=1\.0\.11,<1\.1",
            ),
        ):
            memory.add("Farid: I ran a 5k race.", user_id="u")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert not [r for r in records if r["type"] == "operation"]  # no partial trace

    other = import_mem0(load_settings().home).from_config(
        memory_config(load_settings(), tmp_path / "other", "other")
    )
    # a 1.0.x Memory when the installed version says 2.x: it lacks the 2.x shape
    monkeypatch.setattr(importlib.metadata, "version", lambda _: "2.2.1")
    with pytest.raises(integration.Mem0InstrumentationError, match=r"has no .*get_last_messages"):
        integration.instrument(other)
    monkeypatch.setattr(importlib.metadata, "version", lambda _: "3.0.0")
    with pytest.raises(integration.Mem0InstrumentationError, match=r"mem0ai 3\.0\.0 is not"):
        integration.instrument(other)


# -- replays: the real Mem0 re-run with operations repaired ---------------------------------


def test_a_replay_without_repairs_reproduces_every_answer_from_the_trace(
    endpoint: Mem0Replies, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    endpoint.drop.add("5k race")  # a failing case or two among the passing ones
    path, answers = traced_run(tmp_path, Params(top_k=3))  # the replay reads top_k back
    assert {o["name"] for o in recorded_calls(path)} == {
        "memory_system.extract_facts",
        "memory_system.update_memory_decision",
    }
    replayer = replays_identically(path, answers, fake_openai)
    assert set(replayer.steps().values()) >= {
        "extract:D1:3", "decide:D2:6", "add:D2:6", "search:locomo-qa-1-7",
    }  # fmt: skip


def test_a_request_answered_differently_twice_replays_in_order(
    endpoint: Mem0Replies, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A model may answer the same request differently (the sample repeats its filler
    messages): a replay serves the n-th asking the n-th recorded reply."""
    asked: list[str] = []

    def fickle(body: dict[str, Any]) -> Reply | None:
        prompt = json.dumps(body["messages"])
        if "Personal Information Organizer" in prompt and "Farid: Wow, good for you!" in prompt:
            asked.append(prompt)
            if len(asked) == 2:  # the second asking: no fact this time
                return Reply(json.dumps({"facts": []}))
        return endpoint(body)

    fake_openai.responder = fickle
    path, answers = traced_run(tmp_path)
    assert len(asked) == 2 and asked[0] == asked[1]
    sent = len(fake_openai.chat_requests)
    replayer = make_replayer(read_native(path), load_settings())
    again = {case: replayer.replay(case) for case in answers}
    assert {case: (r.passed, r.prediction) for case, r in again.items()} == answers
    assert len(fake_openai.chat_requests) == sent


def test_each_repair_restores_what_its_planted_fault_lost(
    endpoint: Mem0Replies, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    endpoint.drop.add("5k race")  # extraction of D1:3: no fact
    fake_openai.hidden.add("Kyoto")  # D3:3's memory is never found by a search
    endpoint.delete["baker"] = "pottery class"  # the decision on D4:6 deletes D2:6's memory
    endpoint.overwrite["Silent Harbor"] = "rabbit named"  # the decision on D4:3 rewrites D2:3's
    path, answers = traced_run(tmp_path)
    replayer = make_replayer(read_native(path), load_settings())
    expected = {
        "locomo-qa-1-1": ("extract:D1:3", "ExtractionError", "added evidence D1:3#0"),
        "locomo-qa-1-5": ("decide:D4:6", "DeletionError", "(not deleted)"),
        "locomo-qa-1-3": ("decide:D4:3", "UpdateError", "kept its text"),
        "locomo-qa-1-7": ("search:locomo-qa-1-7", "RetrievalError", "added "),
    }
    for case, (step, error_type, detail) in expected.items():
        assert not answers[case][0]
        live = repaired_alone(replayer, fake_openai, case, step, error_type, detail)
        # the extraction requests are the trace's: only calls whose input a repair changed
        # (later decisions see other memories) reach the model
        assert all("Personal Information Organizer" not in str(r.body) for r in live)
        if step.startswith("search"):
            assert not live
    # a repair of another message's extraction leaves the case as it was
    other = replayer.replay("locomo-qa-1-1", [step_op(replayer, "extract:D2:3")])
    assert (other.passed, other.repaired) == (False, ())


def test_a_repaired_decision_stores_an_evidence_fact_it_let_go(
    endpoint: Mem0Replies, tmp_path: Path
) -> None:
    endpoint.ignore.add("baker")  # the decision on D4:6 answers NONE for its new fact
    path, answers = traced_run(tmp_path)
    assert not answers["locomo-qa-1-10"][0]
    replayer = make_replayer(read_native(path), load_settings())
    extraction = replayer.replay("locomo-qa-1-10", [step_op(replayer, "extract:D4:6")])
    assert (extraction.passed, extraction.repaired) == (False, ())  # it had the fact already
    decision = replayer.replay("locomo-qa-1-10", [step_op(replayer, "decide:D4:6")])
    assert decision.passed
    assert [(r.detail, r.error_type) for r in decision.repaired] == [
        ("stored evidence fact D4:6#0", "ExtractionError")
    ]


def test_the_replay_judge_reproduces_the_planted_labels(
    db: Database,
    endpoint: Mem0Replies,
    fake_openai: FakeOpenAI,
    traced: str,
    run_id: str,
    tmp_path: Path,
) -> None:
    endpoint.drop.add("5k race")
    fake_openai.hidden.add("Kyoto")
    endpoint.delete["baker"] = "pottery class"
    endpoint.overwrite["Silent Harbor"] = "rabbit named"
    offline = run_and_attribute(run_id, tmp_path, traced)
    records = cli_json("attribute", "--trace", traced, "--judge", "replay", "--no-write", "--json")
    replayed = {r["case_id"]: r for r in records}
    planted = {
        "locomo-qa-1-1": "ExtractionError",
        "locomo-qa-1-2": "ExtractionError",
        "locomo-qa-1-3": "UpdateError",
        "locomo-qa-1-5": "DeletionError",
        "locomo-qa-1-7": "RetrievalError",
        "locomo-qa-1-8": "RetrievalError",
    }
    for case, error_type in planted.items():
        verdict = replayed[case]["error_attribution_result"]
        assert verdict["error_type"] == error_type, (case, replayed[case])
        assert verdict["op_id"] == offline[case]["op_id"]  # the op the test above checks
        assert replayed[case]["replays"] >= 1
