"""Every tunable parameter of the reference systems, recorded as a `parameter` variable.

An operation reads exactly the parameters it uses, so attribution can blame a threshold and an
optimizer can change one (a changed value is a new version of the same variable).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from memtrace.tracing import Registered, current_operation


@dataclass(frozen=True, slots=True)
class Params:
    top_k: int = 10  # memories / chunks in the answer context
    similar_top_k: int = 3  # existing memories compared with each new fact
    none_threshold: float = 0.7  # similarity at which a fact is already stored
    update_threshold: float = 0.3  # similarity at which a fact is merged into a memory
    delete_threshold: float = 0.2  # similarity at which a negated fact deletes a memory
    max_merge_sentences: int = 4  # a memory this long is not merged into any more
    min_content_words: int = 2  # shorter sentences are not facts
    chunk_size: int = 8  # naive RAG: messages per chunk
    window: int = 120  # long-context: messages kept in the window
    judge_f1_threshold: float = 0.5  # offline judge: token F1 that counts as correct
    answer_items: int = 2  # offline answers quote this many best-matching context items
    search_threshold: float = 0.1  # mem0ai 2.x: the least similarity of a search result
    # EverMemOS-style: boundaries, episodes, agentic retrieval
    boundary_max_messages: int = 50  # a MemCell is force-split at this many messages
    boundary_max_tokens: int = 8192  # ... or at this many tokens of "speaker: text"
    boundary_overlap: int = 0  # history messages a new MemCell starts with after a split
    boundary_min_messages: int = 4  # offline: no topic split before this many messages
    boundary_window: int = 4  # offline: recent messages a topic shift is measured against
    boundary_min_words: int = 4  # offline: a message this rich in content words may shift
    boundary_topic_overlap: float = 0.1  # offline: share of its words said recently, below: shift
    hybrid_candidates: int = 50  # each half of hybrid retrieval (BM25, embeddings) keeps this many
    rrf_k: int = 60  # reciprocal rank fusion constant
    agentic_rounds: int = 2  # 1: round-1 hybrid retrieval only; 2: sufficiency check, round 2
    sufficiency_top: int = 10  # round-1 units the sufficiency check reads
    sufficiency_threshold: float = 0.8  # offline: share of question words that is sufficient
    refined_queries: int = 3  # queries of round 2
    final_rerank: int = 1  # 1: rerank the merged rounds against the question; 0: keep fused order


@dataclass(frozen=True, slots=True)
class Range:
    """Where an optimizer may move a parameter: ``low..high`` (ints step by 1)."""

    low: float
    high: float
    integer: bool


# Declared next to Params so a new parameter and its search range change together. The judge's
# threshold is left out on purpose: an optimizer that may loosen the judge "improves" accuracy.
RANGES: Final[dict[str, Range]] = {
    "top_k": Range(2, 30, integer=True),
    "similar_top_k": Range(1, 8, integer=True),
    "none_threshold": Range(0.3, 1.0, integer=False),
    "update_threshold": Range(0.05, 0.9, integer=False),
    "delete_threshold": Range(0.05, 0.9, integer=False),
    "max_merge_sentences": Range(1, 8, integer=True),
    "min_content_words": Range(1, 5, integer=True),
    "chunk_size": Range(2, 24, integer=True),
    "window": Range(20, 400, integer=True),
    "answer_items": Range(1, 6, integer=True),
    "search_threshold": Range(0.0, 0.6, integer=False),
    "boundary_max_messages": Range(5, 80, integer=True),
    "boundary_max_tokens": Range(512, 16384, integer=True),
    "boundary_overlap": Range(0, 2, integer=True),
    "boundary_min_messages": Range(1, 20, integer=True),
    "boundary_window": Range(1, 10, integer=True),
    "boundary_min_words": Range(1, 10, integer=True),
    "boundary_topic_overlap": Range(0.0, 0.8, integer=False),
    "hybrid_candidates": Range(10, 100, integer=True),
    "rrf_k": Range(1, 120, integer=True),
    "agentic_rounds": Range(1, 2, integer=True),
    "sufficiency_top": Range(1, 20, integer=True),
    "sufficiency_threshold": Range(0.1, 1.0, integer=False),
    "refined_queries": Range(1, 3, integer=True),
    "final_rerank": Range(0, 1, integer=True),
}


def parameter(name: str) -> Registered:
    """The variable ``parameter:<name>``: registered once per trace, again when it changes."""
    return Registered(name, category="parameter", class_name="parameter")


_PARAMETERS = {field.name: parameter(field.name) for field in fields(Params)}


def use(params: Params, *names: str) -> None:
    """Register the named parameters (a changed value is a new version) and mark them read by
    the current operation."""
    if current_operation() is None:  # tracing off (or outside an operation): nothing to record
        return
    for name in names:
        handle = _PARAMETERS.get(name) or _PARAMETERS.setdefault(name, parameter(name))
        handle.read(getattr(params, name))
