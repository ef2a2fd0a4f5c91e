"""Tool-using agents captured with the instrumentation packages themselves (tests/tool_agents.py):
Arize's openinference-instrumentation-openai over a hand-written tool loop, and pydantic-ai's own
instrumentation (the GenAI conventions as Logfire reads them), run here (real packages, real
``openai`` client, the local scripted endpoint, the SDK's in-memory exporter and OTLP JSON
encoder). Strands cannot be installed beside our ``openai`` (strands-agents[openai] pins
openai < 3): tests/data/otlp/strands-1.62.0-openai-{events,latest}.json are the same agent
captured once that way in a virtualenv of its own (strands-agents 1.62.0, openai 2.54.0,
opentelemetry-sdk 1.45.1; Strands' OpenAIModel streaming from the same scripted endpoint, its
default span events and, with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental, the
current GenAI attributes). Each capture loads with `memtrace load`: the model's calls are
generations and the note search a retrieval, the tool's arguments are the variable the tool call
wrote and its result the one the next call read, each case finds the agent's final answer (not
the tool call before it), and `memtrace attribute` blames the answer for a wrong reply from the
right note and the search for the note it missed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")

from captured import offline_verdicts, predictions
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

CAPTURES = Path(__file__).parents[1] / "data" / "otlp"
Capture = Callable[[FakeOpenAI, Path], Path]


def live(run: Callable[[str, Path], Path]) -> Capture:
    def capture(fake: FakeOpenAI, out: Path) -> Path:
        script_replies(fake)
        path = run(fake.base_url, out)
        assert len(fake.chat_requests) == 4  # per question: the tool call, then the answer
        return path

    return capture


def captured(name: str) -> Capture:
    def capture(fake: FakeOpenAI, out: Path) -> Path:
        out.write_bytes((CAPTURES / name).read_bytes())
        return out

    return capture


# how the capture is made, the names of its model-call and tool spans
AGENTS: dict[str, tuple[Capture, str, str]] = {
    "openinference": (live(run_openinference_agent), "ChatCompletion", "search_notes"),
    "pydantic-ai": (live(run_pydantic_ai_agent), "chat gpt-4o-mini", "execute_tool search_notes"),
    "strands-events": (
        captured("strands-1.62.0-openai-events.json"),
        "chat",
        "execute_tool search_notes",
    ),
    "strands-latest": (
        captured("strands-1.62.0-openai-latest.json"),
        "chat",
        "execute_tool search_notes",
    ),
}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_tool_agent_capture_is_loaded_and_its_cases_attributed(
    agent: str, db: Database, fake_openai: FakeOpenAI, tmp_path: Path, run_id: str
) -> None:
    make, chat, tool = AGENTS[agent]
    capture = make(fake_openai, tmp_path / f"{run_id}.json")
    trace_id = f"otlp-{run_id}"
    try:
        loaded = CliRunner().invoke(cli, ["load", str(capture), "--json"])
        assert loaded.exit_code == 0, loaded.output
        summary = json.loads(loaded.stdout)
        assert summary["failed_cases"] == 2
        assert (summary["unread_content_spans"], summary["unknown_kind_spans"]) == (0, 0)
        # every model call carries its content: no switch to name
        assert "content-not-captured" not in {f["code"] for f in summary["files"][0]["findings"]}
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
        assert predictions(db, trace_id) == [
            ("notes-1", "Monday evening."),
            ("notes-2", "I do not know."),
        ]
        assert offline_verdicts(db, trace_id) == {
            "notes-1": ("ResponseError", chat),
            "notes-2": ("RetrievalError", tool),
        }
    finally:
        delete_trace(db, trace_id)
