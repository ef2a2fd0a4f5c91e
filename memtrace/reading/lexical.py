"""Lexical reading: tokens, stems, sentences, and whether a text holds a sentence's words.

The fallback sense of every reader (``memtrace.reading``), and the whole of the ``lexical`` one.
Thresholds (documented in docs/attribution.md):

* ``HOLD_THRESHOLD``: a text *holds* an evidence sentence when at least this share of the
  sentence's content words (lower-cased, stop words dropped, inflections stemmed) occur in one
  sentence of one line of the text. Lines, because contexts and memory stores list one memory
  per line (a whole context would match almost anything); sentences, because a memory written
  as one long paragraph holds many statements, and words of several of them match nothing.
* A sentence of at most ``SHORT_SENTENCE_WORDS`` content words must be held completely: with 3
  of 4 words, "signed up for a pottery class yesterday" matches "made it in pottery class
  yesterday".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache

HOLD_THRESHOLD = 0.75
SHORT_SENTENCE_WORDS = 4
MIN_CONTENT_WORDS = 2  # a sentence with fewer is never a key sentence when a longer one exists

_STOP_TEXT = """a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves also really so just yeah oh wow hey
im ive id youre thats its dont didnt got get gets like lot lots thing things"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
YES_NO = frozenset({"yes", "no"})

