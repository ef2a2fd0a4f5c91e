"""What every reference system shares: facts with provenance, context items, results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memtrace.systems.params import Params
from memtrace.systems.text import sentences
from memtrace.taxonomy import ErrorType
from memtrace.tracing import Var


def source_key(dia_id: str, sentence: int) -> str:
    """Provenance unit: one sentence of one message (``D1:3#0``)."""
    return f"{dia_id}#{sentence}"


@dataclass(frozen=True, slots=True)
class Fact:
    text: str
    speaker: str
    sources: frozenset[str]


@dataclass(slots=True)
class Item:
    """One unit of the answer context: a memory, a chunk or a window message."""

    key: str
    text: str
    date: str
    sources: frozenset[str]
    var: Var


def message_item(dia_id: str, speaker: str, text: str, date: str, var: Var) -> Item:
    """A whole message as a context item (naive RAG and long-context keep raw messages)."""
    keys = frozenset(source_key(dia_id, i) for i in range(max(1, len(sentences(text)))))
    return Item(dia_id, f"{speaker}: {text}", date, keys, var)


# The anchor prefix of a RetrievalError planted at the EverMemOS-style final rerank (the plain
# case id anchors one at its hybrid search).
RERANK_ANCHOR = "rerank:"


@dataclass(frozen=True, slots=True)
class Fault:
    """A planted fault: ``anchor`` is a dia_id (construction faults) or a case id."""

    id: str
    type: ErrorType
    target: str
    anchor: str
    sources: frozenset[str]


@dataclass(frozen=True, slots=True)
class Applied:
    fault_id: str
    op_id: str
    detail: str


@dataclass(frozen=True, slots=True)
class RepairPlan:
    """An executed counterfactual for one case: the operations at ``steps`` (step keys, see
    ``System.step``) have their output corrected by an oracle that restores the evidence
    sentences ``sources`` (``D1:3#0``) of the case; every other operation runs as it is.
    ``precise``: a repaired search returns only the results holding the evidence (no
    distractors, any size) instead of the same number of results with the evidence in them."""

    steps: frozenset[str]
    sources: frozenset[str]
    precise: bool = False


@dataclass(frozen=True, slots=True)
class Repaired:
    """What one repair changed: the step, the op id (the original trace's), what was added or
    kept, and the error type that restoring it undoes."""

    step: str
    op_id: str
    detail: str
    error_type: ErrorType


@dataclass(slots=True)
class Loss:
    """Where one evidence sentence was lost in a run (for derived labels)."""

    type: ErrorType
    op_id: str


@dataclass(slots=True)
class QuestionResult:
    case_id: str
    category: str
    passed: bool
    prediction: str
    keys: tuple[str, ...] = ()  # evidence key sentences (empty when the evidence is unusable)
    missing: dict[str, Loss | None] = field(default_factory=dict)  # key not in context -> where
    qa_op: str = ""


@dataclass(slots=True)
class ConversationRun:
    sample_id: str
    trace_id: str
    results: list[QuestionResult] = field(default_factory=list)
    applied: list[Applied] = field(default_factory=list)
    fact_counts: dict[str, int] = field(default_factory=dict)  # dia_id -> facts extracted
    steps: dict[str, str] = field(default_factory=dict)  # op id -> step key (traced runs)
    repaired: list[Repaired] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Action:
    """One memory update decision."""

    event: str  # ADD | UPDATE | DELETE | NONE
    memory_id: str | None = None
    text: str | None = None

    def as_json(self) -> dict[str, str | None]:
        return {"event": self.event, "id": self.memory_id, "text": self.text}


@dataclass(frozen=True, slots=True)
class Similar:
    memory_id: str
    text: str
    score: float


class Backend(Protocol):
    """The LLM steps of the reference systems (offline rules or an OpenAI-compatible model)."""

    name: str

    def extract(
        self, prompt: str, speaker: str, dia_id: str, text: str, params: Params
    ) -> list[Fact]: ...

    def decide(
        self, prompt: str, fact: Fact, similar: Sequence[Similar], params: Params
    ) -> list[Action]: ...

    def answer(
        self, prompt: str, question: str, context: Sequence[Item], params: Params
    ) -> str: ...

    def judge(
        self, prompt: str, question: str, gold: str, prediction: str, params: Params
    ) -> str: ...
