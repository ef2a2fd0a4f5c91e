"""The same run traced natively and as OTel spans (real opentelemetry-sdk, OTLP JSON encoding),
in the OpenInference and in the GenAI memory convention, loads and gets the same verdicts from
`memtrace attribute`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memtrace.admin import delete_trace
from memtrace.bench.make import BenchOptions, select_faults
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.integrations.otel import (
    GenAIMemoryTracer,
    OpenInferenceTracer,
    SpanMirror,
    write_otlp_json,
)
from memtrace.systems.locomo import SAMPLE_PATH, Conversation, load_locomo
from memtrace.systems.registry import make_backend, make_system
from memtrace.tracing import SimClock, trace

pytestmark = pytest.mark.integration

# conversation number -> the fault types planted in it (one conversation cannot hold them all:
# the bench's selector avoids faults on the same evidence)
PLAN = {
    1: ("ExtractionError", "UpdateError", "DeletionError"),
    2: ("RetrievalError", "ResponseError"),
}


@dataclass
class Run:
    native: Path
    otlp: Path
    conv: Conversation


def traced_run(
    conv: Conversation,
    types: tuple[str, ...],
    out: Path,
    trace_id: str,
    convention: type[SpanMirror] = OpenInferenceTracer,
) -> Run:
    """Run the reference mem0 system with verified faults, traced both ways at once."""
    backend = make_backend("offline")
    verified = select_faults(
        BenchOptions(faults=5, seed=1, types=types), backend, [conv], [], lambda _: None
    )
    system = make_system("mem0", backend, faults=verified[0].faults if verified else [])
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    mirror = partial(
        convention,
        otel_tracer=provider.get_tracer("memtrace-test"),
        session_id=conv.sample_id,
    )
    native = out / f"{trace_id}.jsonl"
    with trace(native, trace_id, system="mem0", clock=SimClock(), tracer_class=mirror):
        system.run(conv)
    provider.shutdown()
    otlp = write_otlp_json(exporter.get_finished_spans(), out / f"{trace_id}.otlp.json")
    return Run(native, otlp, conv)


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def op_ids(otlp: Path) -> dict[str, str]:
    """span id -> the native op id the mirror recorded it for (only the test reads this)."""
    found = {}
    for resource in json.loads(otlp.read_text())["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for attribute in span.get("attributes", []):
                    if attribute["key"] == "memtrace.op_id":
                        found[span["spanId"]] = attribute["value"]["stringValue"]
    return found


def verdicts(trace_id: str, span_to_op: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    records = cli_json(
        "attribute", "--trace", trace_id, "--judge", "offline", "--no-write", "--json"
    )
    found = {}
    for record in records:
        result = record["error_attribution_result"]
        op = result["op_id"]
        found[record["case_id"]] = (result["error_type"], (span_to_op or {}).get(op, op))
    return found


@pytest.fixture(
    scope="module", params=[OpenInferenceTracer, GenAIMemoryTracer], ids=["openinference", "genai"]
)
def runs(
    db: Database, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[list[tuple[Run, str, str]]]:
    run_id = f"t{uuid.uuid4().hex[:12]}"
    tmp_path = tmp_path_factory.mktemp("otlp")
    convs = {c.number: c for c in load_locomo(SAMPLE_PATH)}
    loaded: list[tuple[Run, str, str]] = []
    try:
        for number, types in PLAN.items():
            native_id = f"{run_id}-native-{number}"
            run = traced_run(convs[number], types, tmp_path, native_id, request.param)
            otlp_id = f"{run_id}-otlp-{number}"
            cli_json("load", str(run.native), "--json")
            summary = cli_json("load", str(run.otlp), "--trace-id", otlp_id, "--json")
            assert summary["files"][0]["format"] == "otlp"
            loaded.append((run, native_id, otlp_id))
        yield loaded
    finally:
        for _, native_id, otlp_id in loaded:
            delete_trace(db, native_id)
            delete_trace(db, otlp_id)


def test_otlp_trace_gets_the_native_verdicts(runs: list[tuple[Run, str, str]]) -> None:
    types: set[str] = set()
    for run, native_id, otlp_id in runs:
        native = verdicts(native_id)
        imported = verdicts(otlp_id, op_ids(run.otlp))
        assert native, "the planted faults made no case fail"
        assert imported == native
        types |= {error_type for error_type, _ in native.values()}
    assert types == {
        "ExtractionError",
        "UpdateError",
        "DeletionError",
        "RetrievalError",
        "ResponseError",
    }


def test_cases_joined_from_a_locomo_labels_file(
    db: Database, runs: list[tuple[Run, str, str]], tmp_path: Path, run_id: str
) -> None:
    """Without memtrace.case spans (a plain OpenInference trace) the LoCoMo file supplies the
    cases: joined by session.id = sample_id and the question text; failed from the judge span."""
    run, native_id, _ = runs[0]
    data = json.loads(run.otlp.read_text())
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"] if s["name"] != "memtrace.case"]
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(data))
    trace_id = f"{run_id}-labels"
    try:
        summary = cli_json(
            "load", str(plain), "--trace-id", trace_id, "--labels", str(SAMPLE_PATH), "--json"
        )
        assert summary["cases"] == len(run.conv.questions)
        native = verdicts(native_id)
        joined = verdicts(trace_id, op_ids(run.otlp))
        prefix = f"{run.conv.sample_id}-qa-"
        renamed = {
            f"locomo-qa-{run.conv.number}-{k.removeprefix(prefix)}": v for k, v in joined.items()
        }
        assert renamed == native
    finally:
        delete_trace(db, trace_id)


def test_a_bad_otlp_file_beside_a_good_one_writes_nothing(
    db: Database, runs: list[tuple[Run, str, str]], tmp_path: Path, run_id: str
) -> None:
    good = tmp_path / f"{run_id}-good.json"
    good.write_text(runs[0][0].otlp.read_text())
    data = json.loads(good.read_text())
    data["resourceSpans"][0]["scopeSpans"][0]["spans"][3]["endTimeUnixNano"] = "1"
    bad = tmp_path / f"{run_id}-bad.json"
    bad.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["load", str(good), str(bad)])
    assert result.exit_code == 1
    assert "spans[3].endTimeUnixNano: ends before it starts" in result.output
    found = db.run("MATCH (t:Trace) WHERE t.id IN $ids RETURN t.id", ids=[f"otlp-{good.stem}"])
    assert found == []


def test_a_bad_memory_attribute_names_span_and_attribute_and_writes_nothing(
    db: Database, runs: list[tuple[Run, str, str]], tmp_path: Path, run_id: str
) -> None:
    data = json.loads(runs[0][0].otlp.read_text())
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    number, span = next(
        (i, s) for i, s in enumerate(spans) if s["name"] == "memory_system.add_to_vector_store"
    )
    attributes = span["attributes"]
    if not any(a["key"] == "gen_ai.memory.records" for a in attributes):
        # the OpenInference file: its store span becomes a GenAI memory span
        for key in ("gen_ai.operation.name", "gen_ai.memory.records"):
            attributes.append({"key": key, "value": {"stringValue": "create_memory"}})
    index = next(i for i, a in enumerate(attributes) if a["key"] == "gen_ai.memory.records")
    attributes[index]["value"] = {"stringValue": json.dumps([{"id": 7, "content": "x"}])}
    bad = tmp_path / f"{run_id}-bad-memory.json"
    bad.write_text(json.dumps(data))
    good = tmp_path / f"{run_id}-good-memory.json"
    good.write_text(runs[0][0].otlp.read_text())
    result = CliRunner().invoke(cli, ["load", str(good), str(bad)])
    assert result.exit_code == 1
    where = f"spans[{number}].attributes[{index}]: span '{span['name']}': "
    assert where + "gen_ai.memory.records[0].id: expected a string, got int 7" in result.output
    ids = [f"otlp-{good.stem}", f"otlp-{bad.stem}"]
    assert db.run("MATCH (t:Trace) WHERE t.id IN $ids RETURN t.id", ids=ids) == []
