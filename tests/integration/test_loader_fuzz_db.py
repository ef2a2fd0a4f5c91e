"""Property-based fuzzing of the loader's write path on the real Neo4j (the offline fuzzing of
validation is tests/unit/test_loader_fuzz.py, with the same generators): a valid but odd trace
is written with exactly its counts, and written again over itself; a broken one is refused with
nothing half-written, and a complete copy already in the database is kept as it was.

Each example loads into Neo4j, so the number of examples is small (FUZZ_DB_EXAMPLES raises it).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from reload_checks import copies_left, duplicates, graph_of
from trace_fuzz import FuzzTrace, fuzz_settings, mutated_traces, valid_traces

from memtrace.admin import delete_trace
from memtrace.db import Database
from memtrace.errors import InputError
from memtrace.loaders.load import LoadOptions, load_paths

pytestmark = pytest.mark.integration
SMALL = Path(__file__).resolve().parent.parent / "data" / "native" / "small.jsonl"
FUZZ_DB = fuzz_settings("FUZZ_DB_EXAMPLES", 6)


def in_graph(db: Database, trace_id: str) -> dict[str, int]:
    """The loader's counts as the database holds them."""
    graph = graph_of(db, trace_id)
    nodes, relationships = graph["nodes"], graph["relationships"]
    failed = db.run("MATCH (c:Case {trace_id: $t, failed: true}) RETURN count(c) AS n", t=trace_id)
    return {
        "sessions": nodes.get("Session", 0),
        "operations": nodes.get("Operation", 0),
        "variables": nodes.get("Variable", 0),
        "edges": relationships.get("FLOWS_TO", 0),
        "cases": nodes.get("Case", 0),
        "failed_cases": int(failed[0]["n"]),
        "labels": relationships.get("LABELED", 0),
    }


def write(fuzz: FuzzTrace, path: Path) -> None:
    path.write_text(fuzz.text(), encoding="utf-8", errors="surrogatepass")


def load(db: Database, path: Path, trace_id: str) -> None:
    load_paths(db, [str(path)], LoadOptions(trace_id=trace_id))


def nothing_of(db: Database, trace_id: str) -> bool:
    return graph_of(db, trace_id) == {"nodes": {}, "relationships": {}, "state": []}


@FUZZ_DB
@given(valid_traces())
def test_a_valid_trace_is_written_exactly_and_again_over_itself(
    db: Database, tmp_path: Path, fuzz: Any
) -> None:
    trace_id = f"tfz{uuid.uuid4().hex[:10]}"
    path = tmp_path / "odd.jsonl"
    write(fuzz, path)
    try:
        for _ in range(2):  # a fresh write, then a re-load that swaps a new copy in
            load(db, path, trace_id)
            assert in_graph(db, trace_id) == fuzz.expected.counts, fuzz.note
            assert graph_of(db, trace_id)["state"] == ["complete"]
            assert duplicates(db, trace_id) == 0 and copies_left(db, trace_id) == {}
    finally:
        delete_trace(db, trace_id)


@FUZZ_DB
@given(mutated_traces())
def test_a_broken_trace_writes_nothing_and_keeps_the_old_copy(
    db: Database, tmp_path: Path, fuzz: Any
) -> None:
    trace_id = f"tfz{uuid.uuid4().hex[:10]}"
    path = tmp_path / "mutated.jsonl"
    write(fuzz, path)
    try:
        try:
            load(db, path, trace_id)
        except InputError as exc:
            assert fuzz.expected.counts is None, f"{fuzz.note}: refused: {exc}"
            assert fuzz.expected.words in exc.problem, (fuzz.note, str(exc))
            assert nothing_of(db, trace_id), fuzz.note  # nothing half-written
        else:
            assert fuzz.expected.counts is not None, f"{fuzz.note}: loaded, expected an error"
            assert in_graph(db, trace_id) == fuzz.expected.counts, fuzz.note
            return
        # the same trace id, complete from a valid file, then the broken file over it
        load(db, SMALL, trace_id)
        before = graph_of(db, trace_id)
        with pytest.raises(InputError):
            load(db, path, trace_id)
        assert graph_of(db, trace_id) == before, fuzz.note
        assert copies_left(db, trace_id) == {}, fuzz.note
    finally:
        delete_trace(db, trace_id)
