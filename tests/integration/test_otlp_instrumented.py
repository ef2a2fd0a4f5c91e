"""A memory-backed QA app instrumented by OpenLLMetry's opentelemetry-instrumentation-openai
(real package, real ``openai`` client, local scripted endpoint, SDK exporter, OTLP JSON) loads
into Neo4j with `memtrace load`, and `memtrace attribute` names each failed case's operation:
the chat span that answered wrongly from the right note, the recall that missed its note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from captured import offline_verdicts, predictions
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from instrumented_app import run_app

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database

pytestmark = pytest.mark.integration


def test_a_captured_app_is_loaded_and_its_cases_attributed(
    db: Database, fake_openai: FakeOpenAI, tmp_path: Path, run_id: str
) -> None:
    fake_openai.script(Reply(content="Monday evening."), Reply(content="I do not know."))
    capture = run_app(fake_openai.base_url, tmp_path / f"{run_id}.json")
    trace_id = f"otlp-{run_id}"
    try:
        loaded = CliRunner().invoke(cli, ["load", str(capture), "--json"])
        assert loaded.exit_code == 0, loaded.output
        summary = json.loads(loaded.stdout)
        assert summary["failed_cases"] == 2 and summary["unread_content_spans"] == 0
        # every model call carries its content: no switch to name
        assert "content-not-captured" not in {f["code"] for f in summary["files"][0]["findings"]}
        (trace,) = db.run(
            "MATCH (t:Trace {id: $id}) RETURN t.meta_unread_content_spans AS unread, "
            "t.meta_unknown_kind_spans AS unknown",
            id=trace_id,
        )
        assert (trace["unread"], trace["unknown"]) == (0, 0)  # every span of the app is known
        assert predictions(db, trace_id) == [
            ("household-1", "Monday evening."),
            ("household-2", "I do not know."),
        ]
        assert offline_verdicts(db, trace_id) == {
            "household-1": ("ResponseError", "openai.chat"),
            "household-2": ("RetrievalError", "recall notes"),
        }
    finally:
        delete_trace(db, trace_id)
