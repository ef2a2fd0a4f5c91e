"""Which sentence of a message carries a question's answer: its key sentence.

The sentence the offline judge follows. What carries an answer is what the message *tells*:
not a greeting to the other speaker ("Hey Jon, good to see you!") nor a name. A name the
question shares with a sentence only breaks ties: in a conversation between two people every
greeting names one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from memtrace.reading.lexical import (
    MIN_CONTENT_WORDS,
    YES_NO,
    content_words,
    normalize,
    sentences,
)

# A sentence that opens by greeting or addressing someone ("Hey Jon,", "Thanks, Gina!",
# "Congrats Maria!"): the opening is not what the sentence tells.
_GREETING = re.compile(
    r"^\s*(?:hey|hi|hello|hiya|yo|thanks|thank you|congrats|congratulations|wow|oh|aw+|"
    r"good (?:morning|afternoon|evening)|long time no (?:see|talk))\b[\s,!.]*"
    r"(?-i:(?!I\b|I')[A-Z][\w'-]*\s*)?[,!.]*\s*",  # an address (capitalized), never "I"
    re.IGNORECASE,
)
_CAPITALIZED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z][\w'-]*)")
_SMALL_TALK = frozenset(
    content_words("good great nice awesome see glad hear catch talk day doing well how")
)


@lru_cache(maxsize=65536)
def names(text: str) -> frozenset[str]:
    """Content words written with a capital inside a sentence: people's and places' names."""
    return frozenset(
        word
        for part in sentences(text)
        for word in content_words(" ".join(_CAPITALIZED.findall(part)))
    )


# Days a memory writer resolves into a date ("on Saturday" -> "on 13 May 2023"): capitalized,
# but no name a rewording keeps.
_WEEKDAYS = content_words("monday tuesday wednesday thursday friday saturday sunday")
DIGIT = re.compile(r"\d")


def specifics(sentence: str) -> frozenset[str]:
    """The names and numbers a sentence tells ("My dog is called Biscuit." -> biscuit; "I ran 5
    km" -> 5): any rewording of it keeps them, and a statement without them is about another
    dog, another distance, however alike its other words are. Not a greeting's address, nor a
    weekday (a memory writer resolves it into a date)."""
    told = telling_words(sentence)
    numbers = frozenset(word for word in told if DIGIT.search(word))
    return ((names(sentence) & told) - _WEEKDAYS) | numbers


def telling_words(sentence: str, named: frozenset[str] = frozenset()) -> frozenset[str]:
    """What a sentence tells: its content words after any greeting or address it opens with,
    without the names ``named`` and without small talk."""
    told = _GREETING.sub("", sentence, count=1)
    return content_words(told) - named - _SMALL_TALK


def key_sentences(message: str, question: str, answers: Sequence[str]) -> list[str]:
    """The sentence(s) of ``message`` that carry the answer.

    The one containing a gold answer, else those telling most of question + answer's content
    words (all of them on a tie: which one the question needs is then unknown; names shared with
    the question, unless the answer gives them, break the tie). A greeting, a question, or a
    sentence telling fewer than ``MIN_CONTENT_WORDS`` words, is never the key sentence when
    another one tells more. Falls back to the whole message.
    """
    parts = sentences(message)
    if not parts:
        return [message]
    asked = content_words(question)
    for answer in answers:
        needle = normalize(answer)
        # a short sentence holding the answer is the key one when the answer is a word of its
        # own ("He is a beagle."), not a yes / no or a word the question already says
        telling = needle not in YES_NO and bool(content_words(answer) - asked)
        if needle:
            for part in parts:
                if needle in normalize(part) and (
                    telling or len(content_words(part)) >= MIN_CONTENT_WORDS
                ):
                    return [part]
    answer_words = content_words(" ".join(answers))
    named = (names(message) | names(question)) - answer_words  # a name the answer gives counts
    target = asked | answer_words
    # a name is something a sentence tells ("I've been to Paris"): it counts for the length
    told_with_names = {part: telling_words(part) for part in parts}
    told = {part: told_with_names[part] - named for part in parts}
    long_enough = (
        [p for p in parts if len(told_with_names[p]) >= MIN_CONTENT_WORDS]
        or [p for p in parts if told_with_names[p]]
        or parts
    )
    # a question asks, it does not tell: the key sentence is a statement where there is one
    long_enough = [p for p in long_enough if not p.endswith("?")] or long_enough

    def score(part: str) -> tuple[int, int]:
        return len(told[part] & target), len(content_words(part) & target)

    best = max(map(score, long_enough))
    return [p for p in long_enough if score(p) == best]
