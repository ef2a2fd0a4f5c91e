"""Asking a model what the reader could not tell: does this text still hold what was said?

The hybrid judge's reader (``HybridJudge``): a reading its own reader is sure of stands; one in
the reader's blind band (``Reading.sure`` false: a meaning similarity between "the same" and
"something else") is put to the model as exactly that question, with the gold-answer words the
sentence carries, at most ``budget`` times per case (the LLM judge's budget is a few calls per
case, and the counterfactual checks need theirs). A failed request or a malformed reply leaves
the reader's own reading standing. The client is passed in; this module never opens one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from memtrace.errors import LLMError
from memtrace.prompts import PROMPTS, Prompt
from memtrace.reading import Reader, Reading, read_one_by_one
from memtrace.reading.copying import Copying
from memtrace.reading.lexical import lines
from memtrace.usage import Usage

if TYPE_CHECKING:
    from memtrace.llm import LLMClient

TEXT_BUDGET = 3000  # characters of the text shown (a context of many memories is cut)
SURE_ANSWER = 0.7  # the model's confidence from which its answer counts as sure

HOLDS_SYSTEM = PROMPTS.add(
    Prompt(
        "reading-holds-system-prompt",
        1,
        """[reading-v1] You check memories written by an LLM memory system. A memory keeps what a
message said when it states the same fact, in any words: a synonym, the third person instead of
"I", a date written out instead of "yesterday", several facts merged into one, a summary. It
does not keep it when it states another fact about the same topic, or only part of it.""",
    )
)

HOLDS_PROMPT = PROMPTS.add(
    Prompt(
        "reading-holds-prompt",
        1,
        """A message said: {sentence}
The answer to a question needs from it: {needs}

Text (a memory, or the lines given to the answering step):
{text}

Does this text still state what the message said, as far as the answer needs it?""",
        inputs=("sentence", "needs", "text"),
    )
)


class HoldsReply(BaseModel):
    """Reply to HOLDS_PROMPT."""

    holds: bool = Field(description="the text states what the message said")
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class AskingReader:
    """``reader``, with the model asked where it cannot tell (``budget`` questions)."""

    def __init__(self, client: LLMClient, reader: Reader, budget: int = 1) -> None:
        self.client = client
        self.reader = reader
        self.name = f"{reader.name}+llm:{client.model}"
        self.budget = budget
        self.usage = Usage()
        self.asked = 0

    def read(
        self, sentence: str, texts: Iterable[str | None], needs: frozenset[str] = frozenset()
    ) -> Reading:
        present = [t for t in texts if t is not None]
        reading = self.reader.read(sentence, present, needs)
        if reading.sure or self.asked >= self.budget or not present:
            return reading
        self.asked += 1
        text = "\n".join(line for t in present for line in lines(t))
        prompt = HOLDS_PROMPT.format(
            sentence=sentence,
            needs=", ".join(sorted(needs)) or "(the whole statement)",
            text=text[:TEXT_BUDGET],
        )
        try:
            reply = self.client.complete_json(
                prompt, HoldsReply, system=HOLDS_SYSTEM.text, temperature=0
            )
        except LLMError as exc:
            self.usage = self.usage + (exc.usage or Usage())
            return reading
        self.usage = self.usage + reply.usage
        answer = reply.value
        sure = answer.confidence >= SURE_ANSWER
        return Reading(answer.holds, answer.confidence, sure, f"llm:{self.client.model}")

    def read_each(
        self, sentence: str, texts: Sequence[str], needs: frozenset[str] = frozenset()
    ) -> list[Reading]:
        return read_one_by_one(self, sentence, texts, needs)  # asks in the order of texts

    def for_trace(self, copying: Copying | None) -> Reader:
        return self  # asks beyond the reader already chosen for the case's trace
