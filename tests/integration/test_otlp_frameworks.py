"""Framework captures (tests/langchain_app.py: LangChain under OpenInference and under
OpenLLMetry, the real instrumentation packages, the local scripted endpoint) are loaded with
`memtrace load` and attributed with `memtrace attribute --judge offline`; each planted failure
of tests/framework_memory.py (written down before the capture) is scored by error type and by
the operation blamed. The counts are recorded in docs/trace-format.md; the test holds them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from framework_memory import (
    ANSWER_INSTRUCTIONS,
    DECIDE_INSTRUCTIONS,
    EXTRACT_INSTRUCTIONS,
    MESSAGES,
    PLANTED,
    Planted,
    Replies,
)
from langchain_app import run_langchain_app
from llamaindex_app import run_llamaindex_app

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.loaders.otlp.spans import read_spans

pytestmark = pytest.mark.integration

# app -> planted failures whose type and operation are both right (of 7)
MEASURED = {"langchain-openinference": 7, "langchain-openllmetry": 7, "llamaindex-openinference": 7}
APPS = {
    "langchain-openinference": lambda url, out: run_langchain_app(url, out, "openinference"),
    "langchain-openllmetry": lambda url, out: run_langchain_app(url, out, "openllmetry"),
    "llamaindex-openinference": run_llamaindex_app,
}


def _strings(value: Any) -> list[str]:
    """The strings of an attribute value, inside JSON too."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        value = json.loads(value)
    if isinstance(value, dict):
        return [t for v in value.values() for t in _strings(v)]
    if isinstance(value, list):
        return [t for v in value for t in _strings(v)]
    return [value] if isinstance(value, str) else []


def _model_calls(capture: Path) -> list[tuple[str, str, str | None]]:
    """(span id, the prompt's text, the enclosing case span's id) of each model call."""
    spans = read_spans(capture)
    by_id = {s.span_id: s for s in spans}

    def case_of(span: Any) -> str | None:
        while span is not None:
            if "memtrace.case.id" in span.attributes:
                return str(span.attributes["memtrace.case.id"])
            span = by_id.get(span.parent_id or "")
        return None

    calls = []
    for span in spans:
        attributes = span.attributes
        if attributes.get("openinference.span.kind") == "LLM" or (
            attributes.get("gen_ai.operation.name") == "chat"
        ):
            prompt = "\n".join(
                text
                for k, v in attributes.items()
                if "input_messages" in k
                or k in ("gen_ai.input.messages", "gen_ai.system_instructions", "llm.prompts")
                for text in _strings(v)
            )
            calls.append((span.span_id, prompt, case_of(span)))
    return calls


def _expected_op(capture: Path, case: Planted) -> str:
    calls = _model_calls(capture)
    if case.blamed == "extract":
        return next(i for i, p, _ in calls if EXTRACT_INSTRUCTIONS in p and case.message in p)
    if case.blamed == "decide":
        fact = MESSAGES[case.decided_for or case.message]
        return next(i for i, p, _ in calls if DECIDE_INSTRUCTIONS in p and f"New fact: {fact}" in p)
    if case.blamed == "answer":
        return next(i for i, p, c in calls if ANSWER_INSTRUCTIONS in p and c == case.case_id)
    spans = read_spans(capture)
    (case_span,) = [s for s in spans if s.attributes.get("memtrace.case.id") == case.case_id]
    inside = {case_span.span_id}
    for span in sorted(spans, key=lambda s: s.start_ns):
        if span.parent_id in inside:
            inside.add(span.span_id)
    return next(  # the retriever call itself (LlamaIndex's retrieve() around its _retrieve())
        s.span_id
        for s in sorted(spans, key=lambda s: s.start_ns)
        if s.span_id in inside
        and (s.attributes.get("openinference.span.kind") == "RETRIEVER" or "retrieve" in s.name)
    )


@pytest.mark.parametrize("app", sorted(MEASURED))
def test_framework_planted_failures_are_attributed(
    db: Database, fake_openai: FakeOpenAI, tmp_path: Path, run_id: str, app: str
) -> None:
    fake_openai.responder = Replies()
    capture = APPS[app](fake_openai.base_url, tmp_path / f"{run_id}.json")
    trace_id = f"otlp-{run_id}"
    try:
        loaded = CliRunner().invoke(cli, ["load", str(capture), "--json"])
        assert loaded.exit_code == 0, loaded.output
        summary = json.loads(loaded.stdout)
        assert summary["failed_cases"] == len(PLANTED)
        assert (summary["unread_content_spans"], summary["unknown_kind_spans"]) == (0, 0)
        # every model call carries its content: no switch to name
        assert "content-not-captured" not in {f["code"] for f in summary["files"][0]["findings"]}
        attributed = CliRunner().invoke(
            cli, ["attribute", "--trace", trace_id, "--judge", "offline", "--no-write", "--json"]
        )
        assert attributed.exit_code == 0, attributed.output
        verdicts = {
            r["case_id"]: r["error_attribution_result"] for r in json.loads(attributed.stdout)
        }
        assert set(verdicts) == {case.case_id for case in PLANTED}  # a prediction for every case
        right = [
            case.case_id
            for case in PLANTED
            if verdicts[case.case_id]["error_type"] == case.error_type
            and verdicts[case.case_id]["op_id"] == _expected_op(capture, case)
        ]
        assert len(right) >= MEASURED[app], (right, verdicts)
    finally:
        delete_trace(db, trace_id)
