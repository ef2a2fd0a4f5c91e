"""Search backends: rank stored texts for a query by BM25 (default, no model) or by cosine
similarity of embeddings from an OpenAI-compatible endpoint."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from rank_bm25 import BM25Okapi

from memtrace.llm import LLMClient
from memtrace.systems.text import content

EMBED_BATCH = 256


class Ranker(Protocol):
    name: str

    def rank(self, query: str, docs: Sequence[str]) -> list[int]:
        """Indices of ``docs``, best first (ties: earlier first)."""
        ...


class BM25Ranker:
    name = "bm25"

    def __init__(self) -> None:
        self._index: tuple[tuple[str, ...], BM25Okapi] | None = None

    def rank(self, query: str, docs: Sequence[str]) -> list[int]:
        if not docs:
            return []
        key = tuple(docs)
        if self._index is None or self._index[0] != key:  # rebuilt only when the store changed
            self._index = (key, BM25Okapi([content(d) or [""] for d in docs]))
        scores = self._index[1].get_scores(content(query))
        return sorted(range(len(docs)), key=lambda i: (-scores[i], i))


class EmbeddingRanker:
    """Dense retrieval; each distinct text is embedded once per run."""

    def __init__(self, client: LLMClient, model: str) -> None:
        self.name = f"embeddings:{model}"
        self.client = client
        self.model = model
        self._vectors: dict[str, list[float]] = {}

    def _embed(self, texts: Sequence[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        for start in range(0, len(todo), EMBED_BATCH):
            batch = todo[start : start + EMBED_BATCH]
            vectors = self.client.embed(batch, model=self.model).vectors
            self._vectors.update(zip(batch, map(_unit, vectors), strict=True))

    def rank(self, query: str, docs: Sequence[str]) -> list[int]:
        self._embed([query, *docs])
        q = self._vectors[query]
        scores = [sum(a * b for a, b in zip(q, self._vectors[d], strict=True)) for d in docs]
        return sorted(range(len(docs)), key=lambda i: (-scores[i], i))


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
