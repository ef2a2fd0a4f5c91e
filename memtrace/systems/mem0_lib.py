"""`memtrace run mem0-lib`: the real Mem0 library (``mem0ai`` 1.0.x or 2.x, whichever is
installed) over LoCoMo-format data, traced through ``memtrace.integrations.mem0``.

Mem0's LLM and embedder talk to the configured OpenAI-compatible endpoint (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``MEMTRACE_LLM_MODEL``; embeddings: the settings' embedding model with
``MEMTRACE_EMBEDDING_DIMS`` dimensions); its vector store is Qdrant's local in-memory mode and
its history a SQLite file, both in a temporary folder per conversation: no server. Mem0's
telemetry is off (``MEM0_TELEMETRY=False``; ``MEM0_DIR`` under ``$MEMTRACE_HOME``). The answer
and the judge come from ``--backend`` like the other systems. Each message is one ``add()``
(``"<speaker>: <text>"`` as the user), each question one ``search()`` of the conversation's
memories; faults cannot be planted here (Mem0 is not ours to break; a test plants them in the
endpoint's replies instead). On 2.x the ``custom-instructions`` prompt is Mem0's config
``custom_instructions`` and the search takes ``top_k`` and ``search_threshold``; an optimizer may
move them (``native_configs`` writes them in Mem0's terms).

Replays (``memtrace.replay``). The operations the integration writes for one message are steps
named by the pipeline (``step_kinds``): 1.0.x ``extract:<dia_id>``, ``decide:<dia_id>``,
``add:<dia_id>``; 2.x ``lookup:<dia_id>``, ``extract:<dia_id>``, ``add:<dia_id>``; a question's
search is ``search:<case id>``. Three things make a run reproducible:

- memory ids: Mem0 names each memory ``uuid4()``; while a message is added, ``MemoryIds`` hands
  out uuid5s of the conversation and a creation count instead, so every run of a conversation
  names its memories alike (and writes the same variables);
- model calls: the trace records each call's request digest (the pipeline's ``digest``) and
  reply (op metadata ``llm_request`` / ``llm_reply``); a replay answers a request it finds there
  from the trace and sends only those a repair changed to the endpoint (embeddings always go
  to it);
- a fresh store: every run (each replay too) gets its own temporary Qdrant and history folder.

A repair (``PIPELINE_REPAIRS``) corrects the model's reply before Mem0 reads it (by the step kind
of the call) or, for a search, the results before the answer reads them. 1.0.x: extraction keeps
the evidence sentences of its message (each as a fact, and the whole message), the decision
does not delete a memory holding the case's evidence, keeps its text in an update, and stores
an evidence fact it let go; the search adds the live memories holding the evidence. 2.x: the
additive extraction's reply gains the evidence sentences no memory of it holds; the ``add``
step stores a text the MD5 de-dup drops as a duplicate of a looked-up memory holding the
evidence; the search adds the live memories holding the evidence, all in Mem0's own ranking. A
memory or fact *holds* an evidence sentence when the offline judge reads it there too
(``memtrace.reading``: its words, or by the settings' reading its meaning; Mem0 keeps no
provenance of message sentences, and its LLM rewrites them).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, Final

from memtrace.errors import ConfigError
from memtrace.integrations.mem0 import parse_json, pipeline_class
from memtrace.prompts import Prompt
from memtrace.reading import Reader, holds, make_reader
from memtrace.settings import LLMSettings, Settings
from memtrace.systems.base import System, evidence_facts, op_id, with_evidence
from memtrace.systems.core import Item, Loss
from memtrace.systems.locomo import Question, Turn
from memtrace.systems.params import Params, use
from memtrace.systems.prompts import MEM0_CUSTOM_INSTRUCTIONS, QUESTION_ANSWERING
from memtrace.systems.text import sentences
from memtrace.tracing import OFF, Var

ID_NAMESPACE: Final = uuid.UUID("6d656d74-7261-6365-6d65-6d306c696221")


def endpoint(settings: Settings | None) -> LLMSettings:
    """The configured OpenAI-compatible endpoint; ConfigError when there is none."""
    llm = settings.llm if settings is not None else None
    if llm is None or (not llm.base_url and not llm.api_key):
        raise ConfigError(
            "mem0-lib needs an OpenAI-compatible endpoint: set OPENAI_BASE_URL or OPENAI_API_KEY"
        )
    return llm


def memory_config(settings: Settings | None, folder: Path, collection: str) -> dict[str, Any]:
    """Mem0's config for one conversation: the endpoint from the settings, local storage."""
    llm = endpoint(settings)
    key = llm.api_key.get_secret_value() if llm.api_key else "not-needed"
    connection = {"api_key": key, "openai_base_url": llm.base_url}
    dims = llm.embedding_dims
    return {
        "llm": {
            "provider": "openai",
            "config": {"model": llm.model, "temperature": 0, **connection},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": llm.embedding_model,
                "embedding_dims": dims,
                **connection,
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": collection,
                "embedding_model_dims": dims,
                "path": str(folder / "qdrant"),
                "on_disk": False,
            },
        },
        "history_db_path": str(folder / "history.db"),
    }


