"""Mem0-style system: extract facts -> similar memories -> ADD/UPDATE/DELETE/NONE -> store ->
search top-k -> answer. Memory units carry the message sentences they came from (provenance),
which is what fault injection and derived labels follow."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from memtrace.systems.base import System, evidence_facts, op_id, with_evidence
from memtrace.systems.core import Action, Fact, Item, Loss, Similar, source_key
from memtrace.systems.locomo import Question, Turn
from memtrace.systems.params import use
from memtrace.systems.prompts import FACT_EXTRACTION, UPDATE_DECISION
from memtrace.systems.text import content, sentences
from memtrace.taxonomy import ERROR_TYPES, ErrorType
from memtrace.tracing import Var, delete, mutation, operation, read, variable


@dataclass(slots=True)
class Memory:
    id: str
    text: str
    speaker: str
    date: str
    sources: set[str]
    var: Var
    tokens: frozenset[str] = field(default_factory=frozenset)

    def value(self) -> dict[str, str]:
        return {"id": self.id, "memory": self.text, "date": self.date}

    def __deepcopy__(self, memo: dict[int, Any]) -> Memory:
        """A replay snapshot's copy: only ``sources`` is mutable (the rest is replaced whole)."""
        return Memory(
            self.id, self.text, self.speaker, self.date, set(self.sources), self.var, self.tokens
        )


