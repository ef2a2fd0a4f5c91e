"""The real Mem0 2.x library, traced: `memtrace run mem0-lib` against a local OpenAI-compatible
server whose replies are valid for Mem0 2.x's additive extraction; planted faults (a dropped
fact, a retrieval miss, a stale memory that a later message contradicts) are attributed to the
op and type they were planted in, and patterns show the stale memory as a class of its own.

Runs only where mem0ai 2.x is installed (CI: a second virtualenv, see scripts/test.sh)."""

from __future__ import annotations

import importlib.metadata
import json
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, Mem0V2Replies, fake_openai_fixture  # noqa: F401
from mem0_lib_helpers import cli_json, skip_unless_mem0, use_endpoint

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.integrations import mem0 as integration
from memtrace.settings import load_settings
from memtrace.systems.mem0_lib import import_mem0, memory_config
from memtrace.tracing import trace, variable

skip_unless_mem0("2.", "memtrace-graph[mem0]")
pytestmark = pytest.mark.integration

STALE = "Chloe: I started a new job as a cashier at the mall."


@pytest.fixture
def endpoint(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[FakeOpenAI, Mem0V2Replies]]:
    replies = Mem0V2Replies()
    fake_openai.responder = replies
    use_endpoint(fake_openai, monkeypatch)
    yield fake_openai, replies


@pytest.fixture
def traced(db: Database, run_id: str) -> Iterator[str]:
    trace_id = f"{run_id}-mem0-lib-locomo-1"
    yield trace_id
    delete_trace(db, trace_id)


def run(run_id: str, out: Path, trace_id: str, *extra: str) -> None:
    summary = cli_json(
        "run", "mem0-lib", "--out", str(out), "--conversations", "1", "--backend", "offline",
        "--trace-prefix", f"{run_id}-", "--deterministic", "--load", "--json", *extra,
    )  # fmt: skip
    assert summary["loaded"] == [trace_id]


def attribute(trace_id: str, *extra: str) -> dict[str, dict[str, Any]]:
    records = cli_json("attribute", "--trace", trace_id, "--judge", "offline", "--json", *extra)
    return {r["case_id"]: r for r in records}