def import_mem0(home: Path) -> Any:
    """``mem0.Memory`` with telemetry off (the flag is read when mem0 is first imported);
    Mem0's own folder under ``home``."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(home / "mem0"))
    try:
        import mem0
        import mem0.memory.main
        import mem0.memory.telemetry
    except ImportError:
        raise ConfigError(
            "mem0-lib needs the mem0 extra: pip install 'memtrace-graph[mem0]' (mem0ai 2.x) or "
            "'memtrace-graph[mem0-v1]' (1.0.x)"
        ) from None
    # imported earlier with telemetry on: turn it off where it is read
    mem0.memory.telemetry.MEM0_TELEMETRY = False
    mem0.memory.main.MEM0_TELEMETRY = False
    mem0.memory.main.uuid = MEMORY_IDS
    OBSERVATION_DATES.stand_in(mem0.memory.main)
    return mem0.Memory


class MemoryIds:
    """Stands in for the ``uuid`` module inside ``mem0.memory.main``, where Mem0 names each new
    memory ``uuid4()``: while a ``Mem0LibSystem`` adds a message (``drawn_from``), ids come from
    that system's counter, elsewhere from ``uuid4``. One add() draws at a time (the lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._draw: Callable[[], uuid.UUID] | None = None

    @contextmanager
    def drawn_from(self, draw: Callable[[], uuid.UUID]) -> Iterator[None]:
        with self._lock:
            self._draw = draw
            try:
                yield
            finally:
                self._draw = None

    def uuid4(self) -> uuid.UUID:
        draw = self._draw  # called from Mem0's worker thread while the adding thread holds the lock
        return draw() if draw is not None else uuid.uuid4()

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)


MEMORY_IDS: Final = MemoryIds()


class ObservationDates:
    """Stands in for ``generate_additive_extraction_prompt`` inside ``mem0.memory.main`` (2.x;
    1.0.x has no such prompt). Its ``Observation Date`` is the only anchor the model may resolve
    "yesterday" against; Mem0's open-source ``add()`` takes no timestamp (the platform's does),
    so it would be the day of the run. While a ``Mem0LibSystem`` adds a message (``observed``,
    inside ``MEMORY_IDS.drawn_from``: one add() at a time), it is the message's session date,
    as Mem0 sees it in production."""

    def __init__(self) -> None:
        self._build: Callable[..., Any] | None = None
        self._date: str | None = None

    def stand_in(self, module: Any) -> None:
        build = getattr(module, "generate_additive_extraction_prompt", None)
        if build is None or build is self:
            return
        self._build = build
        module.generate_additive_extraction_prompt = self

    @contextmanager
    def observed(self, date: str) -> Iterator[None]:
        self._date = iso_date(date)
        try:
            yield
        finally:
            self._date = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        assert self._build is not None  # only ever called where it stands in
        if self._date is not None and kwargs.get("timestamp") is None:
            kwargs["timestamp"] = self._date
        return self._build(*args, **kwargs)


OBSERVATION_DATES: Final = ObservationDates()


def iso_date(date: str) -> str:
    """A session's date (``8 May 2023``, ``base.session_date``) as Mem0's prompt examples write
    an observation date (``2023-05-08``); a date in another form is passed as it is."""
    try:
        return datetime.strptime(date, "%d %B %Y").date().isoformat()
    except ValueError:
        return date


