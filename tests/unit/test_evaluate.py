"""``evaluate.score`` on hand-built rows in the shape of ``eval_rows.cypher`` (no database)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from memtrace.attribution.evaluate import CHARS_PER_TOKEN, _run_note, score
from memtrace.cypher import get_query
from memtrace.taxonomy import ERROR_TYPES

COLUMNS = [*get_query("attribution/eval_rows").columns, "flat_tokens"]


def row(case_id: str, label: tuple[str, str, str], attributed: tuple[Any, ...]) -> dict[str, Any]:
    """label: (op, kind, type); attributed: (op, kind, type, calls, tokens in, out, seconds)."""
    label_op, label_kind, label_type = label
    attr_op, attr_kind, error_type, calls, tokens_in, tokens_out, seconds = attributed
    return {
        "trace_id": "t",
        "case_id": case_id,
        "answer_op": "answer",
        "label_op": label_op,
        "label_kind": label_kind,
        "label_type": label_type,
        "label_source": "injected",
        "attr_op": attr_op,
        "attr_kind": attr_kind,
        "error_type": error_type,
        "judge": "offline" if attr_op is not None else None,
        "llm_calls": calls,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "seconds": seconds,
        "error": None,
        "flat_tokens": 4000 / CHARS_PER_TOKEN,
    }


ROWS = pd.DataFrame(
    [
        # right op, right type
        row("c1", ("extract", "extraction", "ExtractionError"),
            ("extract", "extraction", "ExtractionError", 2, 100, 10, 0.5)),
        # wrong op of the same stage (deletion counts as update), wrong type
        row("c2", ("update", "update", "UpdateError"),
            ("delete", "deletion", "DeletionError", 4, 300, 30, 1.5)),
        # the answer op, correctly blamed: the answer-op baseline gets this one too
        row("c3", ("answer", "generation", "ResponseError"),
            ("answer", "generation", "ResponseError", 1, 50, 5, 0.25)),
        # not attributed at all
        row("c4", ("search", "retrieval", "RetrievalError"),
            (None, None, None, None, None, None, None)),
    ],
    columns=COLUMNS,
)  # fmt: skip


def summary_of(method: str, scores_summary: pd.DataFrame) -> dict[str, Any]:
    rows = scores_summary[scores_summary["method"] == method].to_dict(orient="records")
    assert len(rows) == 1, method
    return {str(key): value for key, value in rows[0].items()}


def test_accuracy_cost_and_method_of_the_run() -> None:
    ours = summary_of("offline", score(ROWS).summary)
    assert ours["cases"] == 4 and ours["attributed"] == 3
    assert ours["op_accuracy"] == pytest.approx(2 / 4)
    assert ours["type_accuracy"] == pytest.approx(2 / 4)
    assert ours["stage_accuracy"] == pytest.approx(3 / 4)  # deletion is scored as update
    assert ours["llm_calls_median"] == pytest.approx(1.5)  # 2, 4, 1 and 0 for the missing one
    assert ours["tokens_per_case"] == pytest.approx((110 + 330 + 55 + 0) / 4)
    assert ours["seconds_per_case"] == pytest.approx((0.5 + 1.5 + 0.25) / 4)


def test_baselines_come_from_the_same_rows() -> None:
    summary = score(ROWS).summary
    answer = summary_of("baseline:answer-op", summary)
    assert answer["op_accuracy"] == pytest.approx(1 / 4)
    assert answer["type_accuracy"] == pytest.approx(1 / 4)
    assert answer["stage_accuracy"] == pytest.approx(1 / 4)
    whole = summary_of("baseline:whole-trace", summary)
    assert whole["tokens_per_case"] == pytest.approx(1000.0)
    assert whole["llm_calls_median"] == 1.0
    assert math.isnan(whole["op_accuracy"])  # never measured: one prompt, no attribution


def test_per_type_scores_and_confusion() -> None:
    scores = score(ROWS)
    by_type = scores.by_type.set_index("label_type")
    assert by_type.loc["UpdateError", "op_accuracy"] == 0.0
    assert by_type.loc["ExtractionError", "type_accuracy"] == 1.0
    assert set(by_type.index) == {
        "ExtractionError",
        "UpdateError",
        "ResponseError",
        "RetrievalError",
    }
    confusion = scores.confusion
    assert confusion.loc["UpdateError", "DeletionError"] == 1
    assert confusion.loc["RetrievalError", "(none)"] == 1
    assert int(confusion.to_numpy().sum()) == 4
    # rows follow the taxonomy's pipeline order, whatever the input order
    assert list(confusion.index) == [
        "ExtractionError", "UpdateError", "RetrievalError", "ResponseError"
    ]  # fmt: skip


def test_no_rows_scores_zero_without_dividing_by_zero() -> None:
    summary = score(ROWS.iloc[0:0]).summary
    ours = summary.iloc[0]
    assert ours["method"] == "none" and ours["cases"] == 0 and ours["op_accuracy"] == 0.0
    assert score(ROWS.iloc[0:0]).confusion.empty


def test_errored_cases_are_their_own_column_and_their_cost_counts() -> None:
    errored = row("c5", ("search", "retrieval", "RetrievalError"),
                  (None, None, None, 3, 900, 0, 60.0))  # fmt: skip
    errored.update(judge="llm", error="timed out")
    rows = pd.DataFrame([*ROWS.to_dict(orient="records")[:3], errored], columns=COLUMNS)
    rows.loc[:2, "judge"] = "llm"
    ours = summary_of("llm", score(rows).summary)
    assert (ours["cases"], ours["attributed"], ours["errored"]) == (4, 3, 1)
    assert ours["op_accuracy"] == pytest.approx(2 / 4)  # an errored case is a wrong one
    assert ours["tokens_per_case"] == pytest.approx((110 + 330 + 55 + 900) / 4)


ANSWER_OP_NOTE = "always blames the answer op as ResponseError"
WHOLE_TRACE_NOTE = "cost of one whole-trace prompt; accuracy not measured (no call made)"
NAN = float("nan")


def summary_frame(*rows: tuple[Any, ...]) -> pd.DataFrame:
    names = ["method", "cases", "attributed", "errored", "op_accuracy", "type_accuracy"]
    names += ["stage_accuracy", "llm_calls_median", "tokens_per_case", "seconds_per_case", "note"]
    return pd.DataFrame([dict(zip(names, values, strict=True)) for values in rows])


def test_the_whole_summary_names_every_column_and_value() -> None:
    expected = summary_frame(
        ("offline", 4, 3, 0, 0.5, 0.5, 0.75, 1.5, 123.75, 0.5625,
         "1 not attributed in this run or blamed no operation"),
        ("baseline:answer-op", 4, 4, 0, 0.25, 0.25, 0.25, 0.0, 0.0, 0.0, ANSWER_OP_NOTE),
        ("baseline:whole-trace", 4, 0, 0, NAN, NAN, NAN, 1.0, 1000.0, NAN, WHOLE_TRACE_NOTE),
    )  # fmt: skip
    pd.testing.assert_frame_equal(score(ROWS).summary, expected)


def test_no_rows_is_zero_everywhere_a_mean_would_divide_by_zero() -> None:
    expected = summary_frame(
        ("none", 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, ""),
        ("baseline:answer-op", 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, ANSWER_OP_NOTE),
        ("baseline:whole-trace", 0, 0, 0, NAN, NAN, NAN, 1.0, 0.0, NAN, WHOLE_TRACE_NOTE),
    )  # fmt: skip
    pd.testing.assert_frame_equal(score(ROWS.iloc[0:0]).summary, expected, check_dtype=False)


def test_a_case_without_a_run_costs_no_call() -> None:
    """One case attributed (3 calls), two not reached: the median case made no call."""
    rows = ROWS.iloc[[3, 3, 0]].reset_index(drop=True)
    rows.loc[2, "llm_calls"] = 3
    ours = score(rows).summary.iloc[0]
    assert (ours["method"], ours["llm_calls_median"]) == ("offline", 0.0)


def test_the_run_note_says_how_many_failed_and_how_many_were_not_attributed() -> None:
    errored = row("c5", ("search", "retrieval", "RetrievalError"),
                  (None, None, None, 3, 900, 0, 60.0))  # fmt: skip
    errored.update(error="timed out")
    rows = pd.DataFrame([*ROWS.to_dict(orient="records"), errored], columns=COLUMNS)
    assert score(rows).summary.iloc[0]["note"] == (
        "1 failed (see `memtrace attribute` output); "
        "1 not attributed in this run or blamed no operation"
    )
    only_failed = rows.drop(index=3)
    assert score(only_failed).summary.iloc[0]["note"] == (
        "1 failed (see `memtrace attribute` output)"
    )
    assert score(only_failed.drop(index=4)).summary.iloc[0]["note"] == ""
    # rows read before runs recorded failures have no error column: none failed
    assert _run_note(ROWS.drop(columns="error")) == (
        "1 not attributed in this run or blamed no operation"
    )


def test_the_confusion_has_every_type_as_a_column_and_none_only_when_some_case_has_none() -> None:
    attributed = score(ROWS.iloc[0:3])
    assert list(attributed.confusion.columns) == list(ERROR_TYPES)
    assert list(score(ROWS).confusion.columns) == [*ERROR_TYPES, "(none)"]
    cases = attributed.by_type.set_index("label_type")["cases"]
    assert cases.to_dict() == {"ExtractionError": 1, "ResponseError": 1, "UpdateError": 1}
