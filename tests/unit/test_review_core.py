"""The review package's pure parts: kappa, agreement, queues, annotation parsing, the SVG and the
bind check; and that those modules import no I/O (no database needed)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_architecture import imports_of

from memtrace.attribution import calibration
from memtrace.attribution.model import OperationView
from memtrace.errors import ConfigError, InputError
from memtrace.review.agreement import cohen_kappa, judge_agreement, reviewer_agreement
from memtrace.review.annotations import parse_annotations, problems
from memtrace.review.model import HumanLabel, OtherBlame, QueueCase
from memtrace.review.picture import case_svg, middle_cut
from memtrace.review.queues import build_queues, next_case
from memtrace.serving import check_host
from memtrace.taxonomy import type_fits_kind

PACKAGE = Path(__file__).resolve().parents[2] / "memtrace" / "review"
PURE = ("model", "queues", "agreement", "annotations", "picture")


def test_kappa_matches_the_textbook_example() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o 0.7, p_e 0.5, kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(["x", "y"], ["x", "y"]) == 1.0
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)
    assert math.isnan(cohen_kappa(["x", "x"], ["x", "x"]))  # chance agreement is certain
    with pytest.raises(ValueError):
        cohen_kappa([], [])


def _label(reviewer: str, case_id: str, op: str, kind: str, runs: dict[str, str]) -> HumanLabel:
    attributions = tuple(
        {"run_id": run, "judge": "offline", "op_id": blamed, "op_name": None,
         "error_type": "ExtractionError"}
        for run, blamed in runs.items()
    )  # fmt: skip
    return HumanLabel("t", case_id, f"query-{case_id}", reviewer, None, op, None, kind, None, (),
                      attributions)  # fmt: skip


def test_judge_and_reviewer_agreement() -> None:
    labels = [
        _label("alice", "q1", "ex1", "ExtractionError", {"r1": "ex1"}),
        _label("bob", "q1", "ex1", "ExtractionError", {"r1": "ex1"}),
        _label("alice", "q2", "s2", "RetrievalError", {"r1": "ex2"}),
        _label("bob", "q2", "ex2", "ExtractionError", {"r1": "ex2"}),
        _label("carol", "q9", "s9", "RetrievalError", {}),  # shares no case: no pair
    ]
    judges = judge_agreement(labels).set_index("label_type")
    assert judges.loc["(all)", "labels"] == 4
    assert judges.loc["(all)", "op_agreement"] == pytest.approx(0.75)
    assert judges.loc["RetrievalError", "type_agreement"] == 0.0
    pairs = reviewer_agreement(labels)
    assert list(zip(pairs["reviewer_a"], pairs["reviewer_b"], strict=True)) == [("alice", "bob")]
    pair = pairs.iloc[0]
    assert (pair["shared_cases"], pair["op_agreement"], pair["type_agreement"]) == (2, 0.5, 0.5)
    # types: alice (E, R), bob (E, E): p_o 0.5, p_e 0.5 * 1.0 -> kappa 0
    assert pair["type_kappa"] == pytest.approx(0.0)


def _case(case_id: str, op: str | None, confidence: float | None, **extra: object) -> QueueCase:
    fields: dict[str, object] = {
        "trace_id": "t", "case_id": case_id, "system": "mem0", "question": "?", "op_id": op,
        "op_name": "extract", "error_type": "ExtractionError", "confidence": confidence,
        "judge": "offline", "error": None, "other_blames": (), "my_decision": None,
        "reviewers": 0,
    }  # fmt: skip
    return QueueCase(**(fields | extra))  # type: ignore[arg-type]


def test_queues_and_the_next_case() -> None:
    cases = [
        _case("q1", "ex1", 0.9, my_decision="confirm"),
        _case("q2", "ex1", 0.5, other_blames=(OtherBlame("r2", "hybrid", "s2"),)),
        _case("q3", "up1", None, other_blames=(OtherBlame("r2", "hybrid", "up1"),)),
        _case("q4", None, None, my_decision="skip"),
    ]
    classes = [("mem0: extract", [("t", "q1"), ("t", "q2")]), ("mem0: update", [("t", "q3")])]
    queues = {q.key: q for q in build_queues(cases, classes)}
    assert [ref[1] for ref in queues["all"].cases] == ["q1", "q2", "q3", "q4"]
    assert queues["all"].done == 1  # q1; a skip is not done
    assert [ref[1] for ref in queues["low-confidence"].cases] == ["q2", "q3"]
    assert [ref[1] for ref in queues["disagree"].cases] == ["q2"]  # q3: the other run agrees
    assert (len(queues["class-1"].cases), queues["class-1"].done) == (2, 1)
    assert [ref[1] for ref in queues["no-blame"].cases] == ["q4"]
    assert next_case(queues["class-1"], cases, ("t", "q2")) is None  # q1 is decided
    assert next_case(queues["all"], cases, ("t", "q3")) == ("t", "q4")
    assert next_case(queues["all"], cases, ("t", "q4")) == ("t", "q2")  # wraps around, past q1
    assert "uncalibrated" not in queues  # every verdict is on a calibrated system


def test_low_confidence_means_the_same_on_a_system_memtrace_did_not_write() -> None:
    cases = [
        _case("q1", "ex1", 0.02, system="pamem"),  # a prior from the reference systems
        _case("q2", "ex1", 0.02),  # mem0: calibrated, likely wrong
        _case("q3", "ex1", 1.0, system="pamem", judge="replay"),  # observed
        _case("q4", "ex1", 0.3, system="pamem", judge="llm"),  # the model's own figure
    ]
    queues = {q.key: q for q in build_queues(cases, [])}
    assert [ref[1] for ref in queues["low-confidence"].cases] == ["q2", "q4"]
    assert [ref[1] for ref in queues["uncalibrated"].cases] == ["q1"]
    assert queues["uncalibrated"].title == "confidence not calibrated on this system"


def test_a_confidence_says_what_it_is_calibrated_on() -> None:
    assert calibration.scale("offline", "mem0") == "calibrated"
    assert calibration.scale("hybrid", "pamem") == "prior"
    assert calibration.scale("replay", "pamem") == "observed"
    assert calibration.scale("llm", "mem0") == "model"
    said = calibration.describe("offline", "pamem")
    assert said.startswith("not calibrated on pamem") and "bench natural" in said
    assert "reference systems' natural failures" in calibration.describe("offline", "rag")


def test_a_confidence_of_an_unknown_system_names_the_doc_and_a_models_figure_is_its_own() -> None:
    assert calibration.describe("offline", None) == (
        "not calibrated on this system: a prior from memtrace's reference systems (measured on "
        "their memories and flow, not yours); measure it on yours with `memtrace bench natural "
        "--replayer` and `memtrace eval --labels replay` (docs/attribution.md, Reading confidence)"
    )
    assert calibration.describe("llm", "rag") == "the LLM judge's own figure, not calibrated"


MANUAL = (
    '{"saved_at": "2025-01-02 03:04:05", "graph_id": "g", "query_id": "q", '
    '"manual_error_attribution": {"op_id": "op", "error_type": "RetrievalError", '
    '"edge_id": "e1", "reason": "r"}}'
)


def test_annotations_parse_both_shapes_and_say_what_is_wrong() -> None:
    exported = (
        '{"graph_id": "g", "query_id": "q", "final_op_id": null, "final_error_type": '
        '"AnnotationError", "reviewer": "bob", "saved_at": "2025-01-02T03:04:05Z"}'
    )
    manual, export = parse_annotations("a.jsonl", [MANUAL, "", exported])
    assert (manual.op_id, manual.edge_id, manual.saved_at) == ("op", "e1", "2025-01-02T03:04:05")
    assert (export.line, export.op_id, export.reviewer) == (3, None, "bob")
    bad = {
        "{": "line 1: not JSON",
        "[1]": "expected a JSON object",
        MANUAL.replace("RetrievalError", "RetrievalErr"): "error_type",
        MANUAL.replace('"op"', "null"): "RetrievalError needs an op_id",
        MANUAL.replace("2025-01-02 03:04:05", "yesterday"): "not an ISO 8601",
        '{"graph_id": "g"}': "query_id",
    }
    for line, message in bad.items():
        with pytest.raises(InputError, match=message):
            parse_annotations("a.jsonl", [line])
    unresolved = {"trace_id": "g", "case_id": None, "op_id": None, "edge_found": False,
                  "answer_op": None}  # fmt: skip
    found = problems("a.jsonl", [manual], [unresolved])
    assert [p.split(": ", 1)[1][:20] for p in found] == [
        "no case of trace 'g'", "no operation 'op' in", "no edge 'e1' in trac",
    ]  # fmt: skip


def test_the_picture_escapes_names_marks_the_blamed_op_and_keeps_labels_distinct() -> None:
    units = tuple(
        {"id": f"memory-unit-0000{n}@1", "name": f"memory-unit-0000{n}", "version": 1, "value": ""}
        for n in range(6)
    )
    ops = [
        OperationView("ex1", "memory_system.extract<script>", "extraction", 3,
                      ({"id": "m1@1", "name": "m1", "version": 1, "value": "x"},),
                      ({"id": "f1@2", "name": "f1", "version": 2, "value": "y"},), ()),
        OperationView("s1", "memory_system.search_vector_store", "retrieval", 7, units, (), ()),
        OperationView("qa1", "answer", "generation", 9,
                      ({"id": "f1@2", "name": "f1", "version": 2, "value": "y"},), (), ()),
    ]  # fmt: skip
    svg = case_svg(ops, blamed="ex1", answer="qa1")
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert svg.count('class="op blamed"') == 1 and svg.count('class="op answer"') == 1
    assert svg.count('class="edge"') == 2 + 5 + 1  # m1 -> ex1 -> f1; 4 units + "more"; f1 -> qa1
    assert "f1 v2 ← #3" in svg  # the answer read what op #3 wrote
    assert "#7 memory_system.search_vector_store" in svg  # the op name whole
    shown = [f"memory-unit-0000{n} v1" for n in range(4)]
    assert all(f">{label}<" in svg for label in shown) and "+ 2 more" in svg
    assert 'viewBox="0 0 1160 ' in svg and "width=" not in svg.split(">", 1)[0]


def test_a_long_label_is_cut_in_the_middle_and_types_that_contradict_a_kind() -> None:
    assert middle_cut("fact-extraction:D1:3:session-7", 15) == "fact-ex…ssion-7"
    assert type_fits_kind("UpdateError", "update") and type_fits_kind("DeletionError", "update")
    assert type_fits_kind("ExtractionError", "embedding")
    assert type_fits_kind("AnnotationError", "retrieval")
    assert type_fits_kind("RetrievalError", "other")
    assert not type_fits_kind("RetrievalError", "generation")
    assert not type_fits_kind("ResponseError", "extraction")


def test_only_loopback_binds_without_allow_remote() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert check_host(host, allow_remote=False) is None
    for host in ("0.0.0.0", "192.168.1.5", "example.org", "::"):
        with pytest.raises(ConfigError, match="--allow-remote"):
            check_host(host, allow_remote=False)
        assert "reachable from other machines" in str(check_host(host, allow_remote=True))


@pytest.mark.parametrize("name", PURE)
def test_the_pure_review_modules_import_no_io(name: str) -> None:
    source = (PACKAGE / f"{name}.py").read_text(encoding="utf-8")
    io = ("memtrace.db", "memtrace.cypher", "memtrace.review.store", "memtrace.settings",
          "neo4j", "starlette", "uvicorn")  # fmt: skip
    assert [i.target for i in imports_of(f"memtrace.review.{name}", source)
            if i.target.startswith(io)] == []  # fmt: skip
