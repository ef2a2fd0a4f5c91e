"""A real instrumentation left at its default records no content: the load says which switch
turns it on (the official opentelemetry-instrumentation-openai-v2, the notes service of
tests/timeline_app.py, the scripted endpoint of tests/fake_openai.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import timeline_app
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from memtrace.loaders.checks import check_records
from memtrace.loaders.otlp import read_otlp

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def test_openai_v2_at_its_default_is_told_to_capture_content(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CAPTURE, raising=False)
    # the app's capture environment without the content switch: the package's default
    monkeypatch.setattr(
        timeline_app,
        "CAPTURE_ENV",
        {k: v for k, v in timeline_app.CAPTURE_ENV.items() if k != CAPTURE},
    )
    fake_openai.responder = timeline_app.Replies()
    whole, _ = timeline_app.capture(fake_openai.base_url, tmp_path)
    records = [record for _, record in read_otlp(whole)]
    [off] = records[0].metadata["content_off"]
    # every model call of the service: 2 per message (extract, decide), 1 per question
    calls = sum(2 if c.path == "/message" else 1 for c in timeline_app.calls())
    assert off["spans"] == calls and "openai-v2" in off["instrumentation"]
    findings = {f.code: f for f in check_records(records)}
    assert f"{CAPTURE}=SPAN_ONLY" in findings["content-not-captured"].fix
    assert f"{CAPTURE}=SPAN_ONLY" in findings["no-answer-operation"].fix


def test_with_content_captured_nothing_is_asked(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.responder = timeline_app.Replies()
    whole, _ = timeline_app.capture(fake_openai.base_url, tmp_path)
    records = [record for _, record in read_otlp(whole)]
    assert records[0].metadata["content_off"] == []
    assert "content-not-captured" not in {f.code for f in check_records(records)}