_WORD = re.compile(r"[a-z0-9]+")
_POSSESSIVE = re.compile(r"['\u2019]s\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


# Past forms that suffix stripping cannot bring back to their verb ("grew" / "grow"); not
# "made": a question's "What made ..." would then match every sentence that "makes" something.
_IRREGULAR_TEXT = """arose arise ate eat awoke awake became become began begin bent bend bit bite
bled bleed blew blow bought buy brought bring broke break built build burnt burn caught catch
chose choose came come cost cost crept creep dealt deal dug dig dove dive drew draw dreamt dream
drank drink drove drive fed feed felt feel fought fight found find fled flee flew fly forgot forget
forgave forgive froze freeze gave give went go grew grow hung hang heard hear hid hide held hold
hurt hurt kept keep knew know laid lay led lead leapt leap learnt learn left leave lent lend lay lie
lit light lost lose meant mean met meet paid pay quit quit ran run rang ring rode ride
rose rise said say sang sing sank sink sat sit saw see sought seek sold sell sent send set set shook
shake shone shine shot shoot showed show shrank shrink shut shut slept sleep slid slide spoke speak
spent spend spun spin split split spread spread sprang spring stood stand stole steal stuck stick
stung sting strode stride struck strike swore swear swept sweep swam swim swung swing taught teach
took take tore tear told tell thought think threw throw understood understand woke wake wore wear
won win wrote write broken break chosen choose done do drawn draw driven drive eaten eat fallen fall
fell fall flown fly forgotten forget frozen freeze given give gone go grown grow hidden hide known
know ridden ride risen rise seen see shaken shake shown show spoken speak stolen steal sung sing
swum swim taken take thrown throw torn tear woken wake worn wear written write"""
_IRREGULAR = dict(zip(_IRREGULAR_TEXT.split()[::2], _IRREGULAR_TEXT.split()[1::2], strict=True))
_KEEP_DOUBLE = frozenset("lsz")  # "called" -> "call", "kisses" -> "kiss"; "planned" -> "plan"


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A word's stem, so that inflections of one word meet: "moved", "moves", "moving" and
    "move" -> "mov"; "tries" / "tried" -> "tri"; "planned" -> "plan"; "grew" -> "grow"."""
    word = _IRREGULAR.get(word, word)
    for suffix in ("ies", "ied", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("i" if suffix in ("ies", "ied") else "")
            if suffix in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in _KEEP_DOUBLE:
                word = word[:-1]
            break
    if len(word) > 3 and word[-1] == "e":
        return word[:-1]
    if len(word) >= 3 and word[-1] == "y":
        return word[:-1] + "i"
    return word


def _tokens(text: str) -> list[str]:
    """Lower-cased words; a possessive "'s" is dropped ("Ana's" -> "ana"), other apostrophes
    joined ("don't" -> "dont")."""
    text = _POSSESSIVE.sub("", text.lower())
    return _WORD.findall(text.replace("'", "").replace("\u2019", ""))


@lru_cache(maxsize=262144)  # memory and context lines recur across the cases of a trace
def content_words(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in _tokens(text) if w not in STOP_WORDS)


@lru_cache(maxsize=262144)
def ranking_words(text: str) -> frozenset[str]:
    """Content words as a plain lexical ranker sees them: apostrophes joined ("Ana's" ->
    "anas"), only "-ing", "-ed", "-es", "-s" stripped. ``answer_model`` predicts which context
    items such a ranker puts first (what an extractive answer step quotes), a question apart
    from whether a text states a sentence (``content_words``, which normalizes more)."""
    words = _WORD.findall(text.lower().replace("'", "").replace("\u2019", ""))
    return frozenset(_strip_suffix(w) for w in words if w not in STOP_WORDS)


@lru_cache(maxsize=65536)
def _strip_suffix(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def word_forms(text: str) -> dict[str, str]:
    """Each content word of ``text`` (as ``content_words`` has it) -> the word as written."""
    forms: dict[str, str] = {}
    for word in _tokens(text):
        if word not in STOP_WORDS:
            forms.setdefault(stem(word), word)
    return forms


def unescape(text: str) -> str:
    """Values are often JSON/Python text of strings: make escaped newlines real lines again."""
    return text.replace("\\n", "\n").replace('\\"', '"')


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def normalize(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


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


@lru_cache(maxsize=65536)
def units(text: str) -> tuple[frozenset[str], ...]:
    """The content words of each sentence of each line of a value (``lines``): what one
    statement of a memory or context says. A memory written as one long paragraph (an episode)
    holds many statements on one line, and words taken from several of them match nothing."""
    return tuple(content_words(part) for line in lines(text) for part in sentences(line))


def containment(sentence_words: frozenset[str], text: str) -> float:
    """Best share of ``sentence_words`` found in a single sentence of ``text`` (``units``)."""
    if not sentence_words:
        return 0.0
    best = 0.0
    for words in units(text):
        best = max(best, len(sentence_words & words) / len(sentence_words))
        if best >= 1.0:
            break
    return best


Postings = dict[str, list[tuple[int, int]]]


# The memories of one trace before one question, read for each of its sentences: a case worker
# uses its entry while it reads that case, so two per worker do; each holds a posting per word of
# every memory (tens of MB on a timeline of 100k requests), so not many more.
@lru_cache(maxsize=16)
def _postings(texts: tuple[str, ...]) -> Postings:
    """Content word -> the (text, statement) positions that hold it."""
    postings: Postings = {}
    for position, text in enumerate(texts):
        for statement, words in enumerate(units(text)):
            for word in words:
                postings.setdefault(word, []).append((position, statement))
    return postings


def containment_each(sentence_words: frozenset[str], texts: tuple[str, ...]) -> list[float]:
    """``containment`` of the sentence in each of ``texts``, the same numbers: counted from the
    sentence's words' postings, so reading a trace's hundreds of memories costs what the
    sentence's words occur in, not a look at every statement."""
    best = [0.0] * len(texts)
    if not sentence_words:
        return best
    postings = _postings(texts)
    shared: dict[tuple[int, int], int] = {}
    for word in sentence_words:
        for place in postings.get(word, ()):
            shared[place] = shared.get(place, 0) + 1
    for (position, _), count in shared.items():
        best[position] = max(best[position], count / len(sentence_words))
    return best


def hold_threshold(sentence_words: frozenset[str]) -> float:
    return 1.0 if len(sentence_words) <= SHORT_SENTENCE_WORDS else HOLD_THRESHOLD


def holds(sentence_words: frozenset[str], texts: Iterable[str | None]) -> bool:
    needed = hold_threshold(sentence_words)
    return any(containment(sentence_words, text) >= needed for text in texts if text is not None)
