"""Tool-using agents captured with two instrumentation packages themselves (tests/tool_agents.py):
Arize's openinference-instrumentation-openai over a hand-written tool loop, and pydantic-ai's own
instrumentation (the GenAI conventions as Logfire reads them). Real packages, real ``openai``
client, the local scripted endpoint, the SDK's in-memory exporter and OTLP JSON encoder. The
capture loads with `memtrace load`: the model's calls are generations and the note search a
retrieval, the tool's arguments are the variable the tool call wrote and its result the one the
next call read, each case finds the agent's final answer (not the tool call before it), and
`memtrace attribute` blames the answer for a wrong reply from the right note and the search for
the note it missed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from tool_agents import (
    NOTES,
    NOTHING_FOUND,
    run_openinference_agent,
    run_pydantic_ai_agent,
    script_replies,
)

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database

pytestmark = pytest.mark.integration

# the app, the names of its model-call and tool spans
AGENTS = {
    "openinference": (run_openinference_agent, "ChatCompletion", "search_notes"),
    "pydantic-ai": (run_pydantic_ai_agent, "chat gpt-4o-mini", "execute_tool search_notes"),
}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_tool_agent_capture_is_loaded_and_its_cases_attributed(
    agent: str, db: Database, fake_openai: FakeOpenAI, tmp_path: Path, run_id: str
) -> None:
    run: Callable[[str, Path], Path]
    run, chat, tool = AGENTS[agent]
    script_replies(fake_openai)
    capture = run(fake_openai.base_url, tmp_path / f"{run_id}.json")
    assert len(fake_openai.chat_requests) == 4  # per question: the tool call, then the answer
    trace_id = f"otlp-{run_id}"
    try:
        loaded = CliRunner().invoke(cli, ["load", str(capture), "--json"])
        assert loaded.exit_code == 0, loaded.output
        summary = json.loads(loaded.stdout)
        assert summary["failed_cases"] == 2
        assert (summary["unread_content_spans"], summary["unknown_kind_spans"]) == (0, 0)
        kinds = {
            (r["name"], r["kind"])
            for r in db.run(
                "MATCH (o:Operation {trace_id: $id}) RETURN o.name AS name, o.kind AS kind",
                id=trace_id,
            )
        }
        assert {(chat, "generation"), (tool, "retrieval"), ("remember notes", "embedding")} <= kinds
        known = (chat, tool, "remember notes")
        assert {kind for name, kind in kinds if name not in known} == {"other"}  # agent, case
        # the tool's arguments: written by the model's call, read by the tool; its result: written
        # by the tool, read by the next call
        flows = {
            (r["writer"], r["value"], r["reader"])
            for r in db.run(
                "MATCH (w:Operation {trace_id: $id})-[:WRITES]->(v:Variable)"
                "<-[:READS]-(r:Operation) RETURN w.name AS writer, v.value AS value, "
                "r.name AS reader",
                id=trace_id,
            )
        }
        for query, found in (("green bin evening", NOTES[0]), ("tooth check-up", NOTHING_FOUND)):
            assert (chat, json.dumps({"query": query}), tool) in flows
            assert (tool, found, chat) in flows
        predictions = db.run(
            "MATCH (:Trace {id: $id})-[:HAS_CASE]->(c:Case)-[:PREDICTION]->(p:Variable) "
            "RETURN c.id AS case, p.value AS prediction ORDER BY case",
            id=trace_id,
        )
        assert [(r["case"], r["prediction"]) for r in predictions] == [
            ("notes-1", "Monday evening."),
            ("notes-2", "I do not know."),
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
            "notes-1": ("ResponseError", chat),
            "notes-2": ("RetrievalError", tool),
        }
    finally:
        delete_trace(db, trace_id)
