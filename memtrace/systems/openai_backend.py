"""The OpenAI-compatible backend: every LLM step through ``memtrace.llm.LLMClient``.

Structured steps (facts, update actions, judge label) are JSON validated against pydantic
models; each call's token usage is added to the current operation's metadata.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from memtrace.llm import LLMClient, Usage
from memtrace.systems.core import Action, Fact, Item, Similar, source_key
from memtrace.systems.params import Params
from memtrace.systems.text import content, sentences
from memtrace.tracing import current_operation


class FactsReply(BaseModel):
    facts: list[str]


class ActionReply(BaseModel):
    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    id: str | None = None
    text: str | None = None


class DecisionReply(BaseModel):
    actions: list[ActionReply]


class JudgeReply(BaseModel):
    reasoning: str = ""
    label: str


def fact_sources(fact: str, dia_id: str, text: str) -> frozenset[str]:
    """The message sentences a paraphrased fact came from: those sharing content words with it
    (all sentences when none does), so provenance survives the model's rewording."""
    words = set(content(fact))
    parts = sentences(text) or [text]
    hits = [i for i, s in enumerate(parts) if words & set(content(s))]
    return frozenset(source_key(dia_id, i) for i in hits or range(len(parts)))


class OpenAIBackend:
    name = "openai"

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.usage = Usage()

    def count(self, usage: Usage) -> None:
        """Add a call's usage to the total and to the current operation's metadata."""
        self.usage = self.usage + usage
        op = current_operation()
        if op is not None:
            for key, value in (("tokens_in", usage.tokens_in), ("tokens_out", usage.tokens_out)):
                op.metadata[key] = int(op.metadata.get(key, 0)) + value

    def extract(
        self, prompt: str, speaker: str, dia_id: str, text: str, params: Params
    ) -> list[Fact]:
        reply = self.client.complete_json(f"{speaker}: {text}", FactsReply, system=prompt)
        self.count(reply.usage)
        facts = []
        for fact in (f.strip() for f in reply.value.facts):
            if fact:
                named = fact if fact.startswith(f"{speaker}") else f"{speaker}: {fact}"
                facts.append(Fact(named, speaker, fact_sources(fact, dia_id, text)))
        return facts

    def decide(
        self, prompt: str, fact: Fact, similar: Sequence[Similar], params: Params
    ) -> list[Action]:
        request = {
            "new_fact": fact.text,
            "memories": [{"id": s.memory_id, "text": s.text} for s in similar],
        }
        reply = self.client.complete_json(json.dumps(request), DecisionReply, system=prompt)
        self.count(reply.usage)
        known = {s.memory_id for s in similar}
        actions = []
        for a in reply.value.actions:
            if a.event == "ADD":
                actions.append(Action("ADD", None, a.text or fact.text))
            elif a.id in known:  # a model may invent ids: only the memories it was shown count
                actions.append(Action(a.event, a.id, a.text))
        return actions

    def answer(self, prompt: str, question: str, context: Sequence[Item], params: Params) -> str:
        memories = "\n".join(f"- [{item.date}] {item.text}" for item in context)
        reply = self.client.complete(
            f"Memories:\n{memories or '(none)'}\n\nQuestion: {question}\nAnswer:", system=prompt
        )
        self.count(reply.usage)
        return reply.text.strip()

    def judge(self, prompt: str, question: str, gold: str, prediction: str, params: Params) -> str:
        request = f"Question: {question}\nGold answer: {gold}\nGenerated answer: {prediction}"
        reply = self.client.complete_json(request, JudgeReply, system=prompt)
        self.count(reply.usage)
        return json.dumps(reply.value.model_dump())
