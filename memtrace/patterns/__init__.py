"""Systemic failure patterns: cross-case aggregates of one attribution run (and of two runs).

The Python API the CLI, the report, the optimizer and notebooks share. Every function takes a
connected :class:`memtrace.db.Database` and returns a pandas DataFrame; the queries are the files
of ``memtrace/cypher/patterns/`` (the same text works in Neo4j Browser), the shaping is pure
(``classes.py``, ``breakdowns.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from memtrace.db import Database
from memtrace.errors import MemtraceError
from memtrace.patterns import breakdowns
from memtrace.patterns.classes import CLASS_COLUMNS, class_key, shape_classes
from memtrace.patterns.export import records
from memtrace.patterns.headroom import HEADROOM_COLUMNS, ClassReplayer, WhatIf
from memtrace.patterns.headroom import what_if as compute_what_if
from memtrace.patterns.reader import PatternReader

__all__ = [
    "CLASS_COLUMNS",
    "HEADROOM_COLUMNS",
    "WarmUp",
    "WhatIf",
    "by_age",
    "by_category",
    "by_session",
    "compare_runs",
    "evidence_funnel",
    "failed_attributions",
    "failure_classes",
    "headroom",
    "latest_run",
    "run_summary",
    "runs",
    "warm_up",
    "what_if",
    "what_if_summary",
    "with_headroom",
]


def failure_classes(
    db: Database,
    run_id: str,
    *,
    system: str | None = None,
    error_type: str | None = None,
    min_count: int = 1,
) -> pd.DataFrame:
    """One row per failure class of attribution run ``run_id``, most cases first.

    A class is (system, blamed operation name and kind, error type, the prompt and parameter
    variable versions the blamed operation read). Columns: see ``CLASS_COLUMNS``; ``inputs`` are
    ``name@version`` strings, ``optimizable`` is false when the operation read none of them.
    ``share_of_failures`` divides by every case the run attributed in that system, including
    those whose attribution failed; ``share_of_executions`` is the share of that operation's
    executions (by name, in the run's traces of the system) that were blamed.
    """
    rows = PatternReader(db).failure_classes(run_id, system, error_type, min_count)
    return shape_classes(rows)


def what_if(
    db: Database,
    run_id: str,
    replayer: ClassReplayer,
    *,
    system: str | None = None,
    fix_alone: bool = True,
    joint_top: int = 3,
    progress: Callable[[str], None] | None = None,
) -> WhatIf:
    """Execute the what-if of every failure class of run ``run_id`` (``headroom.what_if``:
    repair, replay through ``replayer``, count) and store it on the run's ``:WhatIf`` node and
    its ``:FailureClass`` nodes, where ``headroom``, the report and Neo4j Browser read it."""
    require_run(db, run_id)
    reader = PatternReader(db)
    classes = failure_classes(db, run_id, system=system)
    blamed = reader.blamed_cases(run_id, system)
    result = compute_what_if(
        classes, blamed, replayer, fix_alone=fix_alone, joint_top=joint_top, progress=progress
    )
    stored = [
        {
            "key": row["key"],
            "props": {
                k: ([f"{t}: {n}" for t, n in sorted(v.items())] if k == "still_lost" else v)
                for k, v in row.items()
                if k != "key" and v is not None
            },
        }
        for row in records(result.classes)
    ]
    reader.write_headroom(run_id, result.run_properties(), stored)
    return result


def headroom(db: Database, run_id: str) -> pd.DataFrame:
    """The stored what-if of run ``run_id`` (``class_headroom.cypher``), largest net headroom
    first; empty when ``memtrace patterns --what-if`` has not run for it."""
    return PatternReader(db).class_headroom(run_id)


def what_if_summary(db: Database, run_id: str) -> dict[str, object] | None:
    """The stored run-level what-if (joint headroom, replays, refusals), None if never run."""
    return PatternReader(db).what_if_run(run_id)


def with_headroom(classes: pd.DataFrame, headroom_rows: pd.DataFrame) -> pd.DataFrame:
    """``failure_classes`` rows with the what-if columns joined on the class key (missing
    where a class was not measured)."""
    keyed = classes.assign(key=[class_key(row) for row in classes.to_dict("records")])
    extra = [c for c in HEADROOM_COLUMNS if c not in keyed.columns or c == "key"]
    if headroom_rows.empty:
        return keyed.assign(**{c: None for c in extra if c != "key"})
    measured = headroom_rows[[c for c in extra if c in headroom_rows.columns]]
    return keyed.merge(measured, on="key", how="left")


def failed_attributions(db: Database, run_id: str, *, system: str | None = None) -> pd.DataFrame:
    """Cases of the run whose attribution failed: system, trace_id, case_id, question, error."""
    return PatternReader(db).failed_attributions(run_id, system)


def run_summary(db: Database, run_id: str, *, system: str | None = None) -> pd.DataFrame:
    """Per system: traces, cases, failed, attributed, blamed, attribution_errors, labeled,
    op_matches, type_matches (agreement with LABELED edges where labels exist)."""
    return PatternReader(db).run_summary(run_id, system)


def by_category(db: Database, run_id: str, *, system: str | None = None) -> pd.DataFrame:
    """Cases per system, question category and error type, with the share of the category."""
    return breakdowns.by_category(PatternReader(db).by_category(run_id, system))


def by_session(db: Database, run_id: str, *, system: str | None = None) -> pd.DataFrame:
    """Cases and evidence messages per session index of the evidence and error type."""
    return breakdowns.by_session(PatternReader(db).evidence_position(run_id, system))


def by_age(db: Database, run_id: str, *, system: str | None = None) -> pd.DataFrame:
    """Cases and evidence messages per age of the evidence at question time (in messages)."""
    return breakdowns.by_age(PatternReader(db).evidence_position(run_id, system))


def evidence_funnel(db: Database, run_id: str, *, system: str | None = None) -> pd.DataFrame:
    """The evidence-loss funnel: system, stage (needed .. in_context), evidence, share."""
    return breakdowns.funnel(PatternReader(db).evidence_funnel(run_id, system))


def compare_runs(
    db: Database,
    run_a: str,
    run_b: str,
    *,
    system: str | None = None,
    error_type: str | None = None,
) -> pd.DataFrame:
    """Failure classes that appeared, grew, shrank or vanished from run A to run B."""
    for run_id in (run_a, run_b):
        require_run(db, run_id)
    return breakdowns.compare_classes(
        failure_classes(db, run_a, system=system, error_type=error_type),
        failure_classes(db, run_b, system=system, error_type=error_type),
    )


def runs(db: Database) -> pd.DataFrame:
    """Attribution runs, newest first: run_id, cases, attributed, started, finished."""
    return PatternReader(db).runs()


def latest_run(db: Database) -> str:
    """The newest attribution run's id."""
    found = runs(db)
    if found.empty:
        raise MemtraceError("no attribution runs yet: run `memtrace attribute` first")
    return str(found.iloc[0]["run_id"])


def require_run(db: Database, run_id: str) -> None:
    """Fail clearly on a run id that has no attributions (a typo would look like no failures)."""
    if PatternReader(db).run_exists(run_id):
        return
    found = runs(db)
    known = ", ".join(map(str, found["run_id"].head(5))) or "none"
    raise MemtraceError(f"no attribution run {run_id!r} (newest runs: {known})")


# A run id no attribution has: the warm-up plans the queries even when there is no run yet.
NO_RUN = "memtrace-warm-up-no-run"


@dataclass(frozen=True)
class WarmUp:
    """What ``warm_up`` ran: the run it read (None: the database has none) and its seconds."""

    run_id: str | None
    queries: int
    seconds: float


def warm_up(db: Database) -> WarmUp:
    """Run once the queries a default ``memtrace patterns`` runs (``runs``, ``run_exists``,
    ``failure_classes`` with no filter), for the newest run, and throw the rows away.

    A freshly started Neo4j plans each query the first time it sees its text and runs it with a
    cold page cache and JVM: seconds for ``failure_classes`` at 11,000 cases, against about
    0.2 s warm (docs/performance.md). ``memtrace neo4j start`` calls this so that the first
    ``memtrace patterns`` after a start costs what every later one does; the plans stay in the
    server's query cache, keyed by the query text and the parameters' types.
    """
    started = time.perf_counter()
    reader = PatternReader(db)
    found = reader.runs()
    run_id = None if found.empty else str(found.iloc[0]["run_id"])
    target = NO_RUN if run_id is None else run_id
    reader.run_exists(target)
    reader.failure_classes(target, None, None, 1)  # the CLI's types: no system, no error type
    return WarmUp(run_id, 3, time.perf_counter() - started)
