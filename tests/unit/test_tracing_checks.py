"""The SDK catches, while tracing, what attribution depends on (issue 30).

A note-taking assistant of our own, written for these tests: notes are kept per topic and
overwritten in place when the user corrects them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memtrace.loaders.models import CaseRecord
from memtrace.tracing import (
    OFF,
    Registered,
    SimClock,
    case,
    mutation,
    operation,
    session,
    trace,
    variable,
    write,
)
from memtrace.tracing.tracer import CASE_FIELDS, CASE_REQUIRED


def variables(path: Path) -> dict[str, dict[str, Any]]:
    lines = (json.loads(line) for line in path.read_text().splitlines())
    return {r["id"]: r for r in lines if r["type"] == "variable"}


def test_mutation_keeps_the_category_and_class_of_what_it_mutates(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    clock = SimClock("2024-03-02")
    with trace(path, "notes-1", clock=clock), operation("notebook.correct_note"):
        note = variable("topic:cat", "The cat is Tom.", category="note", class_name="notebook")
        write(note)
        note = mutation(note, "The cat is Tim.")
        note = mutation(note, "The cat is Timmy.", category="pinned_note")
        note = mutation(note, "The cat is Timothy.")
    found = variables(path)
    assert [(v["id"], v.get("category"), v.get("class_name")) for v in found.values()] == [
        ("notebook:topic:cat@1", "note", "notebook"),
        ("notebook:topic:cat@2", "note", "notebook"),
        ("notebook:topic:cat@3", "pinned_note", "notebook"),  # given: the new category
        ("notebook:topic:cat@4", "pinned_note", "notebook"),  # kept from the latest version
    ]


def test_mutation_of_a_variable_without_category_records_none(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    with trace(path, "plain"), operation("scratch.update"):
        mutation(variable("scratch", 1), 2)
    assert "category" not in variables(path)["scratch@2"]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: case(id="q1", query="q@1", gold_answers=["x"]), "did you mean golden_answers="),
        (lambda: case(id="q1", query="q@1", judge=1.0), "did you mean judge_score="),
        (lambda: case(id="q1", query="q@1", evidences=[]), "did you mean evidence="),
        (lambda: operation("notebook.search", categroy="retrieval"), "did you mean category="),
        (lambda: operation("notebook.search", knd="retrieval"), "did you mean kind="),
        (lambda: mutation(OFF, "v", catgory="note"), "did you mean category="),
        (lambda: Registered("top_k", clas_name="parameter"), "did you mean class_name="),
        (lambda: session("ingest", sesion_id="s").__enter__(), "did you mean session_id="),
        (lambda: trace("t.jsonl", "t", sytem="mine").__enter__(), "did you mean system="),
        (lambda: operation("x", colour="red"), "it takes category, kind, metadata"),
    ],
)
def test_an_unknown_keyword_fails_at_the_call_with_a_suggestion(call: Any, expected: str) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument") as raised:
        call()
    assert expected in str(raised.value)


def test_case_checks_its_fields_while_tracing_and_while_not(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="needs query="):
        case(id="q1", prediction="p@1")
    with pytest.raises(TypeError, match="list of texts"):
        case(id="q1", query="q@1", golden_answers="Tim")
    path = tmp_path / "cases.jsonl"
    with trace(path, "cases"):
        question = variable("question", "What is the cat called?", category="query")
        with pytest.raises(TypeError, match="golden_answers"):
            case(id="q1", query=question.id, gold_answers=["Tim"])
        case(id="q1", query=question.id, golden_answers=["Tim"], judge_score=1)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["id"] for r in lines if r["type"] == "case"] == ["q1"]  # only the valid one


def test_case_fields_are_the_loaders() -> None:
    fields = set(CaseRecord.model_fields) - {"type"}
    assert set(CASE_FIELDS) == fields
    required = {name for name, info in CaseRecord.model_fields.items() if info.is_required()}
    assert set(CASE_REQUIRED) == required - {"type"}


def test_simclock_takes_iso_text() -> None:
    assert SimClock("2024-05-01").now() == "2024-05-01T00:00:00.001Z"
    assert SimClock("2024-05-01T09:30:00+02:00", step_ms=5).now() == "2024-05-01T07:30:00.005Z"
    assert SimClock(datetime(2024, 5, 1, tzinfo=UTC)).now() == "2024-05-01T00:00:00.001Z"
    with pytest.raises(ValueError, match="not an ISO 8601 date"):
        SimClock("1st of May")
    with pytest.raises(ValueError, match="not int"):
        SimClock(20240501)  # type: ignore[arg-type]
