"""Systemic failure patterns: cross-case aggregates of one attribution run (and of two runs).

The Python API the CLI, the report, the optimizer and notebooks share. Every function takes a
connected :class:`memtrace.db.Database` and returns a pandas DataFrame.
"""

from __future__ import annotations

import pandas as pd

from memtrace.db import Database
from memtrace.patterns.classes import CLASS_COLUMNS, shape_classes
from memtrace.patterns.reader import PatternReader

__all__ = ["CLASS_COLUMNS", "failure_classes"]


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
