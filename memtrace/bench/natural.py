"""`memtrace bench natural`: a system's own failures (no planted fault), labelled by execution.

Per conversation: run the system traced, load the trace, take each failed case's Cypher
candidates and replay it with repairs (the replay judge); the executed label goes into the
trace's case record as a label of source ``replay`` and the trace is loaded again, so
``memtrace eval --labels replay`` scores any judge against it. The label is the paper's (the
earliest op whose repair, every later step ideal, the answer step included, puts the evidence
into the answer's context: ``counterfactual.py``); what the real answerer does with the repairs
is counted beside it (``by_type_with_your_answerer``). Cases with no single decisive op are kept
(counted, no label). ``natural_labels`` does the same for traces already written, of
a system of your own (its replayer: docs/replay.md), into copies of the files.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.attribution.store import AttributionStore
from memtrace.bench.labels import label
from memtrace.bench.make import MANIFEST, write_labels
from memtrace.db import Database
from memtrace.errors import ConfigError, NotReplayableError
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.replay.graph import TraceFiles
from memtrace.replay.hook import read_records
from memtrace.settings import Settings
from memtrace.systems.locomo import Conversation
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock


@dataclass(slots=True)
class NaturalReport:
    system: str
    conversations: list[int] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    cases: int = 0
    failed: int = 0
    labeled: Counter[str] = field(default_factory=Counter)  # error type -> cases
    no_single: int = 0  # no label: the repairs interact, or none restores the evidence
    unrestored: int = 0  # of those: no repair of the candidates restores the evidence
    answerer: Counter[str] = field(default_factory=Counter)  # your answerer's label -> cases
    errors: int = 0
    replays: list[int] = field(default_factory=list)  # per labelled case
    candidates: list[int] = field(default_factory=list)  # per labelled case (answer op included)
    replay_seconds: float = 0.0  # wall time of the replay judge
    replay_cpu_seconds: float = 0.0  # this process's CPU time for it (the machine may be busy)

    def as_dict(self) -> dict[str, Any]:
        replays = sorted(self.replays)

        def pct(q: float) -> float:
            return float(replays[min(len(replays) - 1, int(q * len(replays)))]) if replays else 0.0

        over = sum(r > c + 1 for r, c in zip(self.replays, self.candidates, strict=True))
        return {
            "system": self.system,
            "conversations": self.conversations,
            "files": [p.name for p in self.files],
            "cases": self.cases,
            "failed": self.failed,
            "labeled": sum(self.labeled.values()),
            "by_type": dict(sorted(self.labeled.items())),
            "no_single_decisive": self.no_single,
            "unrestored": self.unrestored,
            "by_type_with_your_answerer": dict(sorted(self.answerer.items())),
            "errors": self.errors,
            "replays_median": statistics.median(replays) if replays else 0.0,
            "replays_p95": pct(0.95),
            "cases_over_candidates_plus_1": over,
            "cases_per_second": self.failed / self.replay_seconds if self.replay_seconds else 0.0,
            "cases_per_cpu_second": (
                self.failed / self.replay_cpu_seconds if self.replay_cpu_seconds else 0.0
            ),
        }


def natural_bench(
    db: Database,
    system: str,
    convs: Sequence[Conversation],
    out: Path,
    *,
    prefix: str = "",
    settings: Settings | None = None,
    workers: int = 1,
    progress: Callable[[str], None] = lambda _: None,
) -> NaturalReport:
    """Run ``system`` on ``convs`` (no fault planted) and label its failures."""
    report = NaturalReport(system)
    out.mkdir(parents=True, exist_ok=True)
    for conv in convs:
        progress(f"running {system} on conversation {conv.number}")
        traced, path = run_conversation(
            make_system(system, make_backend("offline", settings), settings=settings),
            conv,
            out,
            prefix=prefix,
            clock=SimClock(),
            metadata={"bench": {"natural": True}},
        )
        assert path is not None
        report.conversations.append(conv.number)
        report.cases += len(traced.results)
        progress(f"replaying the failed cases of conversation {conv.number}")
        files = TraceFiles({traced.trace_id: path}, settings)
        _label(db, path, traced.trace_id, files, report, workers)
    (out / MANIFEST).write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return report


def natural_labels(
    db: Database,
    paths: Sequence[Path],
    out: Path,
    *,
    settings: Settings | None = None,
    replayer: str | None = None,
    workers: int = 1,
    progress: Callable[[str], None] = lambda _: None,
) -> NaturalReport:
    """Label the failures of traces already written (a system of your own, replayed by its
    replayer: ``replayer`` or the one registered for its name). Each file is copied into
    ``out`` first: the labels go into the copy, never into the trace that was replayed."""
    out.mkdir(parents=True, exist_ok=True)
    heads = [_head(path) for path in paths]
    report = NaturalReport(",".join(sorted({str(h.get("system")) for h in heads})))
    for path, head in zip(paths, heads, strict=True):
        copy = out / path.name
        if copy.resolve() == path.resolve():
            raise ConfigError(f"bench natural: --out must not hold the traces given ({path})")
        shutil.copyfile(path, copy)
        trace_id = str(head["id"])
        report.cases += sum(1 for r in read_records(copy) if r.get("type") == "case")
        progress(f"replaying the failed cases of {trace_id}")
        files = TraceFiles({trace_id: copy}, settings, replayer)
        _label(db, copy, trace_id, files, report, workers)
    (out / MANIFEST).write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return report


def _head(path: Path) -> dict[str, Any]:
    records = read_records(path)
    head = records[0] if records else {}
    if head.get("type") != "trace" or not head.get("id"):
        raise NotReplayableError(f"{path}: not a native memtrace trace (no trace record first)")
    return head


def _label(
    db: Database,
    path: Path,
    trace_id: str,
    replayers: TraceFiles,
    report: NaturalReport,
    workers: int = 1,
) -> None:
    """Load the trace, replay each failed case (the replay judge), write the executed labels
    into the trace file and load it again (the re-load swaps the labelled copy in)."""
    load_paths(db, [str(path)], LoadOptions())
    started, cpu = time.perf_counter(), time.process_time()
    _, verdicts = run_attribution(
        AttributionStore(db),
        ReplayJudge(replayers),
        Options(),
        trace_id=trace_id,
        write=False,
        workers=workers,
    )
    report.replay_seconds += time.perf_counter() - started
    report.replay_cpu_seconds += time.process_time() - cpu
    report.failed += len(verdicts)
    labels = {}
    for verdict in verdicts:
        if verdict.error:
            report.errors += 1
            continue
        outcome = json.loads(verdict.replay_outcomes or "{}")
        yours = outcome.get("with_your_answerer") or {}
        report.answerer[yours.get("error_type") or "no single op"] += 1
        if verdict.op_id is None or verdict.error_type is None:
            report.no_single += 1
            report.unrestored += outcome.get("status") == "unrestored"
        else:
            report.labeled[verdict.error_type] += 1
            labels[verdict.case_id] = label(
                verdict.error_type,
                verdict.op_id,
                verdict.reason,
                "replay",
                status=outcome.get("status"),
                replays=verdict.replays,
                decisive_alone=next(
                    (c["alone"] for c in outcome["candidates"] if c["decisive"]), None
                ),
                with_your_answerer=yours.get("error_type"),
                rescued_at=yours.get("op_id"),
            )
        report.replays.append(verdict.replays)
        report.candidates.append(len(outcome.get("candidates", [])) + 1)
    write_labels(path, labels)
    load_paths(db, [str(path)], LoadOptions())
    report.files.append(path)
