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
        (trace,) = db.run(
            "MATCH (t:Trace {id: $id}) RETURN t.meta_unread_content_spans AS unread, "
            "t.meta_unknown_kind_spans AS unknown",
            id=trace_id,
        )
        assert (trace["unread"], trace["unknown"]) == (0, 0)  # every span of the app is known
        predictions = db.run(
            "MATCH (:Trace {id: $id})-[:HAS_CASE]->(c:Case)-[:PREDICTION]->(p:Variable) "
            "RETURN c.id AS case, p.value AS prediction ORDER BY case",
            id=trace_id,
        )
        assert [(r["case"], r["prediction"]) for r in predictions] == [
            ("household-1", "Monday evening."),
            ("household-2", "I do not know."),
        ]
        attributed = CliRunner().invoke(
            cli, ["attribute", "--trace", trace_id, "--judge", "offline", "--no-write", "--json"]
        )
        assert attributed.exit_code == 0, attributed.output
        names = {
            r["id"]: r["name"]
            for r in db.run(
                "MATCH (o:Operation {trace_id: $id}) RETURN o.id AS id, o.name AS name",
                id=trace_id,
            )
        }
        verdicts = {
            r["case_id"]: (
                r["error_attribution_result"]["error_type"],
                names.get(r["error_attribution_result"]["op_id"]),
            )
            for r in json.loads(attributed.stdout)
        }
        assert verdicts == {
            "household-1": ("ResponseError", "openai.chat"),
            "household-2": ("RetrievalError", "recall notes"),
        }
    finally:
        delete_trace(db, trace_id)
