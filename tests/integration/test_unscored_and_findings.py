"""Unscored is not passed, and the load says what will degrade attribution (issue 30), on the
real Neo4j with the diary assistant of tests/diary_system.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from diary_system import Mistakes, run_diary

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.tracing import (
    SimClock,
    Var,
    case,
    edge,
    edges,
    mutation,
    operation,
    read,
    trace,
    variable,
)

pytestmark = pytest.mark.integration


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def traces(db: Database, run_id: str) -> Iterator[str]:
    yield run_id
    for suffix in ("-none", "-some"):
        delete_trace(db, run_id + suffix)
    db.run("MATCH (a:Attribution) WHERE a.run_id STARTS WITH $r DETACH DELETE a", r=run_id)


def test_every_case_unscored_exits_non_zero_with_the_reason(traces: str, tmp_path: Path) -> None:
    trace_id = traces + "-none"
    path = tmp_path / "none.jsonl"
    run_diary(path, Mistakes(scored=0), trace_id=trace_id)
    loaded = invoke("load", str(path), "--json")
    assert loaded.exit_code == 0, loaded.output  # the graph is fine; the load says what it lacks
    summary = json.loads(loaded.stdout)
    assert summary["problems"] == {"error": 1, "warning": 0}
    assert summary["files"][0]["findings"][0]["code"] == "unscored-cases"
    assert "unscored-cases" in loaded.stderr and "fix: give each case judge_score=" in (
        loaded.stderr
    )
    result = invoke("attribute", "--trace", trace_id, "--judge", "offline", "--no-write")
    assert result.exit_code == 1
    assert f"nothing to attribute in trace '{trace_id}': 2 of 2 cases have no score" in (
        result.stderr
    )
    assert "q-pet, q-town" in result.stderr
    assert "no failed cases" not in result.output


def test_some_cases_unscored_are_counted_named_and_in_the_json(traces: str, tmp_path: Path) -> None:
    trace_id = traces + "-some"
    path = tmp_path / "some.jsonl"
    run_diary(path, Mistakes(scored=1), trace_id=trace_id)
    assert invoke("load", str(path)).exit_code == 0
    args = ["attribute", "--trace", trace_id, "--judge", "offline", "--run-id", traces]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "1 of 2 cases have no score" in result.stderr and "q-town" in result.stderr
    records = json.loads(invoke(*args, "--no-write", "--json").stdout)
    assert [(r["case_id"], r.get("unscored", False)) for r in records] == [
        ("q-pet", False),
        ("q-town", True),
    ]
    assert records[1]["error_attribution_result"] is None


NOTES = [
    "My dog is called Biscuit.",
    "I work as a nurse in Leeds.",
    "My neighbour's dog is called Rex.",
]


def run_notes(path: Path, trace_id: str, *, keep_category: bool) -> None:
    """Notes keyed by their subject: a later note on the same subject overwrites the earlier
    one (the fault: the neighbour's dog replaces Ana's). ``keep_category=False`` writes the new
    version as `variable(name, value)` without a category, as the SDK's mutation() used to."""
    store: dict[str, Var] = {}
    texts: dict[str, str] = {}
    with trace(path, trace_id, clock=SimClock("2024-02-01")):
        for n, text in enumerate(NOTES, 1):
            message = variable(f"msg-{n}", text, category="message")
            with operation("notes.extract"):
                read(message)
                facts = variable(f"facts-{n}", [text], category="facts", sources=(message,))
            key = "dog" if "dog" in text else text.split()[-1]
            texts[key] = text
            with operation("notes.update"):
                read(facts)
                if key not in store:
                    store[key] = variable(f"note-{key}", text, category="note", sources=(facts,))
                elif keep_category:
                    store[key] = mutation(store[key], text)
                    edge(facts, store[key])
                else:
                    new = variable(store[key].name, text)
                    edges((store[key], facts), new)
                    store[key] = new
        question = variable("q-1", "What is Ana's dog called?", category="query")
        with operation("notes.search"):
            read(question, *store.values())
            hit = store["dog"]
            context = variable("ctx-1", [texts["dog"]], category="context", sources=[hit])
        with operation("notes.answer"):
            read(question, context)
            answer = variable("pred-1", "Rex", category="prediction", sources=(context,))
        case(id="q-1", query=question.id, prediction=answer.id, golden_answers=["Biscuit"],
             judge_score=0, evidence=["msg-1@1"])  # fmt: skip


def test_an_overwrite_traced_with_mutation_is_blamed_on_the_update(
    traces: str, tmp_path: Path
) -> None:
    verdicts = {}
    for keep in (True, False):
        trace_id = traces + ("-some" if keep else "-none")  # cleaned by the fixture
        path = tmp_path / f"{trace_id}.jsonl"
        run_notes(path, trace_id, keep_category=keep)
        assert invoke("load", str(path)).exit_code == 0
        args = ["attribute", "--trace", trace_id, "--judge", "offline", "--no-write", "--json"]
        [record] = json.loads(invoke(*args).stdout)
        verdicts[keep] = record["error_attribution_result"]
    assert verdicts[True]["error_type"] == "UpdateError"
    assert "note-dog@1 was rewritten as note-dog@2" in verdicts[True]["reason"]
    # what the category loss cost: the new version is no rewrite of note-dog@1 the trail can
    # follow, only an update op that received the sentence and kept nothing holding it; that
    # stop is still an UpdateError (attribution/trails.py), on the same op, with a vaguer reason
    assert verdicts[False]["error_type"] == "UpdateError"
    assert verdicts[False]["op_id"] == verdicts[True]["op_id"]
    assert "wrote no output holding it" in verdicts[False]["reason"]
