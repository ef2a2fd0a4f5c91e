"""The terminal fits the terminal: `memtrace patterns` tables rendered at 80, 100 and 160
columns keep every operation name whole, drop what says nothing, and lose no value."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from rich.console import Console

from memtrace.cli.patterns import VIEWS, WHAT_IF_COLUMNS, _table

OPS = (
    "memory_system.update_memory_decision",
    "memory_system.update_memory_decision",
    "memory_system.extract_facts_from_the_whole_conversation_window",
    "question-answering",
)
TYPES = ("DeletionError", "UpdateError", "ExtractionError", "ResponseError")


def _what_if() -> pd.DataFrame:
    rows = []
    for n, (op, error_type) in enumerate(zip(OPS, TYPES, strict=True)):
        rows.append(
            {
                "system": "mem0",
                "op_name": op,
                "error_type": error_type,
                "failure_mode": "",
                "inputs": ["delete_threshold@1", "memory-update-decision-prompt@1", "top_k@1"],
                "cases": 4 - n,
                "rescued": 4 - n,
                "also_rescued": 0,
                "broken": n % 2,
                "net": 4 - n - n % 2,
                "accuracy_delta": (4 - n) / 33,
                "fix_alone_share": 1.0,
                "replays": 5 + n,
                "why": f"{error_type} fixes would rescue {4 - n} of {4 - n} cases when repaired",
            }
        )
    return pd.DataFrame(rows)


def _render(frame: pd.DataFrame, columns: tuple[str, ...], width: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, legacy_windows=False)
    console.print(_table(frame, columns, "what fixing each class would buy", width))
    return out.getvalue().replace("\u00a0", " ")


@pytest.mark.parametrize("width", [80, 100, 160])
def test_what_if_keeps_op_names_whole_at_every_width(width: int) -> None:
    text = _render(_what_if(), WHAT_IF_COLUMNS, width)
    lines = text.splitlines()
    for op in set(OPS):
        assert any(op in line for line in lines), (op, text)
    assert "…" not in text and "..." not in text
    assert all(len(line) <= width for line in lines if "extract_facts_from" not in line)
    # constant columns are said once, the empty failure mode not at all
    assert "every row: system mem0" in text and "also rescued 0 ·" in text
    assert "failure mode" not in text
    for error_type in TYPES:  # the two update_memory_decision classes stay apart
        assert error_type in text
    assert "why: DeletionError fixes would rescue 4 of 4 cases" in " ".join(text.split())
    assert "+12.1%" in text and "+4" in text


def test_a_wide_terminal_gets_one_aligned_line_per_class() -> None:
    text = _render(_what_if(), WHAT_IF_COLUMNS, 160)
    header = next(line for line in text.splitlines() if line.startswith("op name"))
    assert "rescued" in header and "Δ accuracy" in header
    row = next(line for line in text.splitlines() if line.startswith("question-answering"))
    assert row.split() == ["question-answering", "ResponseError", "1", "1", "1", "+0", "+3.0%", "8"]


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_classes_view_shows_example_cases_whole(width: int) -> None:
    frame = _what_if().assign(
        stage="update", share_of_failures=0.27, share_of_executions=0.03, median_confidence=0.9
    )
    frame["example_cases"] = [["locomo-qa-1-5", "locomo-qa-1-6", "locomo-qa-2-10"]] * len(frame)
    text = _render(frame, VIEWS["classes"].columns, width)
    assert "locomo-qa-2-10" in text and "locomo…" not in text
    for op in set(OPS):
        assert op in text
