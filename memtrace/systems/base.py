"""The skeleton every reference system shares: replay a conversation, then answer and judge.

Subclasses implement ``ingest`` (memory construction for one message), ``retrieve`` (the context
for one question) and ``where_lost`` (provenance of an evidence sentence missing from the
context). Tracing is ambient: with no active tracer every tracing call is a no-op.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, ClassVar, TypeVar

from memtrace.prompts import Prompt
from memtrace.settings import Settings
from memtrace.systems.core import (
    Applied,
    Backend,
    ConversationRun,
    Fact,
    Fault,
    Item,
    Loss,
    QuestionResult,
    Repaired,
    RepairPlan,
    source_key,
)
from memtrace.systems.evidence import evidence
from memtrace.systems.judge import parse_label
from memtrace.systems.locomo import Conversation, Question, Turn
from memtrace.systems.params import Params, parameter, use
from memtrace.systems.prompts import DEFAULTS, JUDGE, QUESTION_ANSWERING, TUNABLE_PROMPTS
from memtrace.systems.rankers import BM25Ranker, Ranker
from memtrace.systems.text import sentences
from memtrace.taxonomy import ErrorType
from memtrace.tracing import (
    Registered,
    Var,
    case,
    current_operation,
    operation,
    read,
    session,
    variable,
)

_DATE = re.compile(r"(\d{1,2} \w+),? (\d{4})")


def session_date(date_time: str) -> str:
    """``1:56 pm on 8 May, 2023`` -> ``8 May 2023``."""
    match = _DATE.search(date_time)
    return f"{match.group(1)} {match.group(2)}" if match else date_time


T = TypeVar("T")


def with_evidence(
    top: list[T],
    extra: Sequence[T],
    holds: Callable[[T], bool],
    *,
    precise: bool = False,
    rank: Callable[[T], int] | None = None,
) -> list[T]:
    """A repaired search's results: ``top`` with each of ``extra`` in the place of the
    lowest-ranked item that holds no evidence, so the answer sees as many items as the system
    gives it (appended when every item holds evidence). ``rank``: each item's place in the
    search's own ranking, by which the results are ordered (an answer step can prefer earlier
    results: the evidence stands where the search ranks it, not last). ``precise``: only the
    items holding evidence, ranked ones first (as they were when none does: nothing to be
    precise about)."""
    if precise:
        return [i for i in [*top, *extra] if holds(i)] or list(top)
    kept = list(top)
    for item in extra:
        spare = [i for i, old in enumerate(kept) if not holds(old)]
        if spare:
            del kept[spare[-1]]
        kept.append(item)
    return sorted(kept, key=rank) if rank is not None else kept


def evidence_facts(dia_id: str, speaker: str, text: str, missing: Sequence[str]) -> list[Fact]:
    """The oracle's facts of a message's evidence sentences ``missing`` (``D1:3#0``) that no
    extracted fact holds: each sentence as a fact and, for a message of several sentences, the
    whole message as another (a sentence alone can lose what it is about: "She gave it to me
    ... it stands for love")."""
    parts = sentences(text) or [text]
    added = []
    for key in missing:
        index = int(key.rpartition("#")[2])
        said = parts[index] if index < len(parts) else text
        added.append(Fact(f"{speaker}: {said}", speaker, frozenset({key})))
    if added and len(parts) > 1:
        keys = frozenset(source_key(dia_id, i) for i in range(len(parts)))
        added.append(Fact(f"{speaker}: {text}", speaker, keys))
    return added


def op_id() -> str:
    op = current_operation()
    return op.id if op else ""


class System(ABC):
    """A memory system memtrace runs. What the rest of memtrace needs to know about it is
    declared here, on the class, and the registries derive from it (``systems/registry.py``):
    its ``name``, how other tools spell it, the fault types ``bench make`` may plant in it, the
    operation that answers, whether it needs an endpoint and how it replays."""

    name: ClassVar[str]
    # other tools' spellings of this system (MemBase: "NaiveRAG"), matched ignoring case
    aliases: ClassVar[tuple[str, ...]] = ()
    # the fault types its pipeline can have (``bench make``); () when faults cannot be planted
    fault_types: ClassVar[tuple[ErrorType, ...]] = ()
    # the operation that answers a question: never repaired (its oracle is the gold answer)
    answer_op: ClassVar[str] = "question-answering"
    # runs only with an OpenAI-compatible endpoint (no offline backend of its own)
    needs_endpoint: ClassVar[bool] = False
    # the backend (answer and judge) a run takes unless told: a system that needs an endpoint
    # answers with it too, so a run given an endpoint reaches it for every call
    default_backend: ClassVar[str] = "offline"
    # The Params fields the system reads (answering and judging read these two): an unguided
    # optimizer moves those of them that have a range. A test checks them against a traced run.
    parameters: ClassVar[tuple[str, ...]] = ("answer_items", "judge_f1_threshold")
    answer_prompt = QUESTION_ANSWERING  # the prompt of the question-answering op
    # the prompts an optimizer may rewrite (an unguided one rewrites all of them)
    tunable_prompts: ClassVar[tuple[str, ...]] = TUNABLE_PROMPTS
    # A replay starts a repaired run at the session of its first repaired step from a deep copy
    # of the memory before that session; a system whose memory lives outside Python objects
    # (Mem0's vector store) is rebuilt from the first session instead.
    replay_snapshots: ClassVar[bool] = True
    # a system that calls a model itself replays only from a trace that recorded its calls
    replay_needs_calls: ClassVar[bool] = False

    def __init__(
        self,
        backend: Backend,
        params: Params | None = None,
        prompts: Mapping[str, Prompt] | None = None,
        faults: Sequence[Fault] = (),
        ranker: Ranker | None = None,
        settings: Settings | None = None,
        repair: RepairPlan | None = None,
        recorded: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.backend = backend
        self.repair = repair  # an executed counterfactual (memtrace.replay); None: run as is
        # the original run's model replies by request digest (in the order it got them), for a
        # replay of a system that calls a model itself (mem0-lib): a request no repair changed
        # is answered from them
        self.recorded = dict(recorded or {})
        self.current_step = ""
        self.settings = settings  # for systems that call an endpoint themselves (mem0-lib)
        self.ranker = ranker or BM25Ranker()
        self.params = params or Params()
        self.prompts = {**DEFAULTS, **(prompts or {})}
        self.faults = list(faults)
        self.run_state = ConversationRun(sample_id="", trace_id="")
        # prompts and the retriever are read by every operation that uses them: registered once
        # per trace (and again when changed), then only marked read
        self._prompt_vars: dict[Prompt, Registered] = {}
        self._retriever_var = parameter("retriever")

    @classmethod
    def native_configs(cls, prompts: Mapping[str, Prompt], params: Params) -> dict[str, Any]:
        """A configuration in the system's own terms, for an application to use: file name ->
        JSON data (none for the reference systems: memtrace's TOML is their configuration)."""
        return {}

    def prompt(self, name: str) -> str:
        """The prompt text, registered as a variable and read by the current operation. A new
        text is a new version of the same variable; its metadata names the prompt's version."""
        prompt = self.prompts[name]
        handle = self._prompt_vars.get(prompt)
        if handle is None:
            handle = self._prompt_vars[prompt] = Registered(
                name, category="prompt", metadata={"prompt_version": prompt.version}
            )
        handle.read(prompt.text)
        return prompt.text

    def record_ranker(self) -> None:
        """The search backend is a parameter of the search operation, like top_k."""
        self._retriever_var.read(self.ranker.name)

    def fault(self, kind: str, anchor: str) -> Fault | None:
        return next((f for f in self.faults if f.type == kind and f.anchor == anchor), None)

    def applied(self, fault: Fault, detail: str) -> None:
        self.run_state.applied.append(Applied(fault.id, op_id(), detail))

    def step(self, key: str) -> bool:
        """Name the current operation for replays: ``key`` is the same logical step in every
        run of the conversation (op ids shift once a repair adds an operation). True when this
        run repairs the step."""
        op = current_operation()
        if op is not None:
            self.run_state.steps[op.id] = key
        self.current_step = key
        return self.repair is not None and key in self.repair.steps

    def repaired(self, detail: str, error_type: ErrorType) -> None:
        """Record what the repair of the current step changed, and the error it undoes."""
        self.run_state.repaired.append(Repaired(self.current_step, op_id(), detail, error_type))

    def repair_sources(self) -> frozenset[str]:
        return self.repair.sources if self.repair is not None else frozenset()

    @property
    def precise_search(self) -> bool:
        """A repaired search keeps only what holds the evidence (``RepairPlan.precise``)."""
        return self.repair is not None and self.repair.precise

    def retrieval_fault(
        self,
        case_id: str,
        ranked: list[T],
        sources: Callable[[T], AbstractSet[str]],
        top_k: int,
        unit: str,
    ) -> list[T]:
        """``ranked`` without the items holding the evidence of a RetrievalError planted for
        ``case_id`` (applied only when that changes the top ``top_k``)."""
        fault = self.fault("RetrievalError", case_id)
        if fault is None:
            return ranked
        kept = [item for item in ranked if not sources(item) & fault.sources]
        if any(sources(item) & fault.sources for item in ranked[:top_k]):
            self.applied(fault, f"left out {len(ranked) - len(kept)} {unit}")
        return kept

    def case_id(self, conv: Conversation, question: Question) -> str:
        return f"locomo-qa-{conv.number}-{question.number}"

    def message_name(self, conv: Conversation, dia_id: str) -> str:
        return f"U{conv.number}:{dia_id}"

    @abstractmethod
    def reset(self) -> None: ...

    @abstractmethod
    def ingest(self, turn: Turn, date: str, message: Var) -> None: ...

    def end_session(self, date: str) -> None:  # noqa: B027 - optional hook
        """Called after the last message of each session (long-context trims its window)."""

    def finish_construction(self) -> None:  # noqa: B027 - optional hook
        """Flush buffered state after the last message (naive RAG's last chunk)."""

    @abstractmethod
    def retrieve(self, query: Var, question: Question, case_id: str) -> tuple[list[Item], Var, str]:
        """The answer context (items and the variable holding them), and the id of the
        operation that built it."""

    @abstractmethod
    def where_lost(self, key: str, search_op: str) -> Loss | None:
        """Where an evidence sentence absent from the context was lost; None if unknown."""

    def run(self, conv: Conversation, only: Collection[str] | None = None) -> ConversationRun:
        """Replay ``conv`` and answer its questions (only the case ids in ``only`` if given)."""
        self.construct(conv)
        self.ask_questions(conv, only)
        return self.run_state

    def construct(
        self,
        conv: Conversation,
        *,
        resume: int = 0,
        checkpoint: Callable[[int, System], None] | None = None,
    ) -> None:
        """Memory construction: every session's messages, then the finalizing step.

        Replays use the two hooks: ``checkpoint(i, self)`` is called before session ``i``
        (0-based; ``len(sessions)`` before the finalizing step), and ``resume=i`` continues a
        system restored from such a checkpoint at session ``i`` instead of starting afresh.
        """
        if not resume:
            self.reset()
            self.run_state = ConversationRun(sample_id=conv.sample_id, trace_id="")
            self.messages: dict[str, Var] = {}
            self.dates: dict[str, str] = {}
        for index, sess in enumerate(conv.sessions):
            if index < resume:
                continue
            if checkpoint is not None:
                checkpoint(index, self)
            date = session_date(sess.date_time)
            with session(
                f"locomo-{conv.number}-session-{sess.number}",
                category="memory_construction",
                metadata={"date_time": sess.date_time},
            ):
                for turn in sess.turns:
                    self.dates[turn.dia_id] = date
                    self.messages[turn.dia_id] = variable(
                        self.message_name(conv, turn.dia_id),
                        {"content": turn.text, "speaker": turn.speaker, "timestamp": date},
                        category="message",
                        metadata={"dia_id": turn.dia_id},
                    )
                    self.ingest(turn, date, self.messages[turn.dia_id])
                self.end_session(date)
        if checkpoint is not None:
            checkpoint(len(conv.sessions), self)
        with session("memory_construction_finalize", category="memory_construction"):
            self.finish_construction()

    def ask_questions(
        self, conv: Conversation, only: Collection[str] | None = None
    ) -> list[QuestionResult]:
        """Answer the questions (those with a case id in ``only``) from the constructed memory."""
        turns = conv.turns()
        results = []
        for question in conv.questions:
            if only is not None and self.case_id(conv, question) not in only:
                continue
            results.append(self.ask(conv, question, turns))
        self.run_state.results.extend(results)
        return results

    def ask(
        self, conv: Conversation, question: Question, turns: Mapping[str, Turn]
    ) -> QuestionResult:
        case_id = self.case_id(conv, question)
        found = evidence(question, turns, self.dates)
        present = [d for d in question.evidence if d in self.messages]
        with session("memory_search", category="memory_search"):
            query = variable(
                case_id,
                question.text,
                category="message & query",
                class_name="query",
                metadata={
                    "evidence": [self.message_name(conv, d) for d in present],
                    "question_type": question.category,
                },
            )
            context, context_var, search_op = self.retrieve(query, question, case_id)
        with session("memory_evaluation", category="memory_evaluation"):
            prediction, prediction_var, qa_op = self.answer(
                query, case_id, question, context, context_var
            )
            passed = self.judge(query, question, case_id, prediction_var, prediction)
        in_context = self.in_context(context, found.keys, turns)
        case(
            id=case_id,
            query=query.id,
            prediction=prediction_var.id or None,
            golden_answers=[question.answer],
            judge_score=1.0 if passed else 0.0,
            category=question.category,
            evidence=[self.messages[d].id for d in present],
            missing_evidence=[d for d in question.evidence if d not in self.messages],
            metadata={"evidence_keys": list(found.keys), "evidence_supported": found.supported},
        )
        return QuestionResult(
            case_id=case_id,
            category=question.category,
            passed=passed,
            prediction=prediction,
            keys=found.keys if found.supported else (),
            missing={k: self.where_lost(k, search_op) for k in found.keys if k not in in_context},
            qa_op=qa_op,
        )

    def in_context(
        self, context: Sequence[Item], keys: Sequence[str], turns: Mapping[str, Turn]
    ) -> set[str]:
        """The key sentences (``D1:3#0``) the answer's context holds: by the provenance of its
        items (a system that keeps none reads their text instead)."""
        return {k for item in context for k in item.sources}

    def answer(
        self, query: Var, case_id: str, question: Question, context: list[Item], context_var: Var
    ) -> tuple[str, Var, str]:
        with operation(self.answer_op, category="evaluation", kind="generation"):
            self.step(f"answer:{case_id}")  # never repaired: the answer always runs for real
            read(query, context_var)
            prompt = self.prompt(self.answer_prompt)
            # the offline stand-in's knob: how much of the context its answer quotes
            use(self.params, "answer_items")
            usable = context
            fault = self.fault("ResponseError", case_id)
            if fault is not None:
                usable = [item for item in context if not item.sources & fault.sources]
                if len(usable) < len(context):
                    self.applied(fault, f"answered ignoring {len(context) - len(usable)} items")
            text = self.backend.answer(prompt, question.text, usable, self.params)
            prediction = variable(
                case_id,
                text,
                category="llm_response",
                class_name="prediction",
                sources=(query, context_var),
            )
            return text, prediction, op_id()

    def judge(
        self, query: Var, question: Question, case_id: str, prediction: Var, text: str
    ) -> bool:
        with operation("llm-judge", category="evaluation", kind="judge"):
            self.step(f"judge:{case_id}")
            read(query, prediction)
            prompt = self.prompt(JUDGE)
            use(self.params, "judge_f1_threshold")
            gold = variable(case_id, [question.answer], class_name="golden_answers")
            read(gold)
            response = self.backend.judge(prompt, question.text, question.answer, text, self.params)
            response_var = variable(
                case_id, response, class_name="judge_response", sources=(prediction, gold)
            )
            passed = parse_label(response)
            variable(
                case_id,
                1.0 if passed else 0.0,
                class_name="judge_score",
                sources=(response_var,),
            )
            return passed
