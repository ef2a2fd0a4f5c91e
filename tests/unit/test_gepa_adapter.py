"""The GEPA adapter's feedback and component choice (no endpoint: reflection is not called)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import SecretStr
from test_optimize import CLASSES, mem0

from memtrace.llm import LLMClient
from memtrace.optimize.gepa_adapter import CaseRef, MemtraceAdapter
from memtrace.optimize.plugin import CaseResult
from memtrace.optimize.routing import route
from memtrace.optimize.scoring import Blame, Budget, Evaluator
from memtrace.settings import LLMSettings
from memtrace.systems.prompts import QUESTION_ANSWERING, UPDATE_DECISION


def adapter(tmp_path: Path, guided: bool) -> MemtraceAdapter:
    system = mem0()
    evaluator = Evaluator(system, {"train": ["1"]}, Budget(10), tmp_path / "e.jsonl")
    client = LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k")), None)
    blames = {
        "locomo-qa-1-1": Blame("question-answering", "ResponseError", "context held it"),
        "locomo-qa-1-2": Blame("memory_system.update_memory_decision", "UpdateError", "merged"),
    }
    return MemtraceAdapter(
        evaluator,
        system.configuration(),
        client,
        budget=evaluator.budget,
        routing=route(CLASSES, "prompts") if guided else None,
        blames=blames if guided else {},
    )


def failed(*numbers: int) -> list[dict[str, Any]]:
    return [
        {
            "case": CaseRef("1", f"locomo-qa-1-{n}"),
            "result": CaseResult(f"locomo-qa-1-{n}", "1", False, "no idea", "Where?", "Oslo"),
        }
        for n in numbers
    ]


def test_guided_feedback_keeps_the_cases_blamed_on_an_operation_reading_the_prompt(
    tmp_path: Path,
) -> None:
    rows = adapter(tmp_path, guided=True).records(QUESTION_ANSWERING, failed(1, 2, 3))
    # CLASSES routes locomo-qa-1-0..5 to the QA prompt; case 3 has no verdict, case 2 another op
    assert [r["Feedback"].split(". Attribution: ")[1] for r in rows] == [
        "ResponseError at question-answering: context held it",
        "UpdateError at memory_system.update_memory_decision: merged",
    ]
    assert rows[0]["Generated Outputs"] == "no idea"
    assert rows[0]["Feedback"].startswith("wrong answer, expected Oslo")
    assert rows[0]["Inputs"] == "Where?"


def test_unguided_feedback_is_the_answer_only(tmp_path: Path) -> None:
    rows = adapter(tmp_path, guided=False).records(QUESTION_ANSWERING, failed(1, 2, 3))
    assert len(rows) == 3
    assert all("Attribution" not in r["Feedback"] for r in rows)


def test_the_component_with_most_failures_in_the_minibatch_is_rewritten(tmp_path: Path) -> None:
    guided = adapter(tmp_path, guided=True)
    candidate = {QUESTION_ANSWERING: "a", UPDATE_DECISION: "b"}
    # the update class holds locomo-qa-1-0..2, the QA class locomo-qa-1-0..5
    assert guided.select(None, failed(0, 1, 2), [], 0, candidate) == [QUESTION_ANSWERING]
    assert guided.select(None, [], [], 0, {UPDATE_DECISION: "b"}) == [UPDATE_DECISION]
