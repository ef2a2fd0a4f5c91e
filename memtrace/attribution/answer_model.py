"""Would *your* answer step have used the evidence, had it been in its context?

The label assumes an ideal answer step (``counterfactual.py``): where the evidence was first lost
is the fault, whatever the real answer step would have done with it. What the real one would
have done is still worth saying beside the verdict ("rescued with your answerer"): on the
offline reference systems restoring what an op lost rarely rescues the answer, because the
answer step quotes the context items that best match the question, and the restored item would
not be among them. A judge that cannot replay can still see how an *extractive* answer step
selects: its prediction quotes some of its context items. When the items it quoted are exactly
the ones with the highest idf-weighted overlap with the question (the lexical relevance the rest
of attribution uses), that model of the step is trusted for this case and asked whether it
would have quoted the restored item. An answer in its own words (a model's), or a selection the
model does not reproduce, says nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memtrace.attribution.dates import date_phrases, unglue_dates
from memtrace.attribution.model import CaseGraph, Trail
from memtrace.attribution.text import memory_text
from memtrace.reading.lexical import lines, ranking_words

QUOTED_SHARE = 0.9  # of an item's content words in the prediction: the answer quoted the item
_TIMESTAMP = re.compile(r"^\[[^\]]*\]\s*")  # a context line's leading "[8 May 2023]"


@dataclass(frozen=True)
class Selection:
    """An extractive answer step as observed on one case: the context items it chose from (their
    content words) and how many it quoted."""

    items: tuple[frozenset[str], ...]
    quoted: int


def _items(graph: CaseGraph) -> list[str]:
    """The answer's context items: the entries of the JSON lists it read (a parameter or the
    question is no item), without their leading timestamp."""
    found = []
    for _, value in graph.context:
        if value.lstrip().startswith("["):
            found += [_TIMESTAMP.sub("", item) for item in lines(value)]
    return found


def _scores(items: Sequence[frozenset[str]], question: frozenset[str]) -> list[float]:
    """Each item's idf-weighted overlap with the question (idf over the items)."""
    df = Counter(word for item in items for word in item)
    return [
        sum(math.log(1 + len(items) / df[w]) for w in sorted(question & item)) for item in items
    ]


def _ranked(items: Sequence[frozenset[str]], question: frozenset[str]) -> list[int]:
    """Item indexes by ``_scores``, ties by position."""
    scores = _scores(items, question)
    return sorted(range(len(items)), key=lambda i: (-scores[i], i))


def selection(graph: CaseGraph) -> Selection | None:
    """The case's answer step, when it quoted context items and the quoted ones are exactly the
    best-matching ones; None when the model does not explain what it did."""
    items = [ranking_words(text) for text in _items(graph)]
    answer = ranking_words(graph.anchor.prediction or "")
    quoted = {
        i
        for i, words in enumerate(items)
        if words and len(words & answer) >= QUOTED_SHARE * len(words)
    }
    if not quoted:
        return None
    question = ranking_words(graph.anchor.question)
    if set(_ranked(items, question)[: len(quoted)]) != quoted:
        return None
    return Selection(tuple(items), len(quoted))


@dataclass(frozen=True)
class Restored:
    """What a repair would put back into the context for a lost trail."""

    text: str
    dates: tuple[str, ...]  # the day its message was said and the dates it refers to


def restored(graph: CaseGraph, trail: Trail) -> Restored:
    evidence = next((e for e in graph.evidence if e.id == trail.message_id), None)
    day, relative = date_phrases(trail.key_sentence, evidence.said_on if evidence else None)
    return Restored(restored_text(graph, trail), tuple(p for p in (day, *relative) if p))


def restored_text(graph: CaseGraph, trail: Trail) -> str:
    """The line of a memory that held the sentence which holds most of it, else the sentence as
    its speaker said it."""
    words = ranking_words(trail.key_sentence)
    holders = {m.id: m.value for m in graph.memories}
    candidates = [
        _TIMESTAMP.sub("", memory_text(line))
        for holder in trail.holders
        for line in lines(holders.get(holder, ""))
    ]
    if candidates:
        return max(candidates, key=lambda line: len(words & ranking_words(line)))
    speaker = next((e.speaker for e in graph.evidence if e.id == trail.message_id), None)
    return f"{speaker}: {trail.key_sentence}" if speaker else trail.key_sentence


def rescues(found: Selection, question: str, restored: Sequence[Restored], gold: str) -> bool:
    """Whether restoring the lost evidence could make the answer right: with the restored items
    in its context, the step would quote one of them (a tie counts as quoted: where a repair puts
    the item decides it, and that is not in the trace), and what it would quote then holds every
    content word of the gold answer (the dates a restored message refers to count as said: an
    answer step writes them out)."""
    n = len(found.items)
    items = [*found.items, *(ranking_words(r.text) for r in restored)]
    scores = _scores(items, ranking_words(question))
    # a step that quoted its whole context may quote more than it had: every item, then
    quota = len(items) if found.quoted == n else found.quoted
    chosen = sorted(range(len(items)), key=lambda i: (-scores[i], i < n, i))[:quota]
    if all(i < n for i in chosen):
        return False
    said = set().union(*(items[i] for i in chosen))
    for i in chosen:
        if i >= n:
            said |= ranking_words(" ".join(restored[i - n].dates))
    return ranking_words(unglue_dates(gold)) <= said
