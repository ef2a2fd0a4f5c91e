"""Everything a report shows, read once through memtrace.patterns (the only I/O of the report)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from memtrace import patterns
from memtrace.db import Database
from memtrace.errors import MemtraceError
from memtrace.optimize.store import LineageStore
from memtrace.patterns import breakdowns
from memtrace.patterns.reader import PatternReader

EXAMPLES_PER_CLASS = 3


@dataclass(frozen=True)
class ReportData:
    run_id: str
    summary: pd.DataFrame
    classes: pd.DataFrame
    funnel: pd.DataFrame
    categories: pd.DataFrame
    sessions: pd.DataFrame
    ages: pd.DataFrame
    failed: pd.DataFrame
    examples: pd.DataFrame  # case_details rows of each shown class's example cases
    compare_run: str | None = None
    comparison: pd.DataFrame = field(default_factory=pd.DataFrame)
    browser_url: str | None = None  # Neo4j Browser, for "open this case" links
    optimization_run: str | None = None  # an optimization run: the before/after section
    optimization: dict[str, object] = field(default_factory=dict)  # its properties
    lineage: pd.DataFrame = field(default_factory=pd.DataFrame)  # its candidates' versions
    headroom: pd.DataFrame = field(default_factory=pd.DataFrame)  # stored what-if, per class
    what_if: dict[str, object] | None = None  # its run-level figures (joint headroom, replays)


def _example_refs(classes: pd.DataFrame) -> list[tuple[str, str]]:
    """(trace_id, case_id) of up to EXAMPLES_PER_CLASS cases of each class."""
    refs = {
        (trace_id, case_id)
        for row in classes.to_dict(orient="records")
        for trace_id, case_id in row["case_refs"][:EXAMPLES_PER_CLASS]
    }
    return sorted(refs)


def collect(
    db: Database,
    run_id: str,
    *,
    max_classes: int = 10,
    compare_run: str | None = None,
    browser_url: str | None = None,
    optimization_run: str | None = None,
) -> ReportData:
    """Read the run's patterns; ``max_classes`` classes get a section with example cases;
    ``optimization_run`` adds what an optimization run changed and what it gained."""
    patterns.require_run(db, run_id)
    classes = patterns.failure_classes(db, run_id)
    shown = classes.head(max_classes)
    examples = PatternReader(db).case_details(run_id, _example_refs(shown))
    reader = PatternReader(db)
    positions = reader.evidence_position(run_id, None)  # read once, broken down twice
    comparison = pd.DataFrame()
    if compare_run is not None:
        comparison = patterns.compare_runs(db, compare_run, run_id)
    optimization: dict[str, object] = {}
    lineage = pd.DataFrame()
    if optimization_run is not None:
        store = LineageStore(db)
        found = store.run(optimization_run)
        if found is None:
            raise MemtraceError(f"no optimization run {optimization_run!r} in the database")
        optimization, lineage = found, store.lineage(optimization_run)
    return ReportData(
        run_id=run_id,
        summary=patterns.run_summary(db, run_id),
        classes=classes,
        funnel=patterns.evidence_funnel(db, run_id),
        categories=patterns.by_category(db, run_id),
        sessions=breakdowns.by_session(positions),
        ages=breakdowns.by_age(positions),
        failed=patterns.failed_attributions(db, run_id),
        examples=examples,
        compare_run=compare_run,
        comparison=comparison,
        browser_url=browser_url,
        optimization_run=optimization_run,
        optimization=optimization,
        lineage=lineage,
        headroom=patterns.headroom(db, run_id),
        what_if=patterns.what_if_summary(db, run_id),
    )
