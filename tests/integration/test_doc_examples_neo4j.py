"""The examples of README.md and docs/*.md marked `needs neo4j` run against the real Neo4j
(tests/doc_examples.py), after the file's offline examples, in order, in one folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_examples import DOCS, REPO, check_run, examples

from memtrace.admin import delete_trace
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.store import AttributionStore
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths

pytestmark = pytest.mark.integration
SMALL = REPO / "tests" / "data" / "native" / "small.jsonl"
NEEDING = [doc for doc in DOCS if any(e.mode == "neo4j" for e in examples(doc))]


@pytest.fixture
def attributed(db: Database, run_id: str) -> Iterator[str]:
    """A loaded trace with an attribution run, for examples that read the newest run."""
    load_paths(db, [str(SMALL)], LoadOptions(trace_id=run_id))
    run_attribution(AttributionStore(db), OfflineJudge(), Options(), trace_id=run_id, run_id=run_id)
    yield run_id
    delete_trace(db, run_id)
    db.run("MATCH (a:Attribution {run_id: $r}) DETACH DELETE a", r=run_id)


@pytest.mark.parametrize("doc", NEEDING, ids=lambda doc: str(doc.relative_to(REPO)))
def test_the_examples_that_need_neo4j_run(doc: Path, attributed: str, tmp_path: Path) -> None:
    for example in examples(doc):
        if example.mode != "not run":
            check_run(example, tmp_path)
