"""The data attribution works on: what Cypher returns for a case, trails, candidates, verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from memtrace.reading.copying import Copying
from memtrace.taxonomy import ErrorType, FailureMode


@dataclass(frozen=True)
class CaseScores:
    """One trace's cases and those without a score (attribution takes only failed cases)."""

    trace_id: str
    cases: int
    unscored: tuple[str, ...]


@dataclass(frozen=True)
class OpRef:
    id: str
    seq: int
    kind: str = "other"
    name: str = ""


@dataclass(frozen=True)
class Anchor:
    """One case as ``case_anchor.cypher`` returns it."""

    trace_id: str
    case_id: str
    question: str
    golden_answers: tuple[str, ...]
    prediction: str | None
    failed: bool | None
    query_id: str | None
    answer: OpRef | None
    retrievals: tuple[OpRef, ...]
    evidence_ids: tuple[str, ...]


@dataclass(frozen=True)
class Memory:
    """A memory-store variable version and its fate (``memories.cypher``)."""

    id: str
    seq: int
    value: str
    creator: OpRef | None
    next_id: str | None
    next_seq: int | None
    next_creator: OpRef | None
    deleted_by: OpRef | None


@dataclass(frozen=True)
class FlowStep:
    """One FLOWS_TO step reached from an evidence message (``evidence_flow.cypher``)."""

    message_id: str
    step: int
    op: OpRef
    source_id: str
    target_id: str
    target_value: str | None


@dataclass(frozen=True)
class Messages:
    """A trace's message variables, read and parsed once: the corpus of retrieved evidence."""

    corpus: tuple[tuple[str, str], ...]  # (id, spoken text), in execution order
    seqs: Mapping[str, int]
    speakers: Mapping[str, str]  # who said each message, where its value says
    dates: Mapping[str, date]  # the day each message was said, where its value says


@dataclass(frozen=True)
class Evidence:
    id: str
    text: str  # the spoken text of the message
    rank: int = 0  # 0 for gold evidence, 1.. for retrieved
    seq: int = 0  # the message variable's seq: nothing before it can have lost it
    speaker: str | None = None  # who said it, where the message's value says
    said_on: date | None = None  # the day it was said, where the message's value says
    # retrieved evidence: it covers the gold answer (at least half its words); False when no
    # retrieved message did and this is only the best-ranked statement
    covers: bool = True


@dataclass(frozen=True)
class CaseGraph:
    """Everything the judges need about one case, fetched once."""

    anchor: Anchor
    evidence: tuple[Evidence, ...]
    flow: tuple[FlowStep, ...]
    memories: tuple[Memory, ...]
    context: tuple[tuple[str, str], ...]  # (variable id, value) read by the answer op
    candidate_ops: tuple[tuple[OpRef, str], ...] = ()  # (op, role) from candidates.cypher
    # the trace's message sentences, to tell a statement copying one from a rewrite
    # (``reading.copying``; None: no message): what ``auto`` reads each statement by
    copying: Copying | None = None


@dataclass(frozen=True)
class OperationView:
    """One operation with its inputs and outputs as a judge sees it (``operation_views.cypher``);
    inputs and outputs are ``{id, name, version, class_name, category, value}`` maps, values cut
    to a budget."""

    id: str
    name: str | None
    kind: str | None
    seq: int
    inputs: tuple[dict[str, Any], ...]
    outputs: tuple[dict[str, Any], ...]
    deletes: tuple[str, ...]


TrailStage = Literal["context", "stored", "lost"]  # not taxonomy's pipeline stage
# "key": the message's key sentence; "answer part": another sentence of it holding words of the
# gold answer (followed too: the answer may need both)
TrailRole = Literal["key", "answer part"]


@dataclass(frozen=True)
class Trail:
    """Where one sentence of an evidence message went (``key_sentence``: the sentence followed)."""

    message_id: str
    key_sentence: str
    stage: TrailStage
    stop: OpRef | None  # the op where the trail ends; None when it reached the context
    error_type: ErrorType | None
    detail: str
    holders: tuple[str, ...] = ()  # memory versions that held the sentence
    role: TrailRole = "key"
    answer_words: tuple[str, ...] = ()  # the gold answer's content words the sentence holds
    # False for an answer-part sentence that was lost while every gold-answer word it holds still
    # reached the answer's context: its loss cannot explain the wrong answer
    needed: bool = True
    # False when the reader could not tell whether a memory or the context held the sentence
    # (a meaning similarity in its blind band): a verdict resting on this trail is a guess
    sure: bool = True


@dataclass(frozen=True)
class Candidate:
    op: OpRef
    role: str  # why it is a candidate: extraction, overwrite, deletion, retrieval, answer, ...
    message_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """A judge's answer for one candidate."""

    faulty: bool
    decisive: bool
    error_type: ErrorType | None
    reason: str
    confidence: float
    complete: bool = True  # every field was answered (none took its default)
    failure_mode: FailureMode | None = None


@dataclass
class Verdict:
    trace_id: str
    case_id: str
    op_id: str | None
    error_type: ErrorType | None
    reason: str
    judge: str
    model: str | None = None
    confidence: float = 0.0
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    strategy: str = "linear"
    evidence: str = "gold"
    error: str | None = None  # set when attributing this case failed
    overridden_from: str | None = None  # the offline proposal's op id, when the LLM moved it
    overridden_type: ErrorType | None = None  # the offline proposal's error type, idem
    replays: int = 0  # executed counterfactuals the judge ran
    replay_outcomes: str | None = None  # JSON: per candidate decisive / fix-alone outcomes
    checked: list[str] = field(default_factory=list)  # candidate op ids the judge looked at
    failure_mode: FailureMode | None = None  # a named refinement of error_type (taxonomy.py)
    reading: str | None = None  # the sense the trails read with: "lexical", "meaning:<model>"
