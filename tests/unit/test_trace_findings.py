"""`memtrace.loaders.checks`: each thing that degrades attribution is found, and nothing else.

The traces come from the diary assistant of tests/diary_system.py; each variant makes one
mistake a user could make.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from diary_system import Mistakes, run_diary

from memtrace.cli import cli
from memtrace.loaders import checks
from memtrace.loaders.checks import CHECKS, Finding, TraceChecker, check_records
from memtrace.loaders.native import read_native
from memtrace.loaders.smartcomment import read_smartcomment


def codes(findings: list[Finding]) -> dict[str, str]:
    return {finding.code: finding.level for finding in findings}


def test_a_well_traced_system_has_no_findings(tmp_path: Path) -> None:
    assert run_diary(tmp_path / "diary.jsonl", Mistakes()) == []


VARIANTS = {
    "no-answer-operation": (Mistakes(answer_reads_question=False, answer_name="bot.say"), "error"),
    "answer-does-not-read-question": (Mistakes(answer_reads_question=False), "warning"),
    "retrieval-does-not-read-question": (Mistakes(lookup_reads_question=False), "warning"),
    "overwrite-lost-category": (Mistakes(overwrite="variable"), "error"),
    "memory-without-category": (Mistakes(memory_category=None), "error"),
    "memory-without-producer": (Mistakes(memory_sources=False), "warning"),
    "no-memories": (Mistakes(lookup_name="diary.find"), "warning"),
    "unscored-cases": (Mistakes(scored=1), "warning"),
    "no-gold-answer": (Mistakes(gold=False), "warning"),
    "no-evidence": (Mistakes(evidence=False), "warning"),
}


@pytest.mark.parametrize("code", sorted(VARIANTS))
def test_each_mistake_is_found_by_its_check_only(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mistakes, level = VARIANTS[code]
    path = tmp_path / "diary.jsonl"
    found = run_diary(path, mistakes)
    assert codes(found) == {code: level}, found
    finding = found[0]
    assert finding.fix and finding.problem
    # the finding is that check's: without it, the trace passes
    checker = TraceChecker()
    for _ in checker.watch(read_native(path)):
        pass
    owner = [check for check in CHECKS if check(checker.facts)]
    assert len(owner) == 1
    monkeypatch.setattr(checks, "CHECKS", tuple(c for c in CHECKS if c is not owner[0]))
    assert check_records(record for _, record in read_native(path)) == []


def test_levels_and_details(tmp_path: Path) -> None:
    every_unscored = run_diary(tmp_path / "a.jsonl", Mistakes(scored=0))
    assert codes(every_unscored) == {"unscored-cases": "error"}
    assert every_unscored[0].count == 2 and every_unscored[0].examples == ("q-pet", "q-town")
    no_messages = run_diary(
        tmp_path / "b.jsonl", replace(Mistakes(), evidence=False, message_category=None)
    )
    assert codes(no_messages) == {"no-evidence": "error"}
    said = run_diary(
        tmp_path / "c.jsonl", Mistakes(answer_reads_question=False, answer_name="bot.say")
    )
    assert "bot.say (kind other)" in said[0].problem
    lost = run_diary(tmp_path / "d.jsonl", Mistakes(overwrite="variable"))
    assert lost[0].examples == ("note-pet@2",) and "'diary_entry'" in lost[0].problem


def test_errors_come_first_and_serialize(tmp_path: Path) -> None:
    found = run_diary(tmp_path / "e.jsonl", Mistakes(gold=False, overwrite="variable", scored=1))
    assert [f.level for f in found] == ["error", "warning", "warning"]
    assert set(found[0].as_dict()) == {"code", "level", "count", "problem", "fix", "examples"}


def test_memtrace_check_lists_findings_and_fails_on_errors(tmp_path: Path) -> None:
    clean = tmp_path / "clean" / "diary.jsonl"
    run_diary(clean, Mistakes())
    broken = tmp_path / "broken" / "diary.jsonl"
    run_diary(broken, Mistakes(overwrite="variable", gold=False))
    runner = CliRunner()
    ok = runner.invoke(cli, ["check", str(clean)])
    assert ok.exit_code == 0, ok.output
    assert "1 traces checked, 1 without findings" in ok.output
    bad = runner.invoke(cli, ["check", str(broken)])
    assert bad.exit_code == 1
    assert "overwrite-lost-category" in bad.output and "fix: mutation(var, value)" in bad.output
    assert "1 problems at error level" in bad.output
    as_json = runner.invoke(cli, ["check", str(broken), "--json"])
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout)
    assert report["problems"] == {"error": 1, "warning": 1}
    assert [f["code"] for f in report["files"][0]["findings"]] == [
        "overwrite-lost-category",
        "no-gold-answer",
    ]


def test_load_reports_the_same_findings(tmp_path: Path) -> None:
    path = tmp_path / "diary.jsonl"
    run_diary(path, Mistakes(scored=0))
    result = CliRunner().invoke(cli, ["load", str(path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output  # loading is not refused: the graph is fine
    summary = json.loads(result.stdout)
    assert summary["problems"] == {"error": 1, "warning": 0}
    assert summary["files"][0]["findings"][0]["code"] == "unscored-cases"
    assert "unscored-cases" in result.stderr


def test_smartcomment_graphs_are_checked_too(shared_data: Path, tmp_path: Path) -> None:
    """A MemBase graph without its judge's scores: every case is unscored."""
    graph = json.loads((shared_data / "smartcomment" / "locomo_locomo-1.json").read_text())
    data = graph["data"]
    assert check_records(r for _, r in read_smartcomment_text(graph, tmp_path / "a.json")) == []
    scores = {n["full_node_id"] for n in data["nodes"] if n.get("class_name") == "judge_score"}
    data["nodes"] = [n for n in data["nodes"] if n["full_node_id"] not in scores]
    data["edges"] = [e for e in data["edges"] if e["target_full_node_id"] not in scores]
    found = check_records(r for _, r in read_smartcomment_text(graph, tmp_path / "b.json"))
    assert codes(found) == {"unscored-cases": "error"}
    assert found[0].count == 35


def read_smartcomment_text(graph: dict[str, Any], path: Path) -> Iterator[tuple[str, Any]]:
    path.write_text(json.dumps(graph))
    return iter(read_smartcomment(path))