class Mem0System(System):
    name = "mem0"
    fault_types = ERROR_TYPES
    parameters = (
        *System.parameters,
        "min_content_words",
        "similar_top_k",
        "none_threshold",
        "update_threshold",
        "delete_threshold",
        "max_merge_sentences",
        "top_k",
    )

    def reset(self) -> None:
        self.memories: dict[str, Memory] = {}  # alive memories, in creation order
        self.by_speaker: dict[str, dict[str, Memory]] = {}  # the same, per speaker
        self.holders: dict[str, set[str]] = {}  # source key -> alive memory ids holding it
        self.removed: dict[str, Loss] = {}  # source key -> the op that removed its last holder
        self.dropped: dict[str, str] = {}  # source key -> extract op that left it out
        self.created = 0

    # -- construction -------------------------------------------------------------------
    def ingest(self, turn: Turn, date: str, message: Var) -> None:
        facts, facts_var = self.extract(turn, message)
        if facts:
            adds, actions_var = self.decide(turn, facts, facts_var)
            if adds:
                self.add(adds, actions_var, date)

    def extract(self, turn: Turn, message: Var) -> tuple[list[Fact], Var]:
        with operation("memory_system.extract_facts", category="extraction"):
            read(message)
            prompt = self.prompt(FACT_EXTRACTION)
            use(self.params, "min_content_words")
            facts = self.backend.extract(prompt, turn.speaker, turn.dia_id, turn.text, self.params)
            extracted = facts
            fault = self.fault("ExtractionError", turn.dia_id)
            if fault is not None:
                kept = [f for f in facts if not f.sources & fault.sources]
                if len(kept) < len(facts):
                    self.applied(fault, f"dropped {len(facts) - len(kept)} facts")
                facts = kept
            if self.step(f"extract:{turn.dia_id}"):
                facts = self.repair_extraction(turn, facts, extracted)
            self.run_state.fact_counts[turn.dia_id] = len(facts)
            produced = {k for f in facts for k in f.sources}
            for i in range(len(sentences(turn.text))):  # sentences left out of every fact
                if source_key(turn.dia_id, i) not in produced:
                    self.dropped[source_key(turn.dia_id, i)] = op_id()
            facts_var = variable(
                f"facts:{turn.dia_id}",
                [f.text for f in facts],
                category="llm_response",
                sources=(message,),
            )
            return facts, facts_var

    def repair_extraction(self, turn: Turn, facts: list[Fact], extracted: list[Fact]) -> list[Fact]:
        """The oracle's extraction: its facts plus the evidence sentences of this message that
        no fact holds: the extractor's own facts of them when something dropped those after
        the extractor made them (a planted fault), else each sentence as a fact and the whole
        message as another (a sentence alone can lose what it is about: "She gave it to me
        ... it stands for love")."""
        wanted = {k for k in self.repair_sources() if k.rpartition("#")[0] == turn.dia_id}
        restored = [f for f in extracted if f not in facts and f.sources & wanted]
        if restored:
            self.repaired(f"restored {len(restored)} extracted fact(s)", "ExtractionError")
            facts = facts + restored
        missing = sorted(wanted - {k for f in facts for k in f.sources})
        added = evidence_facts(turn.dia_id, turn.speaker, turn.text, missing)
        if added:
            self.repaired(f"added evidence {', '.join(missing)} and its message", "ExtractionError")
        return facts + added

    def similar(self, fact: Fact) -> list[tuple[Memory, float]]:
        # the Jaccard similarity of the memories sharing a token, computed from the intersection
        # alone (|a | b| = |a| + |b| - |a & b|): the hot loop of mem0's construction
        tokens = _tokens(fact.text)
        size = len(tokens)
        scored = []
        for m in self.by_speaker.get(fact.speaker, {}).values():
            shared = len(tokens & m.tokens)
            if shared:
                scored.append((m, shared / (size + len(m.tokens) - shared)))
        scored.sort(key=itemgetter(1), reverse=True)  # stable: older memories first on ties
        return scored[: self.params.similar_top_k]

    def decide(self, turn: Turn, facts: list[Fact], facts_var: Var) -> tuple[list[Fact], Var]:
        with operation("memory_system.update_memory_decision", category="update"):
            read(facts_var)
            prompt = self.prompt(UPDATE_DECISION)
            use(
                self.params,
                "similar_top_k",
                "none_threshold",
                "update_threshold",
                "delete_threshold",
                "max_merge_sentences",
            )
            repairing = self.step(f"decide:{turn.dia_id}")
            decisions: list[dict[str, str | None]] = []
            facts = self.planted_updates(turn, facts, decisions, repairing)
            adds: list[Fact] = []
            for fact in facts:
                similar = self.similar(fact)
                read(*(m.var for m, _ in similar))
                options = [Similar(m.id, m.text, score) for m, score in similar]
                actions = self.backend.decide(prompt, fact, options, self.params)
                if repairing:
                    actions = self.repair_decision(turn, fact, actions)
                for action in actions:
                    decisions.append(action.as_json())
                    if action.event == "ADD":
                        adds.append(Fact(action.text or fact.text, fact.speaker, fact.sources))
                    elif action.memory_id in self.memories:
                        self.apply(action, fact, keep=repairing)
            actions_var = variable(
                f"update_actions:{turn.dia_id}",
                decisions,
                category="llm_response",
                sources=(facts_var,),
            )
            return adds, actions_var

    def repair_decision(self, turn: Turn, fact: Fact, actions: list[Action]) -> list[Action]:
        """The oracle's decision stores a fact carrying evidence that the model let go (NONE)."""
        if not fact.sources & self.repair_sources():
            return actions
        if any(a.event in ("ADD", "UPDATE") for a in actions):
            return actions
        # the decision let the fact go before any memory held it: it never entered the store
        self.repaired(f"stored evidence fact {', '.join(sorted(fact.sources))}", "ExtractionError")
        return [*actions, Action("ADD", text=fact.text)]

    def planted_updates(
        self,
        turn: Turn,
        facts: list[Fact],
        decisions: list[dict[str, str | None]],
        repairing: bool = False,
    ) -> list[Fact]:
        """Apply an UpdateError / DeletionError planted at this message; returns the facts
        still to decide (an overwrite consumes the first fact)."""
        for kind in ("UpdateError", "DeletionError"):
            fault = self.fault(kind, turn.dia_id)
            if fault is None:
                continue
            targets = sorted({m for k in fault.sources for m in self.holders.get(k, ())})
            if repairing:  # the repaired decision leaves memories holding the evidence as they are
                kept = [m for m in targets if self.memories[m].sources & self.repair_sources()]
                if kept:
                    self.repaired(f"kept {', '.join(kept)} unchanged", kind)
                targets = [m for m in targets if m not in kept]
            if not targets or (kind == "UpdateError" and not facts):
                continue
            for memory_id in targets:
                if kind == "UpdateError":
                    action = Action("UPDATE", memory_id, facts[0].text)
                    self.apply(action, facts[0], overwrite=True)
                else:
                    action = Action("DELETE", memory_id)
                    self.apply(action, None)
                decisions.append(action.as_json())
            self.applied(fault, f"{kind} on {', '.join(targets)}")
            if kind == "UpdateError":
                facts = facts[1:]
        return facts

    def apply(
        self, action: Action, fact: Fact | None, overwrite: bool = False, keep: bool = False
    ) -> None:
        """``keep``: a repaired decision, which never loses evidence of the case it repairs (a
        memory holding it is not deleted, and its new version keeps the old text)."""
        memory = self.memories[action.memory_id or ""]
        guarded = keep and bool(memory.sources & self.repair_sources())
        if action.event == "DELETE" and guarded:
            self.repaired(f"kept {memory.id} (not deleted)", "DeletionError")
        elif action.event == "DELETE":
            delete(memory.var)
            del self.memories[memory.id]
            del self.by_speaker[memory.speaker][memory.id]
            self.release(memory, set(memory.sources), "DeletionError")
        elif action.event == "UPDATE" and fact is not None:
            if guarded and (overwrite or memory.text not in (action.text or "")):
                addition = (action.text or fact.text).split(": ", 1)[-1]
                action = Action("UPDATE", memory.id, f"{memory.text} {addition}")
                overwrite = False
                self.repaired(f"{memory.id} kept its text", "UpdateError")
            lost = set(memory.sources) if overwrite else set()
            memory.sources = (memory.sources - lost) | fact.sources
            for key in fact.sources:
                self.holders.setdefault(key, set()).add(memory.id)
                self.removed.pop(key, None)
            memory.text = action.text or memory.text
            memory.tokens = _tokens(memory.text)
            memory.var = mutation(memory.var, memory.value(), category="memory_entry")
            self.release(memory, lost - fact.sources, "UpdateError")

    def release(self, memory: Memory, keys: set[str], kind: ErrorType) -> None:
        for key in keys:
            holders = self.holders.get(key, set())
            holders.discard(memory.id)
            if not holders:
                self.removed[key] = Loss(kind, op_id())

    def add(self, adds: list[Fact], actions_var: Var, date: str) -> None:
        with operation("memory_system.add_to_vector_store", category="embedding"):
            # stores every fact it is given: nothing for a repair to restore here
            self.step(f"add:{actions_var.name.removeprefix('update_actions:')}")
            read(actions_var)
            for fact in adds:
                self.created += 1
                memory_id = f"memory-unit-{self.created:05d}"
                memory = Memory(
                    memory_id,
                    fact.text,
                    fact.speaker,
                    date,
                    set(fact.sources),
                    var=Var("", "", 0),
                    tokens=_tokens(fact.text),
                )
                memory.var = variable(
                    memory_id, memory.value(), category="memory_entry", sources=(actions_var,)
                )
                self.memories[memory_id] = memory
                self.by_speaker.setdefault(memory.speaker, {})[memory_id] = memory
                for key in fact.sources:
                    self.holders.setdefault(key, set()).add(memory_id)
                    self.removed.pop(key, None)

    # -- search ---------------------------------------------------------------------------
    def ranked(self, question: str) -> list[Memory]:
        alive = list(self.memories.values())
        return [alive[i] for i in self.ranker.rank(question, [m.text for m in alive])]

    def retrieve(self, query: Var, question: Question, case_id: str) -> tuple[list[Item], Var, str]:
        with operation("memory_system.search_vector_store", category="retrieval"):
            read(query)
            use(self.params, "top_k")
            self.record_ranker()
            searched = self.ranked(question.text)
            ranked = self.retrieval_fault(
                case_id, searched, _sources, self.params.top_k, "memories"
            )
            top = ranked[: self.params.top_k]
            if self.step(f"search:{case_id}"):
                top = self.repair_retrieval(case_id, top, searched)
            memory_vars = [m.var for m in top]
            read(*memory_vars)
            items = [Item(m.id, m.text, m.date, frozenset(m.sources), m.var) for m in top]
            context = variable(
                case_id,
                [f"[{m.date}] {m.text}" for m in top],
                category="memory_context",
                class_name="context",
                sources=(query, *memory_vars),
            )
            return items, context, op_id()

    def repair_retrieval(
        self, case_id: str, top: list[Memory], searched: list[Memory]
    ) -> list[Memory]:
        """The oracle's search: its results plus the live memories holding the evidence, in
        place of its lowest-ranked results that hold none, in the order the search ranked
        them (``searched``: every memory, no fault applied; ``with_evidence``)."""
        place = {m.id: i for i, m in enumerate(searched)}
        shown = {m.id for m in top}
        wanted = sorted({m for k in self.repair_sources() for m in self.holders.get(k, ())})
        extra = [self.memories[m] for m in wanted if m not in shown and m in self.memories]
        if extra:
            self.repaired(f"added {', '.join(m.id for m in extra)}", "RetrievalError")
        sources = self.repair_sources()
        return with_evidence(
            top,
            extra,
            lambda m: bool(m.sources & sources),
            precise=self.precise_search,
            rank=lambda m: place[m.id],
        )

    def where_lost(self, key: str, search_op: str) -> Loss | None:
        if self.holders.get(key):
            return Loss("RetrievalError", search_op)
        if key in self.removed:
            return self.removed[key]
        if key in self.dropped:
            return Loss("ExtractionError", self.dropped[key])
        return None


@functools.lru_cache(maxsize=1 << 16)
def _tokens(text: str) -> frozenset[str]:
    """A text's content tokens: every replay of a conversation stems the same texts again."""
    return frozenset(content(text))


def _sources(memory: Memory) -> set[str]:
    return memory.sources
