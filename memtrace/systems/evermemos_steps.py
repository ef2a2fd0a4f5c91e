"""The LLM steps of the EverMemOS-style system and their offline rules.

Five steps EverMemOS asks a model for: a boundary decision per new message, an episode (title
and narrative) and an event log (time and atomic facts) per finished MemCell, a sufficiency
check of round-1 results and refined queries when they fall short. The offline rules stand in
for each: time gap and topic shift, sentence selection, lexical coverage, query expansion.
The answer and the judge are the shared ``Backend`` steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memtrace.systems.core import Fact
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.params import Params
from memtrace.systems.temporal import annotate
from memtrace.systems.text import content

TITLE_WORDS = 3  # offline titles: the cell's most frequent content words


@dataclass(frozen=True, slots=True)
class Said:
    """One buffered message."""

    dia_id: str
    speaker: str
    text: str
    date: str

    def line(self) -> str:
        return f"[{self.date}] {self.speaker}: {self.text}"


@dataclass(frozen=True, slots=True)
class Boundary:
    should_end: bool
    reasoning: str
    confidence: float = 1.0
    topic: str = ""

    def as_json(self) -> dict[str, object]:
        return {
            "should_end": self.should_end,
            "reasoning": self.reasoning,
            "confidence": self.confidence,
            "topic_summary": self.topic,
        }


@dataclass(frozen=True, slots=True)
class Episode:
    """A MemCell's narrative; ``parts`` are its per-message pieces with their sources."""

    title: str
    parts: tuple[Fact, ...]

    @property
    def content(self) -> str:
        return " ".join(p.text for p in self.parts)


@dataclass(frozen=True, slots=True)
class EventLog:
    time: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True, slots=True)
class Sufficiency:
    sufficient: bool
    reasoning: str
    missing: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "is_sufficient": self.sufficient,
            "reasoning": self.reasoning,
            "missing_information": list(self.missing),
        }


class EpisodeSteps(Protocol):
    """What the EverMemOS-style system asks beyond the shared ``Backend`` steps."""

    def boundary(
        self, prompt: str, history: Sequence[Said], new: Said, gap: str, params: Params
    ) -> Boundary: ...

    def episode(self, prompt: str, cell: Sequence[Said], params: Params) -> Episode: ...

    def event_log(self, prompt: str, cell: Sequence[Said], params: Params) -> EventLog: ...

    def sufficiency(
        self, prompt: str, question: str, units: Sequence[str], params: Params
    ) -> Sufficiency: ...

    def refine(
        self,
        prompt: str,
        question: str,
        units: Sequence[str],
        sufficiency: Sufficiency,
        params: Params,
    ) -> list[str]: ...


class OfflineEpisodeSteps:
    """Deterministic rules; statements are chosen as the mem0-style offline extractor does
    (sentences with enough content words that are not questions)."""

    def __init__(self) -> None:
        self._statements = OfflineBackend()
        self._words: dict[str, frozenset[str]] = {}  # unit text -> its content words

    def words(self, text: str) -> frozenset[str]:
        found = self._words.get(text)
        if found is None:
            found = self._words[text] = frozenset(content(text))
        return found

    def boundary(
        self, prompt: str, history: Sequence[Said], new: Said, gap: str, params: Params
    ) -> Boundary:
        """End the episode at a time gap (a new session), or at a topic shift: a message with
        enough content words of which almost none were said in the last few messages."""
        if gap:
            return Boundary(True, f"time gap: {gap}", topic=_title(history))
        if len(history) < params.boundary_min_messages:
            return Boundary(False, "too few messages for an episode yet")
        words = set(content(new.text))
        recent = {w for said in history[-params.boundary_window :] for w in content(said.text)}
        if len(words) >= params.boundary_min_words:
            shared = len(words & recent) / len(words)
            if shared < params.boundary_topic_overlap:
                reason = f"topic shift: {shared:.2f} of the new message's words were said recently"
                return Boundary(True, reason, topic=_title(history))
        return Boundary(False, "same topic")

    def _facts(self, cell: Sequence[Said], params: Params) -> list[Fact]:
        return [
            fact
            for said in cell
            for fact in self._statements.extract("", said.speaker, said.dia_id, said.text, params)
        ]

    def episode(self, prompt: str, cell: Sequence[Said], params: Params) -> Episode:
        return Episode(_title(cell), tuple(self._facts(cell, params)))

    def event_log(self, prompt: str, cell: Sequence[Said], params: Params) -> EventLog:
        """One atomic fact per statement, relative times resolved against the message date."""
        dates = {said.dia_id: said.date for said in cell}
        facts = []
        for fact in self._facts(cell, params):
            dia_id = next(iter(sorted(fact.sources))).split("#")[0]
            facts.append(Fact(annotate(fact.text, dates[dia_id]), fact.speaker, fact.sources))
        return EventLog(cell[0].date if cell else "", tuple(facts))

    def sufficiency(
        self, prompt: str, question: str, units: Sequence[str], params: Params
    ) -> Sufficiency:
        """Sufficient when the units hold enough of the question's content words."""
        wanted = list(dict.fromkeys(content(question)))
        if not wanted:
            return Sufficiency(True, "the question has no content words to look for")
        found = frozenset().union(*(self.words(unit) for unit in units))
        missing = tuple(w for w in wanted if w not in found)
        share = 1 - len(missing) / len(wanted)
        sufficient = share >= params.sufficiency_threshold
        return Sufficiency(sufficient, f"{share:.2f} of the question's words found", missing)

    def refine(
        self,
        prompt: str,
        question: str,
        units: Sequence[str],
        sufficiency: Sufficiency,
        params: Params,
    ) -> list[str]:
        """Query expansion: the missing words alone, the question's content words, and the
        missing words with the best unit's most frequent words."""
        wanted = " ".join(dict.fromkeys(content(question)))
        missing = " ".join(sufficiency.missing)
        context = " ".join(w for w, _ in Counter(content(units[0])).most_common(4)) if units else ""
        queries = [missing, wanted, f"{missing} {context}".strip()]
        unique = [q for q in dict.fromkeys(queries) if q]
        return unique[: params.refined_queries]


def _title(cell: Sequence[Said]) -> str:
    speakers = " and ".join(dict.fromkeys(said.speaker for said in cell))
    words = Counter(w for said in cell for w in content(said.text))
    ranked = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ", ".join(w for w, _ in ranked[:TITLE_WORDS])
    return f"{speakers} on {top}" if top else speakers
