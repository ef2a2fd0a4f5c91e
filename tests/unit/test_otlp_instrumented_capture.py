"""Captures made with the instrumentation packages themselves. OpenLLMetry's
opentelemetry-instrumentation-openai is run here (a real ``openai`` client, the local scripted
endpoint, the OpenTelemetry SDK's in-memory exporter, canonical OTLP JSON). OpenLit cannot be
installed beside our openai (it pins openai < 3): tests/data/otlp/openlit-1.34.43-openai.json was
captured once the same way in a virtualenv of its own (openlit 1.34.43, openai 1.109.1,
opentelemetry-sdk 1.36.0; one chat call inside an app span carrying memtrace.case.*). Both are
read: the chat spans are generations with their prompts and replies, every case finds its
prediction."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from instrumented_app import QUESTIONS, SYSTEM, run_app

from memtrace.loaders.models import CaseRecord, OperationRecord, VariableRecord
from memtrace.loaders.otlp import read_otlp

OPENLIT_CAPTURE = Path(__file__).parents[1] / "data" / "otlp" / "openlit-1.34.43-openai.json"


def test_an_openllmetry_capture_gives_every_case_its_prediction(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")
    fake_openai.script(Reply(content="Monday evening."), Reply(content="I do not know."))
    records = [r for _, r in read_otlp(run_app(fake_openai.base_url, tmp_path / "app.json"))]
    values = {r.id: r.value for r in records if isinstance(r, VariableRecord)}
    chats = [r for r in records if isinstance(r, OperationRecord) and r.category == "chat"]
    assert len(chats) == len(QUESTIONS) and {c.kind for c in chats} == {"generation"}
    assert all(SYSTEM in {values[v] for v in chat.reads} for chat in chats)
    cases = {r.id: r for r in records if isinstance(r, CaseRecord)}
    predictions = {case_id: values[c.prediction or ""] for case_id, c in cases.items()}
    assert predictions == {"household-1": "Monday evening.", "household-2": "I do not know."}
    assert all(c.is_failed for c in cases.values())  # the app's own judge scored them 0


def test_an_openlit_capture_is_read_from_its_attributes_and_events() -> None:
    records = [r for _, r in read_otlp(OPENLIT_CAPTURE)]
    values = {r.id: r.value for r in records if isinstance(r, VariableRecord)}
    (chat,) = [r for r in records if isinstance(r, OperationRecord) and r.name.startswith("chat")]
    assert chat.kind == "generation"
    # OpenLit writes the prompt as "role: content" lines, in an attribute and an event alike
    assert [values[v] for v in chat.reads] == [
        "system: Be brief.\nuser: Notes: the green bin goes out on Thursday evenings.\n"
        "Question: Which evening?"
    ]
    (case,) = [r for r in records if isinstance(r, CaseRecord)]
    assert values[case.prediction or ""] == "Thursday evening."
