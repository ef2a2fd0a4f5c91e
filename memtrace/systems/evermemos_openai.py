"""The EverMemOS-style system's episode steps through an OpenAI-compatible model.

Each step is one JSON call validated against a pydantic model (one repair round in
``LLMClient``); usage lands on the current operation like the shared backend's. A boundary
reply that cannot be had counts as "no split" and a failed sufficiency check as "sufficient",
as EverMemOS does; an episode or event log that cannot be had is an error (nothing to store).
Provenance: each episode sentence and atomic fact is mapped back to the message sentences it
shares content words with (``fact_sources``), so a model's rewording keeps its sources.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, Field

from memtrace.errors import LLMError
from memtrace.systems.core import Backend, Fact
from memtrace.systems.evermemos_steps import Boundary, Episode, EventLog, Said, Sufficiency
from memtrace.systems.openai_backend import OpenAIBackend, fact_sources
from memtrace.systems.params import Params
from memtrace.systems.text import content, sentences


class BoundaryReply(BaseModel):
    reasoning: str = ""
    should_end: bool
    confidence: float = 1.0
    topic_summary: str = ""


class EpisodeReply(BaseModel):
    title: str
    content: str


class EventLogReply(BaseModel):
    time: str = ""
    atomic_fact: list[str] = Field(min_length=1)


class SufficiencyReply(BaseModel):
    is_sufficient: bool
    reasoning: str = ""
    key_information_found: list[str] = []
    missing_information: list[str] = []


class QueriesReply(BaseModel):
    queries: list[str]


def _cell(cell: Sequence[Said]) -> str:
    return "\n".join(said.line() for said in cell)


def _sourced(text: str, cell: Sequence[Said]) -> frozenset[str]:
    """The message sentences of ``cell`` a model's sentence came from (by shared content
    words; the whole cell when none shares one)."""
    words = set(content(text))
    found = [s for s in cell if words & set(content(s.text))] or list(cell)
    return frozenset().union(*(fact_sources(text, s.dia_id, s.text) for s in found))


class OpenAIEpisodeSteps:
    def __init__(self, backend: Backend) -> None:
        if not isinstance(backend, OpenAIBackend):
            raise TypeError(f"OpenAIEpisodeSteps needs the openai backend, got {backend.name}")
        self.backend = backend

    def boundary(
        self, prompt: str, history: Sequence[Said], new: Said, gap: str, params: Params
    ) -> Boundary:
        request = (
            f"Episode so far:\n{_cell(history)}\n\nTime since the last message: "
            f"{gap or 'none (same session)'}\n\nNew message:\n{new.line()}"
        )
        try:
            reply = self.backend.client.complete_json(request, BoundaryReply, system=prompt)
        except LLMError as exc:  # EverMemOS: a detector that keeps failing does not split
            return Boundary(False, f"no decision ({exc}); not split")
        self.backend.count(reply.usage)
        value = reply.value
        return Boundary(value.should_end, value.reasoning, value.confidence, value.topic_summary)

    def episode(self, prompt: str, cell: Sequence[Said], params: Params) -> Episode:
        reply = self.backend.client.complete_json(_cell(cell), EpisodeReply, system=prompt)
        self.backend.count(reply.usage)
        speakers = {said.speaker for said in cell}
        parts = tuple(
            Fact(sentence, next(iter(sorted(speakers))), _sourced(sentence, cell))
            for sentence in sentences(reply.value.content)
        )
        return Episode(reply.value.title.strip(), parts)

    def event_log(self, prompt: str, cell: Sequence[Said], params: Params) -> EventLog:
        reply = self.backend.client.complete_json(_cell(cell), EventLogReply, system=prompt)
        self.backend.count(reply.usage)
        speakers = sorted({said.speaker for said in cell})
        facts = tuple(
            Fact(fact.strip(), speakers[0], _sourced(fact, cell))
            for fact in reply.value.atomic_fact
            if fact.strip()
        )
        return EventLog(reply.value.time or (cell[0].date if cell else ""), facts)

    def sufficiency(
        self, prompt: str, question: str, units: Sequence[str], params: Params
    ) -> Sufficiency:
        memories = "\n".join(f"- {u}" for u in units) or "(none)"
        request = f"Question: {question}\n\nMemories:\n{memories}"
        try:
            reply = self.backend.client.complete_json(
                request, SufficiencyReply, system=prompt, temperature=0
            )
        except LLMError as exc:  # EverMemOS: any error counts as sufficient
            return Sufficiency(True, f"no check ({exc}); taken as sufficient")
        self.backend.count(reply.usage)
        value = reply.value
        return Sufficiency(value.is_sufficient, value.reasoning, tuple(value.missing_information))

    def refine(
        self,
        prompt: str,
        question: str,
        units: Sequence[str],
        sufficiency: Sufficiency,
        params: Params,
    ) -> list[str]:
        request = json.dumps(
            {"question": question, "memories": list(units), "missing": list(sufficiency.missing)}
        )
        try:
            reply = self.backend.client.complete_json(request, QueriesReply, system=prompt)
        except LLMError:  # no refined queries: round 2 searches with the question itself
            return [question]
        self.backend.count(reply.usage)
        queries = [q.strip() for q in reply.value.queries if q.strip()]
        return queries[: params.refined_queries] or [question]
