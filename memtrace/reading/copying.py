"""Which statements copy a message's words and which rewrite them: what ``auto`` reads by.

A store of verbatim turns (one memory per message, "Caroline: I went to ..."; a RAG over raw
chunks; a long-context window) keeps each message's words, and an LLM memory writer (Mem0's
facts, a summary, a profile) rewrites them; one trace can hold both (an extraction that copies
most facts and rewrites a few). A statement that copies a message sentence is that sentence's
copy: its words decide what it holds, and a copy only *like* another sentence is not it (in a
conversation two people say alike things: "contemporary is my top pick, it's so expressive" for
"Contemporary dance is so expressive and graceful", which the meaning reader takes for it). A
statement that copies none is a rewrite, and only a rewrite is read by meaning.

A statement copies a message sentence when it holds every content word of it and the sentence
has at least ``COPIED_SENTENCE_WORDS`` words (a shorter one a rewording keeps whole as well: "I
love pizza" -> "Loves pizza"), or when it is that sentence word for word, give or take who said
it and when ("Melanie: Wow, love that painting!", "[25 August 2023] Caroline: Thanks, Mel!").
A message with a line repeating a whole memory stored before it (an instrumentation records a
prompt listing the notes held as a message) is the memory system's own text: its sentences are
not said. Measured in docs/attribution.md "Reading meaning".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memtrace.reading.keys import DIGIT
from memtrace.reading.lexical import content_words, lines, sentences, units

COPIED_SENTENCE_WORDS = 3
# What says when a sentence was said, besides numbers: a store's "[8 May 2023] Melanie: ..."
MONTHS = content_words(
    "january february march april may june july august september october november december"
)


class Copying:
    """The sentences a trace's messages say, filed to tell a statement copying one of them."""

    def __init__(
        self,
        messages: Iterable[tuple[str, int]],
        memories: Iterable[tuple[str, int]] = (),
        speakers: Iterable[str] = (),
    ) -> None:
        """``messages`` and ``memories``: (text, seq). A message with a line repeating a whole
        memory stored before it (a prompt listing the notes held, a context handed to the
        answer) is the memory system's own text, not something said: its sentences are no
        message's."""
        stored: dict[frozenset[str], int] = {}  # each memory's words, when first stored
        for text, seq in memories:
            if len(words := content_words(text)) >= COPIED_SENTENCE_WORDS:
                stored[words] = min(seq, stored.get(words, seq))
        filed_stored = _filed(stored)
        said = {
            words
            for message, seq in messages
            if not any(
                stored[memory] < seq
                for line in lines(message)
                for memory in _held(content_words(line), filed_stored)
            )
            for part in sentences(message)
            if (words := content_words(part))
        }
        self.speakers = frozenset(word for name in speakers for word in content_words(name))
        self._said = _filed(said)
        self._known: dict[frozenset[str], bool] = {}  # statements recur across a trace's cases

    @classmethod
    def of(
        cls,
        messages: Iterable[tuple[str, int]],
        memories: Iterable[tuple[str, int]] = (),
        speakers: Iterable[str] = (),
    ) -> Copying | None:
        """The trace's copying, None when its messages say no sentence."""
        copying = cls(messages, memories, speakers)
        return copying if copying._said else None

    def copies(self, statement: frozenset[str]) -> bool:
        """Whether a statement (its content words) copies a message sentence: holds every word
        of one of at least ``COPIED_SENTENCE_WORDS``, or of a shorter one with nothing else but
        who said it and when (a speaker's name, a month, a number: "[25 August 2023] Caroline:
        Thanks, Mel!")."""
        known = self._known.get(statement)
        if known is None:
            known = self._known[statement] = any(
                len(words) >= COPIED_SENTENCE_WORDS
                or all(self._says_who_or_when(word) for word in statement - words)
                for words in _held(statement, self._said)
            )
        return known

    def _says_who_or_when(self, word: str) -> bool:
        return word in self.speakers or word in MONTHS or DIGIT.search(word) is not None

    def share(self, texts: Iterable[str]) -> float | None:
        """The share of the statements of ``texts`` that copy a message sentence (None: no
        statement)."""
        statements = [words for text in texts for words in units(text) if words]
        if not statements:
            return None
        return sum(map(self.copies, statements)) / len(statements)


def _filed(word_sets: Iterable[frozenset[str]]) -> dict[str, list[frozenset[str]]]:
    """Each set of words filed under its rarest word: a statement holding it has that word, and
    only the few sets filed under its own words are compared with it."""
    sets = list(word_sets)
    frequency = Counter(word for words in sets for word in words)
    filed: dict[str, list[frozenset[str]]] = {}
    for words in sets:
        filed.setdefault(min(words, key=lambda w: (frequency[w], w)), []).append(words)
    return filed


def _held(
    statement: frozenset[str], filed: dict[str, list[frozenset[str]]]
) -> list[frozenset[str]]:
    """The filed sets of words ``statement`` holds every word of."""
    return [words for word in statement for words in filed.get(word, ()) if words <= statement]
