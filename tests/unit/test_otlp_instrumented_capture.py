"""A capture made with the instrumentation package itself (OpenLLMetry's
opentelemetry-instrumentation-openai, a real ``openai`` client, the local scripted endpoint,
the OpenTelemetry SDK's in-memory exporter, canonical OTLP JSON) is read: the chat spans are
generations with their prompts and replies, and every case finds its prediction."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from instrumented_app import QUESTIONS, SYSTEM, run_app

from memtrace.loaders.models import CaseRecord, OperationRecord, VariableRecord
from memtrace.loaders.otlp import read_otlp


def test_an_openllmetry_capture_gives_every_case_its_prediction(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
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
