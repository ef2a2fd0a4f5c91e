"""Make a report: read the patterns, draw the charts, optionally ask for an analysis, write."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from memtrace.db import Database
from memtrace.errors import LLMError
from memtrace.report import charts, data, render
from memtrace.report.document import NarrativeText, build
from memtrace.report.narrative import WrittenNarrative

# (summary, classes) -> the analysis; the CLI passes one bound to the configured LLM
Narrator = Callable[[pd.DataFrame, pd.DataFrame], WrittenNarrative]


@dataclass(frozen=True)
class ReportResult:
    files: list[Path]
    classes: int
    narrative_error: str | None = None


def make_report(
    db: Database,
    run_id: str,
    out: Path,
    *,
    compare_run: str | None = None,
    max_classes: int = 10,
    browser_url: str | None = None,
    narrator: Narrator | None = None,
    model: str = "",
) -> ReportResult:
    """Write report.html (self-contained), report.md and charts/*.png into ``out``.

    A failing narrator does not cost the report: it is written with the error in place of the
    analysis, and the result carries the error so that the caller can exit non-zero.
    """
    collected = data.collect(
        db, run_id, max_classes=max_classes, compare_run=compare_run, browser_url=browser_url
    )
    narrative = None
    if narrator is not None:
        try:
            written = narrator(collected.summary, collected.classes)
            narrative = NarrativeText(written.summary, written.findings, model)
        except LLMError as exc:
            narrative = NarrativeText("", [], model, error=str(exc))
    document = build(collected, charts.charts(collected), narrative, max_classes=max_classes)
    files = render.write(document, out)
    return ReportResult(
        files, len(collected.classes), narrative.error if narrative is not None else None
    )
