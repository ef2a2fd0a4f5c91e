"""The GenAI memory export (integrations/otel.py, real opentelemetry-sdk) of the reference mem0
system with planted faults: which spans carry which memory operation and attributes, and the
importer reads them back as the same kinds of operations."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memtrace.bench.make import BenchOptions, select_faults
from memtrace.integrations.otel import GenAIMemoryTracer, write_otlp_json
from memtrace.loaders.models import OperationRecord
from memtrace.loaders.otlp import read_otlp
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.registry import make_backend, make_system
from memtrace.tracing import SimClock, trace


def exported(tmp_path: Path) -> tuple[list[dict[str, Any]], Path]:
    conv = load_locomo(SAMPLE_PATH)[0]
    backend = make_backend("offline")
    options = BenchOptions(faults=3, seed=1, types=("UpdateError", "DeletionError"))
    verified = select_faults(options, backend, [conv], [], lambda _: None)
    system = make_system("mem0", backend, faults=verified[0].faults if verified else [])
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    mirror = partial(GenAIMemoryTracer, otel_tracer=provider.get_tracer("t"), session_id="s")
    with trace(tmp_path / "n.jsonl", "n", system="mem0", clock=SimClock(), tracer_class=mirror):
        system.run(conv)
    provider.shutdown()
    path = write_otlp_json(exporter.get_finished_spans(), tmp_path / "g.otlp.json")
    spans = []
    for span in json.loads(path.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        attributes = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
        spans.append({"name": span["name"], **attributes})
    return spans, path


def test_genai_export_uses_the_memory_operations(tmp_path: Path) -> None:
    spans, path = exported(tmp_path)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    for search in by_name["memory_system.search_vector_store"]:
        assert search["gen_ai.operation.name"] == "search_memory"
        assert search["gen_ai.memory.query.text"].endswith("?")
        records = json.loads(search["gen_ai.memory.records"])
        assert records and all({"id", "content"} <= set(r) for r in records)
        assert int(search["gen_ai.memory.record.count"]) == len(records)
    for store in by_name["memory_system.add_to_vector_store"]:
        assert store["gen_ai.operation.name"] == "create_memory"
        assert {r["event"] for r in json.loads(store["gen_ai.memory.records"])} == {"ADD"}
    decisions = {
        s.get("gen_ai.operation.name") for s in by_name["memory_system.update_memory_decision"]
    }
    assert {"chat", "update_memory", "delete_memory"} <= decisions
    for chat in by_name["memory_system.extract_facts"] + by_name["question-answering"]:
        assert chat["gen_ai.operation.name"] == "chat"
        messages = json.loads(chat["gen_ai.input.messages"])
        assert all(m["parts"][0]["type"] == "text" for m in messages)
        assert "llm.input_messages.0.message.content" not in chat  # no OpenInference
    ops = [r for _, r in read_otlp(path) if isinstance(r, OperationRecord)]
    kinds = {op.name: op.kind for op in ops}
    assert kinds["memory_system.search_vector_store"] == "retrieval"
    assert kinds["memory_system.add_to_vector_store"] == "embedding"
    deleting = [op for op in ops if op.category == "delete_memory"]
    assert deleting and all(
        any(w.startswith("delete_marker:") for w in op.writes) for op in deleting
    )
