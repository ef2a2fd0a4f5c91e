"""Systems, backends and rankers by name: what ``memtrace run`` and ``bench make`` offer.

A new memory system is one entry in ``SYSTEM_CLASSES``: a ``System`` subclass that declares what
the registries below derive (its name, aliases, fault types, answer operation, the parameters it
reads, whether it needs an endpoint and how it replays). A new backend or ranker is one factory
here. Factories get the settings passed in; those that need an endpoint say so when called
without them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memtrace.errors import ConfigError
from memtrace.llm import LLMClient
from memtrace.settings import Settings
from memtrace.systems.base import System
from memtrace.systems.core import Backend
from memtrace.systems.evermemos import EverMemOSSystem
from memtrace.systems.long_context import LongContextSystem
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.mem0_lib import Mem0LibSystem
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.rag import RagSystem
from memtrace.systems.rankers import BM25Ranker, EmbeddingRanker, Ranker, TrigramRanker
from memtrace.taxonomy import ErrorType

SystemFactory = type[System]  # (backend, *, params, faults, ranker, ...) -> System
BackendFactory = Callable[[Settings | None], Backend]
RankerFactory = Callable[[Settings | None, str | None], Ranker]

# Every system memtrace runs; what each declares on its class (``System``) makes the rest.
SYSTEM_CLASSES: tuple[SystemFactory, ...] = (
    Mem0System,
    RagSystem,
    LongContextSystem,
    EverMemOSSystem,
    Mem0LibSystem,  # the real Mem0 library (extra memtrace-graph[mem0]; an endpoint)
)
SYSTEMS: dict[str, SystemFactory] = {cls.name: cls for cls in SYSTEM_CLASSES}
# our re-implementations: offline-capable, deterministic, faults can be planted in them
REFERENCE_SYSTEMS: dict[str, SystemFactory] = {
    name: cls for name, cls in SYSTEMS.items() if not cls.needs_endpoint
}
# the fault types ``bench make`` may plant, per system that can have any
FAULT_TYPES: dict[str, tuple[ErrorType, ...]] = {
    name: cls.fault_types for name, cls in SYSTEMS.items() if cls.fault_types
}
# how a trace may spell a system (any case; other tools' names too) -> the registry's name
SYSTEM_SPELLINGS: dict[str, str] = {
    spelling.casefold(): name for name, cls in SYSTEMS.items() for spelling in (name, *cls.aliases)
}


def _needs(settings: Settings | None, what: str) -> Settings:
    if settings is None:
        raise ConfigError(f"{what} needs settings with an OpenAI-compatible endpoint")
    return settings


def _openai_backend(settings: Settings | None) -> Backend:
    from memtrace.systems.openai_backend import OpenAIBackend  # local: offline runs skip it

    return OpenAIBackend(LLMClient.from_settings(_needs(settings, "the openai backend")))


BACKENDS: dict[str, BackendFactory] = {
    "offline": lambda _settings: OfflineBackend(),
    "openai": _openai_backend,
}


def _embedding_ranker(settings: Settings | None, model: str | None) -> Ranker:
    resolved = _needs(settings, "--retriever embeddings")
    return EmbeddingRanker(LLMClient.from_settings(resolved), model or resolved.llm.embedding_model)


def _sentence_transformer_ranker(settings: Settings | None, model: str | None) -> Ranker:
    # local: torch loads only for this retriever
    from memtrace.systems.st_ranker import DEFAULT_ST_MODEL, SentenceTransformerRanker

    allow_download = settings.allow_model_download if settings is not None else False
    return SentenceTransformerRanker(model or DEFAULT_ST_MODEL, allow_download)


RANKERS: dict[str, RankerFactory] = {
    "bm25": lambda _settings, _model: BM25Ranker(),
    "trigrams": lambda _settings, _model: TrigramRanker(),
    "embeddings": _embedding_ranker,
    "sentence-transformers": _sentence_transformer_ranker,
}


def _lookup(registry: dict[str, Any], kind: str, name: str) -> Any:
    if name not in registry:
        raise ConfigError(f"unknown {kind} {name!r} (expected one of {', '.join(registry)})")
    return registry[name]


def make_backend(name: str, settings: Settings | None = None) -> Backend:
    factory: BackendFactory = _lookup(BACKENDS, "backend", name)
    return factory(settings)


def make_ranker(
    name: str, settings: Settings | None = None, embedding_model: str | None = None
) -> Ranker:
    """``embedding_model`` defaults per ranker (the settings' endpoint model, or the packaged
    sentence-transformers model)."""
    factory: RankerFactory = _lookup(RANKERS, "retriever", name)
    return factory(settings, embedding_model)


def make_system(name: str, backend: Backend, **options: Any) -> System:
    """The system registered as ``name``; ``options`` (params, faults, ranker, ...) go to its
    factory unchanged."""
    factory: SystemFactory = _lookup(SYSTEMS, "system", name)
    return factory(backend, **options)
