"""Search backends: rank stored texts for a query by BM25 (default, no model), by cosine
similarity of embeddings from an OpenAI-compatible endpoint, or by the offline stand-in for
embeddings (hashed character trigrams: deterministic, no model, no download)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from rank_bm25 import BM25Okapi

from memtrace.llm import LLMClient
from memtrace.systems.text import content

EMBED_BATCH = 256
TRIGRAM_DIMENSIONS = 1024


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
        index = self._index  # read once: replays on other threads may swap it meanwhile
        if index is None or index[0] != key:  # rebuilt only when the store changed
            index = self._index = (key, BM25Okapi([content(d) or [""] for d in docs]))
        scores = index[1].get_scores(content(query))
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


class TrigramRanker:
    """A lexical stand-in for dense embeddings: each text is a vector of its character-trigram
    counts, hashed (CRC-32, stable across processes) into ``TRIGRAM_DIMENSIONS`` buckets, and
    ranked by cosine. It matches word pieces BM25 misses ("paint" / "painting", "adopt" /
    "adoption") but knows no synonyms: it is not a semantic model, only a second, differently
    failing ranking to fuse with BM25 when no embedding model is available.

    Vectors are sparse (bucket ids and weights; a dense matrix product over thousands of texts
    spent most of a run in BLAS threads)."""

    name = "trigrams"

    def __init__(self) -> None:
        self._vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._index: tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray] | None = None

    def vector(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Bucket ids and unit-length weights of ``text`` (one zero-weight bucket if empty)."""
        cached = self._vectors.get(text)
        if cached is None:
            counts: dict[int, float] = {}
            for word in content(text):
                padded = f" {word} "
                for i in range(len(padded) - 2):
                    bucket = zlib.crc32(padded[i : i + 3].encode()) % TRIGRAM_DIMENSIONS
                    counts[bucket] = counts.get(bucket, 0.0) + 1.0
            buckets = np.array(sorted(counts) or [0], dtype=np.int64)
            weights = np.array([counts.get(int(b), 0.0) for b in buckets])
            norm = float(np.sqrt(weights @ weights))
            cached = self._vectors[text] = (buckets, weights / norm if norm else weights)
        return cached

    def rank(self, query: str, docs: Sequence[str]) -> list[int]:
        if not docs:
            return []
        key = tuple(docs)
        index = self._index  # read once: replays on other threads may swap it meanwhile
        if index is None or index[0] != key:  # rebuilt only when the store changed
            vectors = [self.vector(d) for d in docs]
            starts = np.cumsum([0] + [len(b) for b, _ in vectors[:-1]])
            index = self._index = (
                key,
                np.concatenate([b for b, _ in vectors]),
                np.concatenate([w for _, w in vectors]),
                starts,
            )
        _, buckets, weights, starts = index
        dense = np.zeros(TRIGRAM_DIMENSIONS)
        query_buckets, query_weights = self.vector(query)
        dense[query_buckets] = query_weights
        scores = np.add.reduceat(weights * dense[buckets], starts)
        return [int(i) for i in np.argsort(-scores, kind="stable")]  # ties: earlier first


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
