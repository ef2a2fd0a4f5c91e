"""Failure patterns against hand-computed counts on a seeded database (tests/patterns_seed.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from patterns_seed import Seed, seed, unseed

from memtrace import patterns
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.errors import MemtraceError
from memtrace.patterns import CLASS_COLUMNS, export, failure_classes
from memtrace.patterns.classes import LIST_COLUMNS, TEXT_COLUMNS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def seeded(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seed]:
    s = seed(db, tmp_path_factory.mktemp("seed"), f"p{uuid.uuid4().hex[:10]}")
    yield s
    unseed(db, s)


def test_failure_classes_match_hand_counts(db: Database, seeded: Seed) -> None:
    classes = failure_classes(db, seeded.run1)
    assert list(classes.columns) == list(CLASS_COLUMNS)
    rows = {(r.system, r.op_name, r.error_type): r for r in classes.itertuples()}
    assert len(rows) == 3
    extraction = rows[("mem0", "memory_system.extract_facts", "ExtractionError")]
    assert extraction.cases == 2
    assert extraction.failures == 4  # q1..q4: the failed attribution of q4 counts too
    assert extraction.share_of_failures == pytest.approx(0.5)
    assert (extraction.blamed_operations, extraction.executions) == (1, 2)
    assert extraction.share_of_executions == pytest.approx(0.5)
    assert extraction.median_confidence == pytest.approx(0.8)
    assert extraction.inputs == ["extract-prompt@1"]
    assert extraction.prompts == ["extract-prompt"] and extraction.parameters == []
    assert extraction.optimizable
    assert extraction.op_kind == "extraction" and extraction.stage == "extraction"
    assert extraction.case_ids == ["q1", "q2"] and extraction.example_cases == ["q1", "q2"]
    assert extraction.trace_ids == [seeded.mem0]

    update = rows[("mem0", "memory_system.update_memory_decision", "UpdateError")]
    assert update.cases == 1 and update.share_of_failures == pytest.approx(0.25)
    assert update.inputs == [] and not update.optimizable  # reads no prompt or parameter
    assert update.share_of_executions == pytest.approx(1.0)

    retrieval = rows[("rag", "memory_system.search_vector_store", "RetrievalError")]
    assert (retrieval.cases, retrieval.failures, retrieval.executions) == (2, 2, 2)
    assert retrieval.share_of_failures == pytest.approx(1.0)
    assert retrieval.share_of_executions == pytest.approx(1.0)
    assert retrieval.inputs == ["top_k@1"] and retrieval.parameters == ["top_k"]
    assert retrieval.stage == "retrieval" and retrieval.median_confidence == pytest.approx(0.7)
    # most cases first; ties by system then op name
    assert list(classes["cases"]) == [2, 2, 1]
    assert list(classes["system"]) == ["mem0", "rag", "mem0"]


def test_failure_class_filters(db: Database, seeded: Seed) -> None:
    only_rag = failure_classes(db, seeded.run1, system="rag")
    assert list(only_rag["system"]) == ["rag"]
    updates = failure_classes(db, seeded.run1, error_type="UpdateError")
    assert list(updates["op_name"]) == ["memory_system.update_memory_decision"]
    assert updates.loc[0, "share_of_failures"] == pytest.approx(0.25)  # still out of all four
    frequent = failure_classes(db, seeded.run1, min_count=2)
    assert sorted(frequent["cases"]) == [2, 2]
    assert failure_classes(db, "no-such-run").empty
    assert list(failure_classes(db, "no-such-run").columns) == list(CLASS_COLUMNS)


def test_failed_attributions_are_listed(db: Database, seeded: Seed) -> None:
    failed = patterns.failed_attributions(db, seeded.run1)
    assert failed[["system", "case_id", "error"]].values.tolist() == [
        ["mem0", "q4", "judge timed out"]
    ]
    assert failed.loc[0, "question"] == "Question q4?"


def test_run_summary_counts(db: Database, seeded: Seed) -> None:
    summary = {r["system"]: r for r in patterns.run_summary(db, seeded.run2).to_dict("records")}
    mem0, rag = summary["mem0"], summary["rag"]
    assert (mem0["traces"], mem0["cases"], mem0["failed"]) == (1, 4, 4)
    assert (mem0["attributed"], mem0["blamed"], mem0["attribution_errors"]) == (4, 4, 0)
    assert (rag["cases"], rag["attributed"], rag["blamed"], rag["attribution_errors"]) == (
        2,
        1,
        0,
        1,
    )


def test_by_category_counts_failed_attributions(db: Database, seeded: Seed) -> None:
    table = patterns.by_category(db, seeded.run1)
    got = {(r.system, r.category, r.error_type): r.cases for r in table.itertuples()}
    assert got == {
        ("mem0", "single-hop", "ExtractionError"): 2,
        ("mem0", "temporal", "UpdateError"): 1,
        ("mem0", "multi-hop", "attribution failed"): 1,
        ("rag", "open-domain", "RetrievalError"): 2,
    }


def test_evidence_position(db: Database, seeded: Seed) -> None:
    # every mem0 question cites m1 (q4 also m2), each rag question its one message; all of them
    # sit in the first session, one message or none before the question
    sessions = patterns.by_session(db, seeded.run1)
    assert set(sessions["session_index"]) == {1}
    got = {(r.system, r.error_type): (r.cases, r.evidence) for r in sessions.itertuples()}
    assert got == {
        ("mem0", "ExtractionError"): (2, 2),
        ("mem0", "UpdateError"): (1, 1),
        ("mem0", "attribution failed"): (1, 2),
        ("rag", "RetrievalError"): (2, 2),
    }
    ages = patterns.by_age(db, seeded.run1)
    assert list(ages["age"].unique()) == ["0", "1+"], ages  # 0 or 1 messages in between
    assert int(ages["evidence"].sum()) == 7


def test_evidence_funnel(db: Database, seeded: Seed) -> None:
    funnel = patterns.evidence_funnel(db, seeded.run2)
    mem0 = funnel[funnel["system"] == "mem0"].set_index("stage")["evidence"].to_dict()
    # q1 Extraction (1 message), q2 Response at the answer op (1), q3 Update (1), q4 Update (2)
    assert mem0 == {
        "needed": 5,
        "extracted": 4,
        "survived": 1,
        "retrieved": 1,
        "in_context": 1,
        "unknown": 0,
    }
    rag = funnel[funnel["system"] == "rag"].set_index("stage")["evidence"].to_dict()
    assert rag["needed"] == 0 and rag["unknown"] == 1  # its one case failed to attribute


def test_compare_runs_reports_each_change(db: Database, seeded: Seed) -> None:
    table = patterns.compare_runs(db, seeded.run1, seeded.run2)
    got = {
        (r.status, r.system, r.error_type): (r.cases_a, r.cases_b, r.change)
        for r in table.itertuples()
    }
    assert got == {
        ("appeared", "mem0", "ResponseError"): (0, 1, 1),
        ("grew", "mem0", "UpdateError"): (1, 2, 1),
        ("shrank", "mem0", "ExtractionError"): (2, 1, -1),
        ("vanished", "rag", "RetrievalError"): (2, 0, -2),
    }
    assert list(table["status"]) == ["appeared", "grew", "shrank", "vanished"]
    with pytest.raises(MemtraceError, match="no attribution run 'nope'"):
        patterns.compare_runs(db, seeded.run1, "nope")


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli, ["patterns", *args], catch_exceptions=False)


def test_cli_table_names_classes_and_failed_attributions(seeded: Seed) -> None:
    result = _cli("--run", seeded.run1)
    assert result.exit_code == 0, result.output
    assert "memory_system.extract_facts" in result.output
    assert "no optimizable input" in result.output  # the update class
    assert "1 case(s) whose attribution failed" in result.output


def test_cli_csv_and_json_round_trip(db: Database, seeded: Seed) -> None:
    expected = failure_classes(db, seeded.run1)
    as_json = _cli("--run", seeded.run1, "--format", "json")
    assert as_json.exit_code == 0
    parsed = json.loads(as_json.output, parse_constant=pytest.fail)  # no NaN / Infinity
    assert export.from_json(as_json.output).equals(expected)
    assert parsed[0]["inputs"] == expected.loc[0, "inputs"]
    as_csv = _cli("--run", seeded.run1, "--format", "csv")
    assert as_csv.exit_code == 0
    back = export.from_csv(as_csv.output, LIST_COLUMNS, TEXT_COLUMNS)
    assert back.equals(expected), (back.dtypes, expected.dtypes)


def test_cli_filters_views_and_compare(seeded: Seed) -> None:
    rag = json.loads(_cli("--run", seeded.run1, "--system", "rag", "--format", "json").output)
    assert [row["system"] for row in rag] == ["rag"]
    big = json.loads(_cli("--run", seeded.run1, "--min-count", "2", "--format", "json").output)
    assert sorted(row["cases"] for row in big) == [2, 2]
    typed = _cli("--run", seeded.run1, "--error-type", "UpdateError", "--format", "json")
    assert [row["error_type"] for row in json.loads(typed.output)] == ["UpdateError"]
    failed = json.loads(_cli("--run", seeded.run1, "--view", "failed", "--format", "json").output)
    assert [row["case_id"] for row in failed] == ["q4"]
    compared = _cli("--compare", seeded.run1, seeded.run2, "--format", "json")
    statuses = {(r["status"], r["error_type"]) for r in json.loads(compared.output)}
    assert statuses == {
        ("appeared", "ResponseError"),
        ("grew", "UpdateError"),
        ("shrank", "ExtractionError"),
        ("vanished", "RetrievalError"),
    }


def test_warm_up_runs_the_default_queries_for_the_newest_run(db: Database, seeded: Seed) -> None:
    warmed = patterns.warm_up(db)
    # the newest run of the shared database (another writer's, maybe): one that exists
    assert warmed.run_id in set(patterns.runs(db)["run_id"])
    assert warmed.queries == 3


def test_cli_unknown_run_is_an_error(seeded: Seed) -> None:
    result = CliRunner().invoke(cli, ["patterns", "--run", f"{seeded.scope}-missing"])
    assert result.exit_code == 1
    assert "no attribution run" in result.output
    bad = CliRunner().invoke(cli, ["patterns", "--view", "funnel", "--min-count", "3"])
    assert bad.exit_code == 2