class Mem0LibSystem(System):
    name = "mem0-lib"
    # top_k: the search's; search_threshold: its least similarity (mem0ai 2.x only)
    parameters = (*System.parameters, "top_k", "search_threshold")
    # the application's answer prompt and 2.x's custom instructions (Mem0's own prompts are not
    # ours to rewrite)
    tunable_prompts = (QUESTION_ANSWERING, MEM0_CUSTOM_INSTRUCTIONS)
    replay_snapshots: ClassVar[bool] = False  # the memory is in Mem0's store: rebuilt per replay
    replay_needs_calls: ClassVar[bool] = True
    needs_endpoint = True  # Mem0's LLM and embedder; faults cannot be planted (Mem0 is not ours)
    default_backend = "openai"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # fail before any trace file is opened, not after its first record
        endpoint(self.settings)
        assert self.settings is not None
        self.memory_class = import_mem0(self.settings.home)
        self.pipeline = pipeline_class()

    @classmethod
    def native_configs(cls, prompts: Mapping[str, Prompt], params: Params) -> dict[str, Any]:
        """``mem0_config.json``: the part of Mem0's config memtrace tunes, what
        ``Memory.from_config`` takes (merge it into your own: it names no LLM or store);
        ``mem0_search.json``: the keyword arguments of ``memory.search``."""
        pipeline = pipeline_class()
        search: dict[str, Any] = {"top_k": params.top_k}
        if pipeline.takes_threshold:
            search["threshold"] = params.search_threshold
        files: dict[str, Any] = {"mem0_search.json": search}
        if pipeline.takes_custom_instructions:
            text = prompts[MEM0_CUSTOM_INSTRUCTIONS].text
            files["mem0_config.json"] = {"custom_instructions": text}
        return files

    def reset(self) -> None:
        from memtrace.integrations.mem0 import Instrumented, instrument

        self._folder = tempfile.TemporaryDirectory(prefix="memtrace-mem0-")
        folder = Path(self._folder.name)
        self.user = "locomo"
        config = memory_config(self.settings, folder, "memtrace")
        if self.pipeline.takes_custom_instructions:
            config["custom_instructions"] = self.prompts[MEM0_CUSTOM_INSTRUCTIONS].text
        self.memory = self.memory_class.from_config(config)
        self.created = 0
        self.said: dict[str, Turn] = {}  # dia_id -> the message
        self._turn: Turn | None = None  # the message being added
        self._calls = 0  # model calls of its add() so far
        self._facts: list[str] = []  # its extraction's facts
        # texts of evidence memories its lookup showed Mem0 without their hash -> their ids
        self._unhashed: dict[str, str] = {}
        self._asked: Counter[str] = Counter()  # request digest -> times served from the trace
        # under the tracing wrappers: the trace records the replies Mem0 got
        self.memory.llm.generate_response = self._model(self.memory.llm.generate_response)
        self.memory.vector_store.search = self._lookup(self.memory.vector_store.search)
        self.traced: Instrumented[Any] = instrument(self.memory)
        self.repairs = PIPELINE_REPAIRS[type(self.traced).__name__]

    def ingest(self, turn: Turn, date: str, message: Var) -> None:
        self.user = self.run_state.sample_id or "locomo"
        self.said[turn.dia_id] = turn
        self._turn, self._calls, self._facts, self._unhashed = turn, 0, [], {}
        with (
            self.traced.inputs(message),
            MEMORY_IDS.drawn_from(self._memory_id),
            OBSERVATION_DATES.observed(date),
        ):
            added = self.memory.add(
                [{"role": "user", "content": f"{turn.speaker}: {turn.text}"}],
                user_id=self.user,
                metadata={"dia_id": turn.dia_id, "date": date},
            )
        self._turn = None
        kept = [r for r in added.get("results", []) if r.get("memory") in self._unhashed]
        if kept and self.repairing(f"add:{turn.dia_id}"):
            for result in kept:
                original = self._unhashed[result["memory"]]
                self.repaired(f"kept {result['id']} (a duplicate of {original})", "ExtractionError")
        for name, op in self.traced.written:
            self.run_state.steps[op] = f"{self.traced.step_kinds[name]}:{turn.dia_id}"

    def repairing(self, step: str) -> bool:
        """This replay repairs ``step``: it becomes the step its changes are recorded under."""
        if self.repair is None or step not in self.repair.steps:
            return False
        self.current_step = step
        return True

    def _memory_id(self) -> uuid.UUID:
        self.created += 1
        return uuid.uuid5(ID_NAMESPACE, f"{self.user}:{self.created}")

    def retrieve(self, query: Var, question: Question, case_id: str) -> tuple[list[Item], Var, str]:
        # the search's settings are its parameters, as in the reference mem0 (a replay reads
        # them back)
        settings = ("top_k", "search_threshold") if self.pipeline.takes_threshold else ("top_k",)
        threshold = self.params.search_threshold if self.pipeline.takes_threshold else None
        with self.traced.query(query, lambda: use(self.params, *settings)):
            found = self.traced.search(
                question.text, user_id=self.user, top_k=self.params.top_k, threshold=threshold
            )
        search = self.traced.last_search
        memories = self.traced.memories  # empty while tracing is off
        items = [
            Item(
                str(r["id"]),
                str(r["memory"]),
                _date(r),
                frozenset(),
                memories.get(str(r["id"]), OFF),
            )
            for r in found.get("results", [])
        ]
        step = f"search:{case_id}"
        if self.repairing(step):
            items = self.repairs.search(self, items, question)
        if search is None:  # tracing off
            return items, OFF, op_id()
        self.run_state.steps[search.op_id] = step
        return items, search.context, search.op_id

    def where_lost(self, key: str, search_op: str) -> Loss | None:
        return None  # Mem0 keeps no provenance of message sentences: attribution finds out

    def in_context(
        self, context: Sequence[Item], keys: Sequence[str], turns: Mapping[str, Turn]
    ) -> set[str]:
        """Mem0 keeps no provenance: a key sentence is in the context when a memory there holds
        it, read as the repairs read facts and memories."""
        return {
            key
            for key in keys
            if (said := _sentence(key, turns)) is not None
            and any(self.reads(said, item.text) for item in context)
        }

    # -- replays: model calls served from the trace, repairs --------------------------------
    def _model(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def generate_response(*args: Any, **kwargs: Any) -> Any:
            messages = list(kwargs.get("messages", args[0] if args else []))
            options = {k: v for k, v in kwargs.items() if k != "messages"}
            digest = self.traced.digest(messages, options)
            replies = self.recorded.get(digest)
            if replies:  # the n-th asking gets the n-th reply (the last once they run out)
                reply: Any = replies[min(self._asked[digest], len(replies) - 1)]
                self._asked[digest] += 1
            else:  # not in the trace, or its request changed: ask the model
                reply = original(*args, **kwargs)
            turn, stages = self._turn, self.traced.call_steps
            stage = stages[self._calls] if turn and self._calls < len(stages) else ""
            self._calls += 1
            step = f"{stage}:{turn.dia_id}" if turn else ""
            repair = self.repairs.replies.get(stage)
            if repair and self.repairing(step) and isinstance(reply, str):
                reply = repair(self, reply)
            if stage == "extract":
                self._facts = _texts((parse_json(reply) or {}).get("facts"))
            return reply

        return generate_response

    def _lookup(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """The vector store's search, under the tracing wrappers: while a replay repairs the
        ``add`` step of the message being added (a pipeline that de-duplicates by MD5), the
        memories its lookup found holding the evidence are handed to Mem0 without their hash,
        so that an extracted text equal to one of them is stored, not dropped."""

        def search(*args: Any, **kwargs: Any) -> Any:
            found = original(*args, **kwargs)
            turn, repair = self._turn, self.repair
            step = f"add:{turn.dia_id}" if turn is not None else ""
            if not (self.repairs.keeps_duplicates and repair and step in repair.steps):
                return found
            shown = []
            for item in found or []:
                payload = dict(getattr(item, "payload", None) or {})
                text = str(payload.get("data", ""))
                if payload.pop("hash", None) and self.holds_evidence(text):
                    self._unhashed[text] = str(item.id)
                    item = SimpleNamespace(id=item.id, score=item.score, payload=payload)
                shown.append(item)
            return shown

        return search

    def evidence(self, only: str | None = None) -> list[tuple[str, str]]:
        """The repair's evidence sentences as (key, text), of message ``only`` if given."""
        found = []
        for key in sorted(self.repair_sources()):
            said = _sentence(key, self.said)
            if said is not None and (only is None or key.rpartition("#")[0] == only):
                found.append((key, said))
        return found

    @cached_property
    def reader(self) -> Reader:
        """How repairs read facts and memories: as the offline judge does (the settings'
        ``reading``), loaded when a repair first reads."""
        return make_reader(self.settings.reading if self.settings else "auto")

    def reads(self, sentence: str, text: str) -> bool:
        """Whether ``text`` still holds what the evidence ``sentence`` says (``memtrace.reading``:
        one decision for the offline judge's trails and these repairs)."""
        return holds(self.reader, sentence, [text])

    def holds_evidence(self, text: str) -> bool:
        return any(self.reads(said, text) for _, said in self.evidence())

    def repair_extraction(self, reply: str) -> str:
        """The fact list gains the evidence sentences of this message that no fact holds (each
        sentence, and the whole message: ``evidence_facts``)."""
        turn = self._turn
        assert turn is not None
        parsed = parse_json(reply) or {}
        facts = _listed(parsed, "facts")
        have = _texts(facts)
        evidence = self.evidence(turn.dia_id)
        missing = [k for k, said in evidence if not any(self.reads(said, f) for f in have)]
        added = [
            f.text
            for f in evidence_facts(turn.dia_id, turn.speaker, turn.text, missing)
            if f.text not in have
        ]
        if not added:
            return reply
        self.repaired(f"added evidence {', '.join(missing)} and its message", "ExtractionError")
        return json.dumps({**parsed, "facts": [*facts, *added]})

    def repair_decision(self, reply: str) -> str:
        """A memory holding the evidence is not deleted, and an update of it keeps its text; an
        evidence fact the decision let go, held by no memory, is added."""
        parsed = parse_json(reply) or {}
        actions = _listed(parsed, "memory")
        similar = self.traced.similar()  # Mem0 numbers them "0", "1", ... in its prompt
        kept: list[Any] = []
        for action in actions:
            number = str(action.get("id")) if isinstance(action, dict) else ""
            old = similar[int(number)] if number.isdigit() and int(number) < len(similar) else None
            event = action.get("event") if old is not None else None
            text = str(action.get("text") or "") if old is not None else ""
            if old is not None and event == "DELETE" and self.holds_evidence(old[1]):
                self.repaired(f"kept {old[0]} (not deleted)", "DeletionError")
                continue
            if old is not None and event == "UPDATE" and self.loses_evidence(old[1], text):
                action = {**action, "text": f"{old[1]} {text.split(': ', 1)[-1]}"}
                self.repaired(f"{old[0]} kept its text", "UpdateError")
            kept.append(action)
        stored = [text for _, text in similar] + [
            str(a.get("text"))
            for a in kept
            if isinstance(a, dict) and a.get("event") in ("ADD", "UPDATE")
        ]
        for key, said in self.evidence():
            fact = next((f for f in self._facts if self.reads(said, f)), None)
            if fact is None or any(self.reads(said, text) for text in stored):
                continue
            kept.append({"id": str(len(similar) + len(kept)), "text": fact, "event": "ADD"})
            stored.append(fact)
            self.repaired(f"stored evidence fact {key}", "ExtractionError")
        if kept == actions:
            return reply
        return json.dumps({**parsed, "memory": kept})

    def loses_evidence(self, old: str, new: str) -> bool:
        """An update from ``old`` to ``new`` drops an evidence sentence ``old`` held."""
        return any(
            self.reads(said, old) and not self.reads(said, new) for _, said in self.evidence()
        )

    def repair_additive_extraction(self, reply: str) -> str:
        """2.x: the reply's memories gain the evidence sentences of this message that no memory
        of it holds (each sentence, and the whole message: ``evidence_facts``)."""
        turn = self._turn
        assert turn is not None
        parsed = parse_json(reply) or {}
        memories = [m for m in _listed(parsed, "memory") if isinstance(m, dict)]
        have = [str(m.get("text") or "") for m in memories]
        evidence = self.evidence(turn.dia_id)
        missing = [k for k, said in evidence if not any(self.reads(said, t) for t in have)]
        added = [
            {"id": str(len(memories) + i), "text": fact.text, "attributed_to": "user"}
            for i, fact in enumerate(
                f
                for f in evidence_facts(turn.dia_id, turn.speaker, turn.text, missing)
                if f.text not in have
            )
        ]
        if not added:
            return reply
        self.repaired(f"added evidence {', '.join(missing)} and its message", "ExtractionError")
        return json.dumps({**parsed, "memory": [*memories, *added]})

    def restoring(self, items: list[Item], memories: list[dict[str, Any]]) -> list[Item]:
        """The memories a repaired search adds to ``items``: for each evidence sentence no
        result holds, the first memory that holds it (only what was lost is restored; a precise
        search, which shows nothing but evidence, gets every memory holding some)."""
        shown = {item.key for item in items}
        others = [m for m in memories if str(m["id"]) not in shown]
        if self.precise_search:
            chosen = [m for m in others if self.holds_evidence(str(m["memory"]))]
        else:
            chosen = []
            for _, said in self.evidence():
                if any(self.reads(said, i.text) for i in items) or any(
                    self.reads(said, str(m["memory"])) for m in chosen
                ):
                    continue
                found = next((m for m in others if self.reads(said, str(m["memory"]))), None)
                if found is not None and found not in chosen:
                    chosen.append(found)
        return [Item(str(m["id"]), str(m["memory"]), _date(m), frozenset(), OFF) for m in chosen]

    def repair_ranked_search(self, items: list[Item], question: Question) -> list[Item]:
        """2.x: the results plus a live memory holding each evidence sentence they lack, each
        in the place of the lowest-ranked result holding no evidence (``restoring``,
        ``with_evidence``: as many results as the search gave), all in the order Mem0's own
        scoring ranks them (its search over every memory with no threshold; one it does not
        rank comes last)."""
        every = self.traced.all_memories(self.user)
        extra = self.restoring(items, every)
        if not extra and not self.precise_search:
            return items
        if extra:
            self.repaired(f"added {', '.join(item.key for item in extra)}", "RetrievalError")
        ranked = self.traced.search(
            question.text, user_id=self.user, top_k=max(len(every), 1), threshold=0.0
        )
        order = {str(r["id"]): i for i, r in enumerate(ranked.get("results", []))}
        return with_evidence(
            items,
            extra,
            lambda item: self.holds_evidence(item.text),
            precise=self.precise_search,
            rank=lambda item: order.get(item.key, len(order)),
        )

    def repair_search(self, items: list[Item], question: Question) -> list[Item]:
        """The results plus a live memory holding each evidence sentence they lack, each in
        the place of the lowest-ranked result holding none (``restoring``, ``with_evidence``)."""
        extra = self.restoring(items, self.traced.all_memories(self.user))
        if extra:
            self.repaired(f"added {', '.join(item.key for item in extra)}", "RetrievalError")
        return with_evidence(items, extra, lambda item: self.holds_evidence(item.text))


@dataclass(frozen=True)
class PipelineRepairs:
    """How a replay repairs the steps of one Mem0 pipeline."""

    # the step kind of a model call -> how a repair corrects its reply before Mem0 reads it
    replies: Mapping[str, Callable[[Mem0LibSystem, str], str]]
    search: Callable[[Mem0LibSystem, list[Item], Question], list[Item]]
    keeps_duplicates: bool = False  # the add step's repair keeps what the MD5 de-dup drops


# the instrumentation's pipeline class -> its repairs
PIPELINE_REPAIRS: Final[dict[str, PipelineRepairs]] = {
    "Mem0V1": PipelineRepairs(
        {"extract": Mem0LibSystem.repair_extraction, "decide": Mem0LibSystem.repair_decision},
        Mem0LibSystem.repair_search,
    ),
    "Mem0V2": PipelineRepairs(
        {"extract": Mem0LibSystem.repair_additive_extraction},
        Mem0LibSystem.repair_ranked_search,
        keeps_duplicates=True,
    ),
}


def _sentence(key: str, turns: Mapping[str, Turn]) -> str | None:
    """The evidence sentence a key names (``D1:3#0``: sentence 0 of message D1:3; the whole
    message when it has no such sentence), None when the message was not said."""
    dia_id, _, index = key.rpartition("#")
    turn = turns.get(dia_id)
    if turn is None:
        return None
    parts = sentences(turn.text) or [turn.text]
    return parts[int(index)] if int(index) < len(parts) else turn.text


def _date(result: Mapping[str, Any]) -> str:
    """The session date a memory was stored on (the metadata ``ingest`` gives each add()): the
    date the answer prompt promises beside each memory."""
    metadata = result.get("metadata")
    return str(metadata.get("date") or "") if isinstance(metadata, Mapping) else ""


def _listed(reply: dict[str, Any], key: str) -> list[Any]:
    found = reply.get(key)
    return found if isinstance(found, list) else []


def _texts(facts: Any) -> list[str]:
    return [f if isinstance(f, str) else json.dumps(f) for f in facts or []]
