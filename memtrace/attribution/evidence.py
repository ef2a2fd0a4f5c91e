"""Starting evidence: the case's gold evidence, or messages retrieved for question + answer.

Retrieval follows MemTrace (BM25, dense, or hybrid by reciprocal rank fusion with k = 60), with
MemTrace's query by default: question + gold answer. A case is failed relative to its gold
answer, so the answer is an input of attribution; ``question`` ranks by the question alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Final, Literal, get_args

import numpy as np
from rank_bm25 import BM25Okapi

from memtrace.attribution.dates import date_phrases, is_dated, unglue_dates
from memtrace.attribution.model import Anchor, Evidence
from memtrace.reading.lexical import (
    MIN_CONTENT_WORDS,
    YES_NO,
    content_words,
    holds,
    normalize,
    sentences,
)

EvidenceMode = Literal["gold", "retrieved"]
Retriever = Literal["bm25", "dense", "hybrid"]
RetrievalQuery = Literal["question", "question+answer"]
EVIDENCE_MODES: Final[tuple[EvidenceMode, ...]] = get_args(EvidenceMode)
RETRIEVERS: Final[tuple[Retriever, ...]] = get_args(Retriever)
RETRIEVAL_QUERIES: Final[tuple[RetrievalQuery, ...]] = get_args(RetrievalQuery)
RRF_K = 60
RETRIEVED_TOP_K = 10
MAX_RETRIEVED = 1
Embed = Callable[[Sequence[str]], list[list[float]]]


def bm25_scores(corpus: Sequence[tuple[str, str]], query: str) -> dict[str, float]:
    if not corpus:
        return {}
    tokens = [sorted(content_words(text)) or [""] for _, text in corpus]
    scores = BM25Okapi(tokens).get_scores(sorted(content_words(query)))
    return {message_id: float(score) for (message_id, _), score in zip(corpus, scores, strict=True)}


def bm25_ranking(corpus: Sequence[tuple[str, str]], query: str) -> list[str]:
    scores = bm25_scores(corpus, query)
    order = sorted(range(len(corpus)), key=lambda i: (-scores[corpus[i][0]], i))
    return [corpus[i][0] for i in order]


def dense_ranking(corpus: Sequence[tuple[str, str]], query: str, embed: Embed) -> list[str]:
    if not corpus:
        return []
    vectors = np.asarray(embed([query, *(text for _, text in corpus)]), dtype=float)
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    unit = vectors / norms[:, None]
    scores = unit[1:] @ unit[0]
    order = sorted(range(len(corpus)), key=lambda i: (-scores[i], i))
    return [corpus[i][0] for i in order]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: (-scores[item], item))


def retrieve(
    corpus: Sequence[tuple[str, str]],
    query: str,
    retriever: Retriever = "bm25",
    embed: Embed | None = None,
) -> list[str]:
    if retriever == "bm25":
        return bm25_ranking(corpus, query)
    if embed is None:
        raise ValueError(f"the {retriever} retriever needs an embedding function")
    if retriever == "dense":
        return dense_ranking(corpus, query, embed)
    # Hybrid: each retriever contributes twice the final number of candidates (as MemTrace).
    depth = 2 * RETRIEVED_TOP_K
    return reciprocal_rank_fusion(
        [bm25_ranking(corpus, query)[:depth], dense_ranking(corpus, query, embed)[:depth]]
    )


def asked_about(question: str, speakers: set[str]) -> str | None:
    """The one speaker the question names, if exactly one."""
    words = set(re.findall(r"[a-z0-9]+", question.lower()))
    named = [s for s in speakers if s.lower() in words]
    return named[0] if len(named) == 1 else None


def asks_only(text: str) -> bool:
    """A message of questions only cannot hold an answer."""
    return all(part.endswith("?") for part in sentences(text))


def list_items(answer: str) -> list[str]:
    """The items of an answer that lists several things ("beach, mountains, forest"); a "yes"
    or "no" before a comma is not one."""
    items = [part.strip() for part in answer.split(",") if part.strip()]
    return [i for i in items if normalize(i) not in YES_NO] if len(items) > 1 else []


def retrieved_evidence(
    anchor: Anchor,
    corpus: Sequence[tuple[str, str]],
    *,
    retriever: Retriever = "bm25",
    query_mode: RetrievalQuery = "question+answer",
    embed: Embed | None = None,
    top_k: int = RETRIEVED_TOP_K,
    speakers: Mapping[str, str] | None = None,
    dates: Mapping[str, date] | None = None,
) -> tuple[Evidence, ...]:
    """Top-k messages for the question, filtered by the gold answer (which the query never saw).

    Kept: the (at most ``MAX_RETRIEVED``) messages covering the most of the gold answer's content
    words, if they cover at least half (a question only when no statement does); else the
    best-ranked message that is not a question, marked ``covers=False`` (explain says so).
    Every retrieved message would otherwise count as needed evidence, and an irrelevant one whose
    sentence was (rightly) never stored would be blamed on extraction.

    A gold answer that names a date ("The week before 9 June 2023") is matched against what each
    message says plus the dates it refers to (``dates.py``: its day, from ``dates``, and its
    relative dates written out); on equal coverage, a message whose own words or relative
    dates cover more of the answer comes first (every message of a session has the day).
    """
    answer = unglue_dates(" ".join(anchor.golden_answers))
    query = anchor.question
    if query_mode == "question+answer":
        query = f"{query} {answer}"
    texts = dict(corpus)
    said = dict(texts)  # what each message says, with the dates it refers to
    saying = dict(texts)  # the same without the day it was said
    dated = bool(dates) and is_dated(answer)
    if dates and dated:
        for message_id, text in texts.items():
            day, relative = date_phrases(text, dates.get(message_id))
            saying[message_id] = " ".join([text, *relative])
            said[message_id] = f"{saying[message_id]} {day}"
    top = retrieve(list(said.items()), query, retriever, embed)[:top_k]
    answer_words = content_words(answer)

    def share(text: str) -> float:
        if not answer_words:
            return 0.0
        return len(answer_words & content_words(text)) / len(answer_words)

    def coverage(message_id: str) -> float:
        return share(said[message_id])

    def own_coverage(message_id: str) -> float:
        return share(saying[message_id])

    # On equal coverage of a dated answer (every message of a session has the day), the message
    # that matches the question best (BM25 of the question alone) is about what was asked.
    topical = bm25_scores(corpus, anchor.question) if dated else {}

    def quoted(message_id: str) -> bool:
        """Whether the wrong prediction repeats a sentence of the message: on a tie, the
        message that misled the answer is less likely the evidence it lacked."""
        return bool(anchor.prediction) and any(
            len(words) >= MIN_CONTENT_WORDS and holds(words, [anchor.prediction or ""])
            for words in map(content_words, sentences(texts[message_id]))
        )

    asked = asked_about(anchor.question, set((speakers or {}).values()))

    def other_speaker(message_id: str) -> bool:
        """On a tie, a message said by the person the question asks about comes first."""
        return asked is not None and (speakers or {}).get(message_id) not in (None, asked)

    statements = sorted(
        (i for i in top if not asks_only(texts[i])),
        key=lambda i: (other_speaker(i), -min(coverage(i), 0.5)),
    )
    # A question can tell as well as ask ("Did I ever tell you I'm allergic to peanuts?"): when
    # no statement covers the answer, a question that does is the evidence.
    covers = [i for i in top if coverage(i) >= 0.5]
    covering = sorted(
        [i for i in covers if not asks_only(texts[i])] or covers,
        key=lambda i: (
            -coverage(i),
            -own_coverage(i),
            -topical.get(i, 0.0),
            quoted(i),
            other_speaker(i),
        ),
    )
    chosen = covering[:MAX_RETRIEVED] or statements[:1] or top[:1]
    ranks = {i: top.index(i) + 1 for i in chosen}
    if chosen and not dated:
        for item in list_items(answer):
            words = content_words(item)
            if not words or any(words <= content_words(said[i]) for i in chosen):
                continue
            item_top = retrieve(list(said.items()), f"{anchor.question} {item}", retriever, embed)
            holders = [
                i
                for i in item_top[:top_k]
                if words <= content_words(said[i]) and not asks_only(texts[i])
            ]
            holders.sort(key=other_speaker)
            if holders and holders[0] not in ranks:
                chosen.append(holders[0])
                ranks[holders[0]] = item_top.index(holders[0]) + 1
    return tuple(
        Evidence(
            i,
            texts[i],
            rank=ranks[i],
            speaker=(speakers or {}).get(i),
            said_on=(dates or {}).get(i),
            covers=bool(covering),
        )
        for i in chosen
    )
