"""Whether a trace's memories copy its messages' words or rewrite them: what ``auto`` reads by.

A store of verbatim turns (one memory per message, "Caroline: I went to ..."; a RAG over raw
chunks; a long-context window) keeps each message's words, and an LLM memory writer (Mem0's
facts, a summary, a profile) rewrites them. Where the memories copy, the words decide whether
one holds a sentence: a memory that only resembles the sentence is another message's copy (in a
conversation two people say alike things: "contemporary is my top pick, it's so expressive" for
"Contemporary dance is so expressive and graceful"), which the meaning reader takes for it.

A memory copies when one statement of it (``lexical.units``) holds every content word of a
message sentence of at least ``COPIED_SENTENCE_WORDS`` words (a shorter one a rewording keeps
whole as well: "I love pizza" -> "Loves pizza"); the memories copy when more than
``COPYING_SHARE`` of them do. Measured in docs/attribution.md "Reading meaning": the labeled
smartcomment traces 0.955 and 0.913, the hand-written rewritten stores 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memtrace.reading.lexical import content_words, sentences, units

COPIED_SENTENCE_WORDS = 3
COPYING_SHARE = 0.5


def copies_words(memories: Iterable[str], messages: Iterable[str]) -> bool | None:
    """Whether most ``memories`` (their texts) copy a sentence of one of ``messages`` word for
    word; None when there is nothing to compare (no memory, or no message sentence long enough)."""
    share = copying_share(memories, messages)
    return None if share is None else share > COPYING_SHARE


def copying_share(memories: Iterable[str], messages: Iterable[str]) -> float | None:
    """The share of ``memories`` that copy a sentence of one of ``messages`` word for word."""
    said = {
        words
        for message in messages
        for part in sentences(message)
        if len(words := content_words(part)) >= COPIED_SENTENCE_WORDS
    }
    texts = [text for text in memories if text.strip()]
    if not said or not texts:
        return None
    # each sentence filed under its rarest word: a statement copying it has that word, and
    # only the few sentences filed under its own words are compared with it
    frequency = Counter(word for words in said for word in words)
    filed: dict[str, list[frozenset[str]]] = {}
    for words in said:
        filed.setdefault(min(words, key=lambda w: (frequency[w], w)), []).append(words)
    return sum(_copies(text, filed) for text in texts) / len(texts)


def _copies(text: str, filed: dict[str, list[frozenset[str]]]) -> bool:
    return any(
        words <= statement
        for statement in units(text)
        for word in statement
        for words in filed.get(word, ())
    )