def test_mem0_2x_run_loads_with_its_graph(
    db: Database, endpoint: tuple[FakeOpenAI, Mem0V2Replies], traced: str, run_id: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    _, replies = endpoint
    run(run_id, tmp_path, traced)
    assert replies.calls == 32  # one additive extraction per add()
    rows = db.run(
        "MATCH (o:Operation {trace_id: $t}) RETURN o.name AS name, o.kind AS kind, "
        "count(*) AS n, collect(o.metadata)[0] AS metadata",
        t=traced,
    )
    ops = {row["name"]: row for row in rows}
    assert {name: row["kind"] for name, row in ops.items()} == {
        "memory_system.retrieve_existing_memories": "retrieval",
        "memory_system.extract_memories": "extraction",
        "memory_system.add_to_vector_store": "embedding",
        "memory_system.search_vector_store": "retrieval",
        "question-answering": "generation",
        "llm-judge": "judge",
    }
    assert ops["memory_system.extract_memories"]["n"] == 32
    # the message flows through the extraction into a memory Mem0 stored
    (row,) = db.run(
        "MATCH (m:Variable {trace_id: $t, name: 'U1:D1:3'})<-[:READS]-(x:Operation)"
        "-[:WRITES]->(:Variable)<-[:READS]-(:Operation)-[:WRITES]->(e:Variable "
        "{category: 'memory_entry'}) RETURN x.name AS op, e.value AS value",
        t=traced,
    )
    assert row["op"] == "memory_system.extract_memories" and "5k race" in row["value"]
    # the extraction read the prompt, what the lookup showed it and the messages read back
    (seen,) = db.run(
        "MATCH (x:Operation {trace_id: $t, name: 'memory_system.extract_memories'})"
        "-[:READS]->(v:Variable) WITH x, collect(v.category) AS read "
        "WHERE 'conversation_history' IN read RETURN read LIMIT 1",
        t=traced,
    )
    assert {"message", "prompt", "memory_context"} <= set(seen["read"])
    # a repeated filler line ("Wow, good for you!") is dropped by Mem0's MD5 de-duplication
    dropped = db.run(
        "MATCH (o:Operation {trace_id: $t, name: 'memory_system.add_to_vector_store'})"
        "-[:READS]->(d:Variable {category: 'memory_entry'}) RETURN count(*) AS n",
        t=traced,
    )
    assert dropped[0]["n"] >= 1
    search = json.loads(ops["memory_system.search_vector_store"]["metadata"])
    assert search["threshold"] == 0.1 and search["semantic"] and search["keyword"] is None
    assert set(search["scores"]) <= set(search["semantic"])
    failed = db.run("MATCH (c:Case {trace_id: $t}) WHERE c.failed RETURN c.id AS id", t=traced)
    verdicts = attribute(traced, "--no-write")
    assert failed and {r["id"] for r in failed} == set(verdicts)


def blamed(db: Database, trace_id: str, op_id: str) -> dict[str, Any]:
    (row,) = db.run(
        "MATCH (o:Operation {trace_id: $t, id: $op}) "
        "OPTIONAL MATCH (o)-[:READS]->(m:Variable {category: 'message'}) "
        "RETURN o.name AS name, collect(DISTINCT m.name) AS messages",
        t=trace_id,
        op=op_id,
    )
    return dict(row)


def test_planted_faults_are_attributed_and_the_stale_memory_is_its_own_class(
    db: Database, endpoint: tuple[FakeOpenAI, Mem0V2Replies], traced: str, run_id: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    fake, replies = endpoint
    replies.drop.add("5k race")  # D1:3's extraction returns no memory
    fake.hidden.add("Kyoto")  # D3:3's memory is embedded away from every question
    replies.stale["pottery class"] = STALE  # D2:6's turn also states a job D4:6 contradicts
    params = tmp_path / "params.toml"
    params.write_text("answer_items = 1\n")  # the offline answer quotes its best item only
    run(run_id, tmp_path, traced, "--params", str(params))
    attribution_run = f"{run_id}-v2"
    records = attribute(traced, "--run-id", attribution_run)
    verdicts = {case: r["error_attribution_result"] for case, r in records.items()}
    for case in ("locomo-qa-1-1", "locomo-qa-1-2"):
        assert verdicts[case]["error_type"] == "ExtractionError"
        found = blamed(db, traced, verdicts[case]["op_id"])
        assert found == {"name": "memory_system.extract_memories", "messages": ["U1:D1:3"]}
    for case in ("locomo-qa-1-7", "locomo-qa-1-8"):
        assert verdicts[case]["error_type"] == "RetrievalError"
        found = blamed(db, traced, verdicts[case]["op_id"])
        assert found["name"] == "memory_system.search_vector_store"
    stale = records["locomo-qa-1-10"]
    assert stale["error_attribution_result"]["error_type"] == "UpdateError"
    assert stale["failure_mode"] == "stale-memory"
    assert "cashier" not in stale["error_attribution_result"]["reason"]  # names ids, not text
    found = blamed(db, traced, stale["error_attribution_result"]["op_id"])
    assert found == {"name": "memory_system.extract_memories", "messages": ["U1:D4:6"]}
    others = [r for case, r in records.items() if case != "locomo-qa-1-10"]
    assert all("failure_mode" not in r for r in others)
    result = CliRunner().invoke(cli, ["patterns", "--run", attribution_run, "--format", "json"])
    assert result.exit_code == 0, result.output
    classes = json.loads(result.stdout)
    (stale_class,) = [c for c in classes if c["failure_mode"] == "stale-memory"]
    assert stale_class["error_type"] == "UpdateError" and stale_class["cases"] == 1
    assert stale_class["op_name"] == "memory_system.extract_memories"
    assert stale_class["case_ids"] == ["locomo-qa-1-10"]


def test_shape_and_version_checks_are_clear_errors(
    endpoint: tuple[FakeOpenAI, Mem0V2Replies], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = import_mem0(load_settings().home).from_config(
        memory_config(load_settings(), tmp_path, "shape")
    )
    state = integration.instrument(memory)
    assert type(state).__name__ == "Mem0V2"
    with pytest.raises(integration.Mem0InstrumentationError, match="instrumented already"):
        integration.instrument(memory)
    # an add() that makes two LLM calls is not the additive pipeline: no partial trace
    original = memory.llm.generate_response

    def twice(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(memory.llm, "generate_response", twice)
    path = tmp_path / "broken.jsonl"
    with trace(path, "broken"):
        message = variable("m", "Farid: I ran a 5k race.", category="message")
        with (
            state.inputs(message),
            pytest.raises(
                integration.Mem0InstrumentationError,
                match=r"2 LLM calls.*mem0ai>=2\.0,<2\.3",
            ),
        ):
            memory.add("Farid: I ran a 5k race.", user_id="u")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert not [r for r in records if r["type"] == "operation"]
    # a 2.x Memory when the installed version says 1.0.x: it lacks the 1.0.x shape
    other = import_mem0(load_settings().home).from_config(
        memory_config(load_settings(), tmp_path / "other", "other")
    )
    monkeypatch.setattr(importlib.metadata, "version", lambda _: "1.0.11")
    with pytest.raises(integration.Mem0InstrumentationError, match=r"has no _add_to_graph"):
        integration.instrument(other)
    monkeypatch.setattr(importlib.metadata, "version", lambda _: "3.0.0")
    with pytest.raises(integration.Mem0InstrumentationError, match=r"mem0ai 3\.0\.0 is not"):
        integration.instrument(other)


def test_search_records_its_semantic_and_keyword_parts(
    endpoint: tuple[FakeOpenAI, Mem0V2Replies], tmp_path: Path
) -> None:
    """Qdrant's BM25 needs fastembed's model (not installed, not downloadable here), so the
    store's keyword_search is given BM25 over the stored texts (rank-bm25): Mem0 then fuses the
    keyword scores into the final ones, and the trace keeps both parts."""
    from types import SimpleNamespace

    from rank_bm25 import BM25Okapi

    memory = import_mem0(load_settings().home).from_config(
        memory_config(load_settings(), tmp_path, "keyword")
    )
    store = memory.vector_store

    def words(text: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", text.lower())

    def keyword_search(query: str, top_k: int = 5, filters: Any = None) -> list[Any]:
        points, _ = store.client.scroll(store.collection_name, limit=1000, with_payload=True)
        texts = [words(str(p.payload.get("data", ""))) for p in points]
        scores = BM25Okapi(texts).get_scores(words(query))
        ranked = sorted(zip(points, scores, strict=True), key=lambda pair: -pair[1])[:top_k]
        return [SimpleNamespace(id=p.id, score=s, payload=p.payload) for p, s in ranked if s > 0]

    store.keyword_search = keyword_search
    state = integration.instrument(memory)
    path = tmp_path / "keyword.jsonl"
    with trace(path, "keyword"):
        for text in ("Farid: I ran a 5k race.", "Chloe: I baked bread.", "Farid: I like tea."):
            memory.add(text, user_id="u")
        found = state.search("race Farid", user_id="u", top_k=3)
    (search,) = [
        json.loads(line)
        for line in path.read_text().splitlines()
        if '"memory_system.search_vector_store"' in line
    ]
    metadata = search["metadata"]
    assert metadata["keyword"] and set(metadata["keyword"]) <= set(metadata["semantic"])
    best = found["results"][0]
    assert "5k race" in best["memory"]
    assert metadata["scores"][best["id"]] != metadata["semantic"][best["id"]]  # fused
    assert metadata["entity"] is None and metadata["reranked"] is False


def test_public_update_and_delete_are_traced(
    endpoint: tuple[FakeOpenAI, Mem0V2Replies], tmp_path: Path
) -> None:
    memory = import_mem0(load_settings().home).from_config(
        memory_config(load_settings(), tmp_path, "changes")
    )
    state = integration.instrument(memory)
    path = tmp_path / "changes.jsonl"
    with trace(path, "changes"):
        first = memory.add("Farid: I live in Berlin.", user_id="u")["results"][0]["id"]
        second = memory.add("Farid: I like tea.", user_id="u")["results"][0]["id"]
        memory.update(first, text="Farid: I live in Paris.")
        memory.delete(second)
    assert memory.get(first)["memory"] == "Farid: I live in Paris."
    records = [json.loads(line) for line in path.read_text().splitlines()]
    ops = {r["name"]: r for r in records if r["type"] == "operation"}
    update, removal = ops["memory_system.update_memory"], ops["memory_system.delete_memory"]
    assert update["category"] == "update" and removal["category"] == "deletion"
    assert update["reads"] == [f"{first}@1"] and update["writes"] == [f"{first}@2"]
    assert removal["reads"] == [f"{second}@1"]
    assert state.memories.keys() == {first}


def test_the_genai_export_of_a_2x_run_gets_the_native_verdicts(
    db: Database, endpoint: tuple[FakeOpenAI, Mem0V2Replies], run_id: str, tmp_path: Path
) -> None:
    """The planted 2.x run traced natively and as GenAI memory spans at once: both loaded, the
    same verdicts (type, operation, failure mode) for every failed case."""
    pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memtrace.integrations.otel import GenAIMemoryTracer, write_otlp_json
    from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
    from memtrace.systems.params import Params
    from memtrace.systems.registry import make_backend, make_system
    from memtrace.tracing import SimClock

    fake, replies = endpoint
    replies.drop.add("5k race")
    fake.hidden.add("Kyoto")
    replies.stale["pottery class"] = STALE
    conv = load_locomo(SAMPLE_PATH)[0]
    system = make_system(
        "mem0-lib", make_backend("offline"), params=Params(answer_items=1), settings=load_settings()
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    mirror = partial(
        GenAIMemoryTracer, otel_tracer=provider.get_tracer("t"), session_id=conv.sample_id
    )
    native_id, otlp_id = f"{run_id}-v2-native", f"{run_id}-v2-genai"
    native = tmp_path / f"{native_id}.jsonl"
    try:
        with trace(native, native_id, system="mem0-lib", clock=SimClock(), tracer_class=mirror):
            system.run(conv)
        provider.shutdown()
        otlp = write_otlp_json(exporter.get_finished_spans(), tmp_path / "v2.otlp.json")
        cli_json("load", str(native), "--json")
        cli_json("load", str(otlp), "--trace-id", otlp_id, "--json")
        span_to_op = {
            span["spanId"]: attribute["value"]["stringValue"]
            for resource in json.loads(otlp.read_text())["resourceSpans"]
            for scope in resource["scopeSpans"]
            for span in scope["spans"]
            for attribute in span.get("attributes", [])
            if attribute["key"] == "memtrace.op_id"
        }

        def verdicts(trace_id: str, ops: dict[str, str]) -> dict[str, tuple[Any, ...]]:
            return {
                case: (
                    r["error_attribution_result"]["error_type"],
                    ops.get(r["error_attribution_result"]["op_id"], "?"),
                    r.get("failure_mode"),
                )
                for case, r in attribute(trace_id, "--no-write").items()
            }

        expected = {
            case: (r["error_attribution_result"]["error_type"],
                   r["error_attribution_result"]["op_id"], r.get("failure_mode"))
            for case, r in attribute(native_id, "--no-write").items()
        }  # fmt: skip
        assert expected and verdicts(otlp_id, span_to_op) == expected
        assert expected["locomo-qa-1-10"][0::2] == ("UpdateError", "stale-memory")
    finally:
        delete_trace(db, native_id)
        delete_trace(db, otlp_id)
