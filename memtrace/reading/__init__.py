"""Whether a text still holds what a sentence says: the sense judges and repairs read with.

One question, asked by the offline judge of every memory and context an evidence sentence may
have reached (``attribution/trails.py``) and by a replay's repairs of every fact and memory they
may have to restore (``systems/mem0_lib.py``): *does this text still hold what the sentence
says?* A ``Reader`` answers it, by name from ``READERS``:

* ``lexical``: the share of the sentence's content words in one statement of the text
  (``lexical.py``); exact, fast, and blind to an LLM's rewording;
* ``meaning``: the same, and where the words are not there, a small sentence-embedding model
  packaged on PyPI (``meaning.py``, the optional extra ``sentence-transformers``) says whether a
  statement says the same in other words;
* ``auto``: per statement, where the extra is installed (``lexical`` without it): a statement
  that copies a sentence of one of the trace's messages is read by its words (``copying.py``: a
  copy only like the sentence read is another sentence's copy), one that copies none, a
  rewrite, by ``meaning``.

A reading says which sense decided (``sense``, shown on every verdict) and whether it could tell
(``sure``): a similarity in the band between "the same" and "something else" is a guess, and a
verdict resting on one says so in its confidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from memtrace.errors import ConfigError
from memtrace.reading.copying import Copying
from memtrace.reading.lexical import (
    containment,
    containment_each,
    content_words,
    hold_threshold,
)

if TYPE_CHECKING:  # meaning.py imports numpy and this module: imported when chosen
    from memtrace.reading.meaning import MeaningReader


@dataclass(frozen=True)
class Reading:
    """A reader's answer for one sentence over some texts."""

    held: bool
    score: float  # the best statement's: a share of words (lexical) or a similarity (meaning)
    sure: bool  # False: the score is in the band where the reader cannot tell
    sense: str  # the sense that decided: "lexical" or "meaning:<model>"


class Reader(Protocol):
    name: str  # what the verdict shows: "lexical", "meaning:all-MiniLM-L6-v2"

    def read(
        self, sentence: str, texts: Iterable[str | None], needs: frozenset[str] = frozenset()
    ) -> Reading:
        """Whether one of ``texts`` holds what ``sentence`` says. ``needs``: content words
        (``lexical.content_words``) of the gold answer the sentence carries, when known; a
        reworded statement must keep them to count where its similarity alone cannot tell."""
        ...

    def read_each(
        self, sentence: str, texts: Sequence[str], needs: frozenset[str] = frozenset()
    ) -> list[Reading]:
        """``read`` of each text on its own (which of a trace's memories holds the sentence),
        the same readings, in the order of ``texts``."""
        ...

    def for_trace(self, copying: Copying | None) -> Reader:
        """The reader for a trace whose messages' sentences ``copying`` files (None: it has no
        message): itself, but for ``auto``."""
        ...


class LexicalReader:
    """Today's matching: the words of the sentence, in one statement of one text."""

    name = "lexical"

    def read(
        self, sentence: str, texts: Iterable[str | None], needs: frozenset[str] = frozenset()
    ) -> Reading:
        words = content_words(sentence)
        best = max((containment(words, t) for t in texts if t is not None), default=0.0)
        return Reading(best >= hold_threshold(words) and bool(words), best, True, self.name)

    def read_each(
        self, sentence: str, texts: Sequence[str], needs: frozenset[str] = frozenset()
    ) -> list[Reading]:
        words = content_words(sentence)
        needed = hold_threshold(words)
        return [
            Reading(score >= needed and bool(words), score, True, self.name)
            for score in containment_each(words, tuple(texts))
        ]

    def for_trace(self, copying: Copying | None) -> Reader:
        return self


LEXICAL: Final = LexicalReader()


class AutoReader:
    """``auto``: per statement, the words where it copies a sentence of the trace's messages,
    else ``meaning``; a text read without its trace (a replay's repair) is read by ``meaning``."""

    def __init__(self, meaning: MeaningReader) -> None:
        self.meaning = meaning
        self.name = f"auto (per statement: lexical where it copies a message, else {meaning.name})"

    def read(
        self, sentence: str, texts: Iterable[str | None], needs: frozenset[str] = frozenset()
    ) -> Reading:
        return self.meaning.read(sentence, texts, needs)

    def read_each(
        self, sentence: str, texts: Sequence[str], needs: frozenset[str] = frozenset()
    ) -> list[Reading]:
        return self.meaning.read_each(sentence, texts, needs)

    def for_trace(self, copying: Copying | None) -> Reader:
        return self.meaning.rewrites_only(copying, self.name) if copying else self.meaning


def read_one_by_one(
    reader: Reader, sentence: str, texts: Sequence[str], needs: frozenset[str] = frozenset()
) -> list[Reading]:
    """``Reader.read_each`` for a reader with nothing to share between texts (each is a model's
    reading of its own)."""
    return [reader.read(sentence, [text], needs) for text in texts]


def holds(
    reader: Reader, sentence: str, texts: Iterable[str | None], needs: frozenset[str] = frozenset()
) -> bool:
    """Whether one of ``texts`` holds what ``sentence`` says, as ``reader`` reads it."""
    return reader.read(sentence, texts, needs).held


def _meaning() -> MeaningReader:
    from memtrace.reading.meaning import MeaningReader

    return MeaningReader.packaged()


def _auto() -> Reader:
    from memtrace.reading.meaning import installed

    return AutoReader(_meaning()) if installed() else LEXICAL


READERS: Final[dict[str, Callable[[], Reader]]] = {
    "auto": _auto,
    "meaning": _meaning,
    "lexical": lambda: LEXICAL,
}


def make_reader(name: str = "auto") -> Reader:
    """The reader registered as ``name`` (``meaning`` fails clearly without its extra)."""
    if name not in READERS:
        raise ConfigError(f"unknown reading {name!r} (expected one of {', '.join(READERS)})")
    return READERS[name]()
