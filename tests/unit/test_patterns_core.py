"""The pure parts of memtrace.patterns: shaping, breakdowns, comparison, export."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from memtrace.patterns import breakdowns, export
from memtrace.patterns.classes import CLASS_COLUMNS, LIST_COLUMNS, TEXT_COLUMNS, shape_classes


def _row(**overrides: object) -> dict[str, object]:
    row: dict[str, object] = {
        "system": "mem0",
        "op_name": "memory_system.delete_memory",
        "op_kind": "deletion",
        "error_type": "DeletionError",
        "inputs": ["top_k@2", "delete-prompt@1", "top_k@2"],
        "prompts": ["delete-prompt"],
        "parameters": ["top_k", "top_k"],
        "cases": 3,
        "failures": 6,
        "blamed_operations": 2,
        "executions": 8,
        "share_of_failures": 0.5,
        "share_of_executions": 0.25,
        "median_confidence": None,
        "example_cases": ["c", "b", "a"],
        "case_refs": [["t1", "c"], ["t2", "b"], ["t1", "a"]],
    }
    return row | overrides


def test_shape_classes_types_and_order() -> None:
    rows = pd.DataFrame([_row(), _row(op_name="x", cases=5, inputs=[], prompts=[], parameters=[])])
    classes = shape_classes(rows)
    assert list(classes.columns) == list(CLASS_COLUMNS)
    assert list(classes["cases"]) == [5, 3]
    deletion = classes.iloc[1]
    assert deletion["stage"] == "deletion"  # its own stage, next to its DeletionError
    assert deletion["inputs"] == ["delete-prompt@1", "top_k@2"]
    assert deletion["parameters"] == ["top_k"]
    assert deletion["case_ids"] == ["a", "b", "c"] and deletion["example_cases"] == ["a", "b", "c"]
    assert deletion["trace_ids"] == ["t1", "t2"]
    assert deletion["case_refs"] == [["t1", "a"], ["t2", "b"], ["t1", "c"]]
    assert bool(deletion["optimizable"]) and not bool(classes.iloc[0]["optimizable"])
    assert math.isnan(deletion["median_confidence"])


def test_shape_classes_of_nothing_has_the_columns() -> None:
    assert list(shape_classes(pd.DataFrame()).columns) == list(CLASS_COLUMNS)


@pytest.mark.parametrize(
    ("ago", "bucket"),
    [(0, "0-49"), (49, "0-49"), (50, "50-199"), (499, "200-499"), (900, "500+"), (7, "0-49")],
)
def test_age_bucket_labels(ago: int, bucket: str) -> None:
    assert breakdowns.age_bucket(ago, (0, 50, 200, 500)) == bucket


def test_a_one_age_bucket_is_named_by_its_age() -> None:
    assert [breakdowns.age_bucket(a, (0, 1, 2)) for a in (0, 1, 5)] == ["0", "1", "2+"]


def _positions(ages: dict[str, list[int]]) -> pd.DataFrame:
    """Evidence rows as evidence_position.cypher returns them: one case per evidence message."""
    return pd.DataFrame(
        [
            {
                "system": system,
                "trace_id": "t",
                "case_id": f"{system}-{i}",
                "error_type": "ExtractionError",
                "evidence_id": f"m{i}",
                "session_index": 1,
                "messages_ago": age,
            }
            for system, values in ages.items()
            for i, age in enumerate(values)
        ]
    )


def _buckets_in_order(table: pd.DataFrame, system: str) -> list[str]:
    return list(dict.fromkeys(table[table["system"] == system]["age"]))


def test_a_short_conversation_gets_several_buckets() -> None:
    # the demo's shape: every age below 50, where the fixed 0-49 bucket held them all
    table = breakdowns.by_age(_positions({"mem0": [0, 1, 2, 3, 5, 8, 12, 17, 25, 31, 40, 47]}))
    buckets = _buckets_in_order(table, "mem0")
    assert 2 <= len(buckets) <= breakdowns.MAX_AGE_BUCKETS
    assert buckets[0].startswith("0") and buckets[-1].endswith("+")
    assert int(table["evidence"].sum()) == 12  # every message counted once


def test_a_long_conversation_gets_readable_bounds_shared_by_every_system() -> None:
    rng = np.random.default_rng(7)
    ages = {"mem0": rng.integers(0, 900, 200).tolist(), "rag": rng.integers(0, 60, 50).tolist()}
    bins = breakdowns.age_bins(_positions(ages)["messages_ago"])
    assert bins[0] == 0 and 2 <= len(bins) <= breakdowns.MAX_AGE_BUCKETS
    assert all(int(str(b)[0]) in (1, 2, 5) and set(str(b)[1:]) <= {"0"} for b in bins[1:])
    table = breakdowns.by_age(_positions(ages))
    labels = [breakdowns.age_bucket(b, bins) for b in bins]
    for system in ("mem0", "rag"):
        shown = _buckets_in_order(table, system)
        assert shown == [label for label in labels if label in shown]  # youngest first
        assert set(shown) <= set(labels)  # one set of buckets for the run
    assert int(table["evidence"].sum()) == 250


def test_evenly_spread_ages_round_to_the_nearest_readable_bound() -> None:
    # quantiles 120, 240, 359, 479: rounded down (100, 200) the 200+ bucket held 2/3 of the ages
    assert breakdowns.age_bins(pd.Series(range(600))) == (0, 100, 200, 500)


def test_close_ages_still_split() -> None:
    assert breakdowns.age_bins(pd.Series([3, 4, 4, 3])) == (0, 4)
    assert breakdowns.age_bins(pd.Series([0] * 30 + [1, 2, 3])) == (0, 1)
    assert breakdowns.age_bins(pd.Series([31, 33, 36, 38, 44])) == (0, 40)
    assert breakdowns.age_bins(pd.Series([31, 32, 33, 35])) == (0, 32)


def test_one_distinct_age_is_one_bucket() -> None:
    table = breakdowns.by_age(_positions({"mem0": [4, 4, 4]}))
    assert list(table["age"]) == ["0+"] and int(table["evidence"].sum()) == 3


def test_ages_of_nothing() -> None:
    table = breakdowns.by_age(_positions({}))
    assert table.empty and {"system", "age", "cases", "evidence"} <= set(table.columns)
    assert breakdowns.age_bins(pd.Series([], dtype=int)) == (0,)


def _classes(*specs: tuple[str, str, list[str], int]) -> pd.DataFrame:
    return shape_classes(
        pd.DataFrame(
            [
                _row(op_name=op, error_type=etype, inputs=inputs, cases=cases, prompts=["p"])
                for op, etype, inputs, cases in specs
            ]
        )
    )


def test_compare_matches_classes_across_input_versions() -> None:
    a = _classes(("ex", "ExtractionError", ["p@1"], 4), ("up", "UpdateError", ["p@1"], 2))
    b = _classes(("ex", "ExtractionError", ["p@2"], 1), ("qa", "ResponseError", ["p@1"], 3))
    table = breakdowns.compare_classes(a, b)
    got = {(r.status, r.op_name): (r.cases_a, r.cases_b, r.change) for r in table.itertuples()}
    assert got == {
        ("appeared", "qa"): (0, 3, 3),
        ("shrank", "ex"): (4, 1, -3),
        ("vanished", "up"): (2, 0, -2),
    }
    shrank = table[table["status"] == "shrank"].iloc[0]
    assert (shrank["inputs_a"], shrank["inputs_b"]) == (["p@1"], ["p@2"])


def test_compare_of_empty_runs() -> None:
    empty = shape_classes(pd.DataFrame())
    assert breakdowns.compare_classes(empty, empty).empty


def test_funnel_shares() -> None:
    rows = pd.DataFrame(
        [
            {
                "system": "rag",
                "cases": 2,
                "needed": 4,
                "extracted": 3,
                "survived": 2,
                "retrieved": 1,
                "in_context": 0,
                "unknown": 1,
            }
        ]
    )
    funnel = breakdowns.funnel(rows)
    assert list(funnel["stage"]) == [*breakdowns.FUNNEL_STAGES, "unknown"]
    assert list(funnel["share"])[:5] == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert list(funnel["evidence"])[5] == 1 and pd.isna(funnel["share"].iloc[5])


def test_json_is_strict_and_csv_round_trips() -> None:
    classes = shape_classes(pd.DataFrame([_row(), _row(op_name="y", median_confidence=0.4)]))
    text = export.to_json(classes)
    parsed = json.loads(text, parse_constant=pytest.fail)
    assert [row["median_confidence"] for row in parsed] == [None, 0.4]  # NaN -> null
    back = export.from_csv(export.to_csv(classes), LIST_COLUMNS, TEXT_COLUMNS)
    assert back["inputs"].tolist() == classes["inputs"].tolist()
    assert back["cases"].tolist() == classes["cases"].tolist()
    assert back["median_confidence"].isna().tolist() == [True, False]


def test_timestamps_for_people() -> None:
    from memtrace.patterns.export import for_people

    assert for_people("2026-12-01T18:51:07.123456789Z") == "2026-12-01 18:51 UTC"
    assert for_people("2026-12-01T19:51:07+01:00") == "2026-12-01 18:51 UTC"
    assert for_people(1_764_615_067_000_000_000) == "2025-12-01 18:51 UTC"  # nanoseconds
    assert for_people(None) == "-" and for_people("soon") == "soon"
