"""Property-based fuzzing of both loaders (offline, validation only; the writes are fuzzed in
tests/integration/test_loader_fuzz_db.py): every input either loads with exactly the expected
counts or fails with an InputError at the expected place that names the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from trace_fuzz import (
    COUNTED,
    FuzzTrace,
    fuzz_settings,
    mutated_graphs,
    mutated_traces,
    valid_graphs,
    valid_traces,
)

from memtrace.errors import InputError
from memtrace.loaders.load import LoadOptions, load_paths

# FUZZ_EXAMPLES raises the count for a longer run (docs/reliability.md records one).
FUZZ = fuzz_settings("FUZZ_EXAMPLES", 25)


def check(fuzz: FuzzTrace, path: Path) -> None:
    try:
        summary = load_paths(None, [str(path)], LoadOptions(dry_run=True))
    except InputError as exc:
        expected = fuzz.expected
        assert expected.counts is None, f"{fuzz.note}: a valid trace was refused: {exc}"
        assert (exc.path, exc.location) == (str(path), expected.location), (fuzz.note, str(exc))
        assert expected.words in exc.problem, (fuzz.note, str(exc))
        return
    assert fuzz.expected.counts is not None, f"{fuzz.note}: loaded, expected {fuzz.expected}"
    result = summary.files[0]
    assert {key: getattr(result, key) for key in COUNTED} == fuzz.expected.counts, fuzz.note


@FUZZ
@given(valid_traces())
def test_valid_but_odd_native_traces_load_with_exact_counts(tmp_path: Path, fuzz: Any) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(fuzz.text(), encoding="utf-8")
    check(fuzz, path)


@FUZZ
@given(mutated_traces())
def test_mutated_native_traces_load_exactly_or_name_the_mistake(tmp_path: Path, fuzz: Any) -> None:
    path = tmp_path / "mutated.jsonl"
    path.write_text(fuzz.text(), encoding="utf-8", errors="surrogatepass")
    check(fuzz, path)


def check_graph(fuzz: Any, path: Path) -> None:
    try:
        summary = load_paths(None, [str(path)], LoadOptions(dry_run=True, format="smartcomment"))
    except InputError as exc:
        expected = fuzz.expected
        assert expected.counts is None, f"{fuzz.note}: a valid graph was refused: {exc}"
        assert (exc.path, exc.location) == (str(path), expected.location), (fuzz.note, str(exc))
        assert expected.words in exc.problem, (fuzz.note, str(exc))
        return
    assert fuzz.expected.counts is not None, f"{fuzz.note}: loaded, expected {fuzz.expected}"
    result = summary.files[0]
    assert {key: getattr(result, key) for key in COUNTED} == fuzz.expected.counts, fuzz.note


@FUZZ
@given(st.one_of(valid_graphs(), mutated_graphs()))
def test_smartcomment_graphs_load_exactly_or_name_the_mistake(tmp_path: Path, fuzz: Any) -> None:
    path = tmp_path / "graph.json"
    path.write_text(fuzz.text(), encoding="utf-8")
    check_graph(fuzz, path)
