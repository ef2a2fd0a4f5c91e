"""Run a reference system over LoCoMo-format data, one native trace file per conversation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memtrace.prompts import Prompt
from memtrace.settings import Settings
from memtrace.systems.base import System
from memtrace.systems.core import ConversationRun
from memtrace.systems.locomo import Conversation
from memtrace.systems.params import Params
from memtrace.systems.registry import SYSTEMS, make_backend, make_ranker, make_system
from memtrace.tracing import Clock, SimClock, WallClock, trace


@dataclass(slots=True)
class RunReport:
    system: str
    runs: list[ConversationRun] = field(default_factory=list)
    traces: list[Path] = field(default_factory=list)

    def accuracy(self) -> dict[str, tuple[int, int]]:
        """Category -> (correct, total), plus ``all``."""
        correct: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for run in self.runs:
            for result in run.results:
                for key in (result.category, "all"):
                    total[key] += 1
                    correct[key] += result.passed
        return {key: (correct[key], total[key]) for key in total}


def trace_id(system: str, conv: Conversation, prefix: str = "") -> str:
    return f"{prefix}{system}-locomo-{conv.number}"


def run_conversation(
    system: System,
    conv: Conversation,
    out: Path | None,
    *,
    prefix: str = "",
    clock: Clock | None = None,
    metadata: Mapping[str, object] | None = None,
) -> tuple[ConversationRun, Path | None]:
    """One conversation; traced into ``out/<trace id>.jsonl`` unless ``out`` is None."""
    tid = trace_id(system.name, conv, prefix)
    path = out / f"{tid}.jsonl" if out is not None else None
    with trace(
        path or Path(),
        tid,
        system=system.name,
        dataset="locomo",
        clock=clock,
        metadata={"sample_id": conv.sample_id, "backend": system.backend.name, **(metadata or {})},
        enabled=path is not None,
    ):
        run = system.run(conv)
    run.trace_id = tid
    return run, path


def run_system(
    name: str,
    conversations: Sequence[Conversation],
    out: Path,
    *,
    backend: str | None = None,
    retriever: str = "bm25",
    embedding_model: str | None = None,
    deterministic: bool = False,
    prefix: str = "",
    progress: Callable[[Conversation], None] | None = None,
    settings: Settings | None = None,
    prompts: Mapping[str, Prompt] | None = None,
    params: Params | None = None,
) -> RunReport:
    """``settings`` are needed by the backends and rankers that call an endpoint; ``backend``
    defaults to the system's (``System.default_backend``)."""
    report = RunReport(name)
    system = make_system(
        name,
        make_backend(backend or SYSTEMS[name].default_backend, settings),
        ranker=make_ranker(retriever, settings, embedding_model),
        prompts=prompts,
        params=params,
        settings=settings,
    )
    for conv in conversations:
        clock = SimClock() if deterministic else WallClock()
        run, path = run_conversation(system, conv, out, prefix=prefix, clock=clock)
        report.runs.append(run)
        if path is not None:
            report.traces.append(path)
        if progress is not None:
            progress(conv)
    return report
