"""Lexical evidence tracking, the offline judge's only sense: tokens, sentences, containment.

Thresholds (documented in docs/attribution.md):

* ``HOLD_THRESHOLD``: a text *holds* an evidence sentence when at least this share of the
  sentence's content words (lower-cased, stop words dropped, light suffix stemming) occur in one
  line of the text. Lines, because contexts and memory stores list one memory per line; a whole
  context would match almost anything.
* A sentence of at most ``SHORT_SENTENCE_WORDS`` content words must be held completely: with 3
  of 4 words, "signed up for a pottery class yesterday" matches "made it in pottery class
  yesterday".
* A sentence with fewer than ``MIN_CONTENT_WORDS`` content words is never the key sentence when a
  longer one exists (short sentences match by accident).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

HOLD_THRESHOLD = 0.75
SHORT_SENTENCE_WORDS = 4
MIN_CONTENT_WORDS = 2

_STOP_TEXT = """a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves also really so just yeah oh wow hey
im ive id youre thats its dont didnt got get gets like lot lots thing things"""
STOP_WORDS = frozenset(_STOP_TEXT.split())

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Wrappers that memory frameworks append to message text; not part of what was said.
_SUFFIXES = (re.compile(r"\s*Below is this message's metadata:.*\Z", re.DOTALL),)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=262144)  # memory and context lines recur across the cases of a trace
def content_words(text: str) -> frozenset[str]:
    words = _WORD.findall(text.lower().replace("'", ""))
    return frozenset(stem(w) for w in words if w not in STOP_WORDS)


def word_forms(text: str) -> dict[str, str]:
    """Each content word of ``text`` (as ``content_words`` has it) -> the word as written."""
    forms: dict[str, str] = {}
    for word in _WORD.findall(text.lower().replace("'", "")):
        if word not in STOP_WORDS:
            forms.setdefault(stem(word), word)
    return forms


def unescape(text: str) -> str:
    """Values are often JSON/Python text of strings: make escaped newlines real lines again."""
    return text.replace("\\n", "\n").replace('\\"', '"')


def message_text(value: str | None) -> str:
    """The spoken text of a message variable (JSON with content/text, or plain text)."""
    if not value:
        return ""
    text = value
    try:
        data = json.loads(value)
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("content", "text", "message"):
            if isinstance(data.get(key), str):
                text = data[key]
                break
    elif isinstance(data, str):
        text = data
    for suffix in _SUFFIXES:
        text = suffix.sub("", text)
    return text.strip()


def memory_text(value: str) -> str:
    """What a memory says: the ``memory`` / ``text`` of its JSON value, else the value."""
    try:
        data = json.loads(value)
    except ValueError:
        return value
    if isinstance(data, dict):
        for key in ("memory", "text", "content"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return value


def message_speaker(value: str | None) -> str | None:
    """Who said a message (``name`` or ``speaker`` of its JSON value), if it says."""
    try:
        data = json.loads(value or "")
    except ValueError:
        return None
    if isinstance(data, dict):
        for key in ("speaker", "name"):
            if isinstance(data.get(key), str) and data[key].strip():
                return str(data[key]).strip()
    return None


def message_timestamp(value: str | None) -> str | None:
    """When a message was said (``timestamp`` of its JSON value), if it says."""
    try:
        data = json.loads(value or "")
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("timestamp"), str):
        return str(data["timestamp"])
    return None


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def normalize(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def key_sentences(message: str, question: str, answers: Sequence[str]) -> list[str]:
    """The sentence(s) of ``message`` that carry the answer.

    The one containing a gold answer, else those sharing most content words with question +
    answer (all of them on a tie: which one the question needs is then unknown). Falls back to
    the whole message.
    """
    parts = sentences(message)
    if not parts:
        return [message]
    for answer in answers:
        needle = normalize(answer)
        if needle:
            for part in parts:
                if needle in normalize(part) and len(content_words(part)) >= MIN_CONTENT_WORDS:
                    return [part]
    target = content_words(question + " " + " ".join(answers))
    long_enough = [p for p in parts if len(content_words(p)) >= MIN_CONTENT_WORDS] or parts
    best = max(len(content_words(p) & target) for p in long_enough)
    return [p for p in long_enough if len(content_words(p) & target) == best]


@lru_cache(maxsize=65536)
def lines(text: str) -> tuple[str, ...]:
    """The units of a value: items of a JSON list (a context of memories), else text lines."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, list):
            return tuple(item if isinstance(item, str) else json.dumps(item) for item in data)
    return tuple(line for line in unescape(text).splitlines() if line.strip())


def containment(sentence_words: frozenset[str], text: str) -> float:
    """Best share of ``sentence_words`` found in a single line of ``text``."""
    if not sentence_words:
        return 0.0
    best = 0.0
    for line in lines(text):
        best = max(best, len(sentence_words & content_words(line)) / len(sentence_words))
        if best >= 1.0:
            break
    return best


def hold_threshold(sentence_words: frozenset[str]) -> float:
    return 1.0 if len(sentence_words) <= SHORT_SENTENCE_WORDS else HOLD_THRESHOLD


def holds(sentence_words: frozenset[str], texts: Iterable[str | None]) -> bool:
    needed = hold_threshold(sentence_words)
    return any(containment(sentence_words, text) >= needed for text in texts if text is not None)
