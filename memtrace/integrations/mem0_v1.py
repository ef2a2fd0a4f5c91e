"""Tracing mem0ai 1.0.x (``mem0ai>=1.0.11,<1.1``): fact extraction, then an update decision.

The wrappers are on the LLM's ``generate_response``, the vector store's ``search`` and the
memory's ``_create_memory`` / ``_update_memory`` / ``_delete_memory``. Mem0 runs its add
pipeline in a worker thread, so the wrappers only record events; when ``add()`` returns, the
events are checked against the pipeline (one fact-extraction call answering
``{"facts": [...]}``, then, if there were facts, one update-decision call answering
``{"memory": [...]}``, then one create / update / delete per ADD / UPDATE / DELETE) and written
as operations in that order:

- ``memory_system.extract_facts`` reads the input messages and the extraction prompt, writes
  ``facts:<n>`` (the facts Mem0 parsed);
- ``memory_system.update_memory_decision`` reads the facts, the memories the similarity search
  found and the update prompt, writes ``update_actions:<n>`` (the decisions), a new version of
  each UPDATEd memory and a deletion of each DELETEd one;
- ``memory_system.add_to_vector_store`` writes one ``memory_entry`` variable per ADD
  (named by Mem0's memory id).

``search()`` becomes ``memory_system.search_vector_store`` (see ``mem0.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from memtrace.integrations.mem0 import (
    ALL_MEMORIES,
    Events,
    Instrumented,
    memory_value,
    parse_json,
    tracing,
)
from memtrace.tracing import Registered, delete, mutation, read, variable

EXTRACTION_PROMPT = Registered("fact-extraction-system-prompt", category="prompt")
UPDATE_PROMPT = Registered("memory-update-decision-prompt", category="prompt")


@dataclass
class _Events(Events):
    """What one ``add()`` did, in order (appended from Mem0's worker thread)."""

    changes: list[tuple[str, str, str | None]] = field(default_factory=list)  # event, id, text


class Mem0V1(Instrumented[_Events]):
    """mem0ai 1.0.x: fact extraction, then an ADD / UPDATE / DELETE / NONE decision."""

    version_range: ClassVar[str] = "mem0ai>=1.0.11,<1.1 (fact extraction, then update decision)"
    needed: ClassVar[tuple[str, ...]] = (
        "_add_to_graph",  # shape only (not wrapped): 2.x has no graph-store step
        "llm.generate_response",
        "vector_store.search",
        "_create_memory",
        "_update_memory",
        "_delete_memory",
        "add",
        "search",
    )
    step_kinds: ClassVar[Mapping[str, str]] = {
        "memory_system.extract_facts": "extract",
        "memory_system.update_memory_decision": "decide",
        "memory_system.add_to_vector_store": "add",
    }
    call_steps: ClassVar[tuple[str, ...]] = ("extract", "decide")

    def new_events(self) -> _Events:
        return _Events()

    def wrap(self) -> None:
        memory = self.memory
        memory.llm.generate_response = self._record_llm(memory.llm.generate_response)
        memory.vector_store.search = self._record_search(memory.vector_store.search)
        memory._create_memory = self._record_change("ADD", memory._create_memory)
        memory._update_memory = self._record_change("UPDATE", memory._update_memory)
        memory._delete_memory = self._record_change("DELETE", memory._delete_memory)
        memory.add = self._traced_add(memory.add)
        memory.search = self._traced_search(memory.search)

    def search(
        self, query: str, *, user_id: str, top_k: int, threshold: float | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.memory.search(
            query, user_id=user_id, limit=top_k, threshold=threshold
        )
        return result

    def all_memories(self, user_id: str) -> list[dict[str, Any]]:
        found: dict[str, Any] = self.memory.get_all(user_id=user_id, limit=ALL_MEMORIES)
        return list(found.get("results", []))

    # -- the wrappers -----------------------------------------------------------------------

    def _record_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def search(*args: Any, **kwargs: Any) -> Any:
            found = original(*args, **kwargs)
            if self._events is not None:
                for item in found or []:
                    payload = getattr(item, "payload", None) or {}
                    self._events.found[str(item.id)] = str(payload.get("data", ""))
            return found

        return search

    def _record_change(self, event: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def change(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self._events is not None:
                if event == "ADD":
                    memory_id, text = str(result), kwargs.get("data", args[0] if args else None)
                else:
                    memory_id = str(kwargs.get("memory_id", args[0] if args else ""))
                    text = kwargs.get("data", args[1] if len(args) > 1 else None)
                self._events.changes.append((event, memory_id, text))
            return result

        return change

    def _traced_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def search(query: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                result = original(query, *args, **kwargs)
                if tracing():
                    self._write_search(query, result, {})
                return result

        return search

    # -- events -> operations ---------------------------------------------------------------

    def _write_add(self, messages: Any, events: _Events, result: Any) -> None:
        calls = events.llm_calls
        self._check(len(calls) >= 1, "no fact-extraction LLM call was made")
        self._check(len(calls) <= 2, f"{len(calls)} LLM calls (expected extraction + decision)")
        extraction = calls[0]
        self._check(extraction.error is None, f"the extraction call failed: {extraction.error}")
        parsed = parse_json(extraction.response)
        # a reply that is no JSON object is the model's fault (Mem0 reads it as no facts); a
        # JSON object without 'facts' means Mem0 now asks for something else
        self._check(
            parsed is None or isinstance(parsed.get("facts"), list),
            f"the fact-extraction reply has no 'facts' list: {str(extraction.response)[:120]!r}",
        )
        raw_facts = parsed.get("facts", []) if parsed is not None else []
        facts = [f if isinstance(f, str) else json.dumps(f) for f in raw_facts]
        self._check(
            bool(facts) == (len(calls) == 2),
            "an update-decision call without facts, or facts without one",
        )
        results = result.get("results", []) if isinstance(result, dict) else []
        recorded = [(event, memory_id) for event, memory_id, _ in events.changes]
        returned = [(str(r.get("event")), str(r.get("id"))) for r in results if isinstance(r, dict)]
        self._check(
            recorded == returned,
            f"add() returned {returned} but the store saw {recorded}",
        )
        inputs = self._input_vars(messages)
        number = self.added
        with self._operation("memory_system.extract_facts", "extraction", extraction):
            read(*inputs)
            system = next((m for m in extraction.messages if m.get("role") == "system"), None)
            if system is not None:
                EXTRACTION_PROMPT.read(system.get("content"))
            facts_var = variable(f"facts:{number}", facts, category="llm_response", sources=inputs)
        if len(calls) < 2:
            return
        decision = calls[1]
        reply = parse_json(decision.response)
        self._check(
            reply is None or isinstance(reply.get("memory"), list),
            f"the update-decision reply has no 'memory' list: {str(decision.response)[:120]!r}",
        )
        actions = reply.get("memory", []) if reply is not None else []
        adds: list[tuple[str, str | None]] = []
        with self._operation("memory_system.update_memory_decision", "update", decision):
            read(facts_var)
            UPDATE_PROMPT.read(_update_prompt(self.memory))
            similar = [
                self._memory_var(memory_id, text) for memory_id, text in events.found.items()
            ]
            read(*similar)
            actions_var = variable(
                f"update_actions:{number}",
                actions,
                category="llm_response",
                sources=(facts_var,),
            )
            for event, memory_id, text in events.changes:
                if event == "UPDATE":
                    old = self._memory_var(memory_id, events.found.get(memory_id, ""))
                    self.memories[memory_id] = mutation(
                        old, memory_value(memory_id, text), category="memory_entry"
                    )
                elif event == "DELETE":
                    delete(self._memory_var(memory_id, events.found.get(memory_id, "")))
                    self.memories.pop(memory_id, None)
                else:
                    adds.append((memory_id, text))
        if adds:
            with self._operation("memory_system.add_to_vector_store", "embedding"):
                read(actions_var)
                for memory_id, text in adds:
                    self.memories[memory_id] = variable(
                        memory_id,
                        memory_value(memory_id, text),
                        category="memory_entry",
                        sources=(actions_var,),
                    )


def _update_prompt(memory: Any) -> str:
    custom = getattr(getattr(memory, "config", None), "custom_update_memory_prompt", None)
    if custom:
        return str(custom)
    from mem0.configs.prompts import DEFAULT_UPDATE_MEMORY_PROMPT

    return str(DEFAULT_UPDATE_MEMORY_PROMPT)


PIPELINE = Mem0V1
