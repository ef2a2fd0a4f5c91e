"""Run a reference system over LoCoMo-format data, one native trace file per conversation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memtrace.errors import ConfigError
from memtrace.llm import LLMClient
from memtrace.settings import load_settings
from memtrace.systems.base import System
from memtrace.systems.core import Backend, ConversationRun, Fault
from memtrace.systems.locomo import Conversation
from memtrace.systems.long_context import LongContextSystem
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.mem0_lib import Mem0LibSystem
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.params import Params
from memtrace.systems.rag import RagSystem
from memtrace.systems.rankers import BM25Ranker, EmbeddingRanker, Ranker
from memtrace.tracing import Clock, SimClock, WallClock, trace

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
# our re-implementations: offline-capable, deterministic, faults can be planted in them
REFERENCE_SYSTEMS: dict[str, type[System]] = {
    "mem0": Mem0System,
    "rag": RagSystem,
    "long-context": LongContextSystem,
}
SYSTEMS: dict[str, type[System]] = {
    **REFERENCE_SYSTEMS,
    "mem0-lib": Mem0LibSystem,  # the real Mem0 library (extra memtrace[mem0]; an endpoint)
}


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


def make_backend(name: str) -> Backend:
    if name == "offline":
        return OfflineBackend()
    if name == "openai":
        from memtrace.systems.openai_backend import OpenAIBackend

        return OpenAIBackend.from_settings()
    raise ConfigError(f"unknown backend {name!r} (expected offline or openai)")


RETRIEVERS = ("bm25", "embeddings", "sentence-transformers")


def make_ranker(name: str, embedding_model: str | None = None) -> Ranker:
    """``embedding_model`` defaults per retriever (an endpoint model name, or the packaged
    sentence-transformers model)."""
    if name == "bm25":
        return BM25Ranker()
    if name == "embeddings":
        model = embedding_model or DEFAULT_EMBEDDING_MODEL
        return EmbeddingRanker(LLMClient.from_settings(load_settings()), model)
    if name == "sentence-transformers":
        from memtrace.systems.st_ranker import DEFAULT_ST_MODEL, SentenceTransformerRanker

        return SentenceTransformerRanker(embedding_model or DEFAULT_ST_MODEL)
    raise ConfigError(f"unknown retriever {name!r} (expected one of {', '.join(RETRIEVERS)})")


def make_system(
    name: str,
    backend: Backend,
    params: Params | None = None,
    faults: Sequence[Fault] = (),
    ranker: Ranker | None = None,
) -> System:
    if name not in SYSTEMS:
        raise ConfigError(f"unknown system {name!r} (expected one of {', '.join(SYSTEMS)})")
    return SYSTEMS[name](backend, params=params, faults=faults, ranker=ranker)


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
    backend: str = "offline",
    retriever: str = "bm25",
    embedding_model: str | None = None,
    deterministic: bool = False,
    prefix: str = "",
    progress: Callable[[Conversation], None] | None = None,
) -> RunReport:
    report = RunReport(name)
    system = make_system(
        name, make_backend(backend), ranker=make_ranker(retriever, embedding_model)
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


def load_traces(paths: Sequence[Path]) -> list[str]:
    """Load written traces into Neo4j with the loader; returns the loaded trace ids."""
    from memtrace.db import connect  # local: running a system needs no database
    from memtrace.loaders.load import LoadOptions, load_paths
    from memtrace.settings import load_settings

    with connect(load_settings()) as db:
        summary = load_paths(db, [str(p) for p in paths], LoadOptions())
    return [result.trace_id for result in summary.files]
