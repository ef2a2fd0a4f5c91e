"""Deterministic text utilities of the offline backend: tokens, sentences, overlap scores."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Final

_STOP_TEXT = """a an the and or but if then so of to in on at by for with from about as into over
after before up down out off than too very can will just do does did done have has had having be
is am are was were been being i me my mine myself you your yours yourself he him his she her hers
it its we us our ours they them their theirs this that these those what which who whom whose when
where why how all any both each few more most other some such no nor not only own same s t don
should now really also there here oh yeah yes hey hi wow well lot lots get got would could might
must shall may let like thanks thank much many one ever even go going gonna im ive youre thats
dont didnt cant"""
_ANAPHOR_TEXT = "she he it they this that these those there his her their its"
STOPWORDS: Final[frozenset[str]] = frozenset(_STOP_TEXT.split())
ANAPHORS: Final[frozenset[str]] = frozenset(_ANAPHOR_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_PUNCT = str.maketrans("", "", string.punctuation)


def words(text: str) -> list[str]:
    return [w.replace("'", "") for w in _WORD.findall(text.lower())]


def stem(word: str) -> str:
    """A light suffix stripper: enough to match 'painting'/'paints'/'painted', 'agencies'."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content(text: str) -> list[str]:
    """Stemmed content words, in order."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def normalize(text: str) -> str:
    """LoCoMo/SQuAD answer normalization: lower case, no punctuation, no articles."""
    tokens = text.lower().translate(_PUNCT).split()
    return " ".join(t for t in tokens if t not in {"a", "an", "the"})


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize(prediction).split(), normalize(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)
