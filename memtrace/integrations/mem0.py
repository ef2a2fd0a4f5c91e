"""Trace the real Mem0 library (``mem0ai``, extra ``memtrace[mem0]``): one call instruments a
``mem0.Memory`` so that ``add()`` and ``search()`` record a native memtrace trace.

    from memtrace.integrations.mem0 import instrument
    traced = instrument(memory)            # checks the mem0ai version and the hooks it needs
    with trace("run.jsonl", "run-1", system="mem0-lib"):
        with traced.inputs(message_var):   # optional: the variables add() consumes
            memory.add(messages, user_id="u1")
        memory.search("question", user_id="u1")

Mem0 has no hooks, so the instance's collaborators are wrapped (never the classes): the LLM's
``generate_response``, the vector store's ``search`` and the memory's ``_create_memory`` /
``_update_memory`` / ``_delete_memory``. Mem0 runs its add pipeline in a worker thread, so the
wrappers only *record events*; when ``add()`` returns, the events are checked against the
pipeline of the pinned range (one fact-extraction call answering ``{"facts": [...]}``, then,
if there were facts, one update-decision call answering ``{"memory": [...]}``, then one
create / update / delete per ADD / UPDATE / DELETE) and written as operations in that order:

- ``memory_system.extract_facts`` reads the input messages and the extraction prompt, writes
  ``facts:<n>`` (the facts Mem0 parsed);
- ``memory_system.update_memory_decision`` reads the facts, the memories the similarity search
  found and the update prompt, writes ``update_actions:<n>`` (the decisions), a new version of
  each UPDATEd memory and a deletion of each DELETEd one;
- ``memory_system.add_to_vector_store`` writes one ``memory_entry`` variable per ADD
  (named by Mem0's memory id).

``search()`` becomes ``memory_system.search_vector_store``: reads the query and the memories
returned, writes the context (their texts, best first; scores in the op's metadata). Events
that do not fit raise ``Mem0InstrumentationError`` instead of writing a partial trace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata as package_metadata
from typing import Any, Final

from memtrace.errors import MemtraceError
from memtrace.tracing import Registered, Var, delete, mutation, operation, read, variable
from memtrace.tracing.api import current_operation

SUPPORTED: Final = ((1, 0, 11), (1, 1, 0))  # mem0ai >= 1.0.11, < 1.1: the range tested
SUPPORTED_TEXT: Final = "mem0ai>=1.0.11,<1.1"
EXTRACTION_PROMPT = Registered("fact-extraction-system-prompt", category="prompt")
UPDATE_PROMPT = Registered("memory-update-decision-prompt", category="prompt")


class Mem0InstrumentationError(MemtraceError):
    """The instrumented Mem0 does not behave as the supported version range does."""


def mem0_version() -> tuple[int, ...]:
    try:
        text = package_metadata.version("mem0ai")
    except package_metadata.PackageNotFoundError:
        raise Mem0InstrumentationError(
            f"mem0ai is not installed (pip install 'memtrace[mem0]' for {SUPPORTED_TEXT})"
        ) from None
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


@dataclass
class _LLMCall:
    messages: list[dict[str, Any]]
    response: str | None
    error: str | None = None


@dataclass
class _Events:
    """What one ``add()`` did, in order (appended from Mem0's worker thread)."""

    llm_calls: list[_LLMCall] = field(default_factory=list)
    found: dict[str, str] = field(default_factory=dict)  # memory id -> text, from searches
    changes: list[tuple[str, str, str | None]] = field(default_factory=list)  # event, id, text


@dataclass
class SearchResult:
    """What the traced ``search()`` recorded: the context variable and the operation id."""

    context: Var
    op_id: str


class Instrumented:
    """The tracing state of one instrumented ``mem0.Memory``."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.memories: dict[str, Var] = {}  # Mem0 memory id -> its latest variable
        self.added = 0
        self.last_search: SearchResult | None = None
        self._events: _Events | None = None
        self._inputs: tuple[Var, ...] = ()
        self._query: Var | None = None
        self._lock = threading.Lock()  # one add() / search() at a time per memory

    @contextmanager
    def inputs(self, *variables: Var) -> Iterator[None]:
        """The variables the next ``add()`` calls consume (e.g. the conversation message)."""
        self._inputs = variables
        try:
            yield
        finally:
            self._inputs = ()

    @contextmanager
    def query(self, var: Var) -> Iterator[None]:
        """The question variable the next ``search()`` calls read."""
        self._query = var
        try:
            yield
        finally:
            self._query = None

    # -- the wrappers -----------------------------------------------------------------------

    def _record_llm(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def generate_response(*args: Any, **kwargs: Any) -> Any:
            messages = kwargs.get("messages", args[0] if args else [])
            call = _LLMCall(list(messages), None)
            if self._events is not None:
                self._events.llm_calls.append(call)
            try:
                response = original(*args, **kwargs)
            except Exception as exc:
                call.error = f"{type(exc).__name__}: {exc}"
                raise
            call.response = response if isinstance(response, str) else json.dumps(response)
            return response

        return generate_response

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

    def traced_add(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def add(messages: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self._events = _Events()
                try:
                    result = original(messages, *args, **kwargs)
                    events = self._events
                finally:
                    self._events = None
                if kwargs.get("infer", True) and _tracing():
                    self._write_add(messages, events, result)
                return result

        return add

    def traced_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def search(query: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                result = original(query, *args, **kwargs)
                if _tracing():
                    self._write_search(query, result)
                return result

        return search

    # -- events -> operations ---------------------------------------------------------------

    def _check(self, condition: bool, problem: str) -> None:
        if not condition:
            raise Mem0InstrumentationError(
                f"mem0 add(): {problem}; this instrumentation follows the pipeline of "
                f"{SUPPORTED_TEXT} (fact extraction, then update decision) and records no "
                "partial trace"
            )

    def _write_add(self, messages: Any, events: _Events, result: Any) -> None:
        calls = events.llm_calls
        self._check(len(calls) >= 1, "no fact-extraction LLM call was made")
        self._check(len(calls) <= 2, f"{len(calls)} LLM calls (expected extraction + decision)")
        extraction = calls[0]
        self._check(extraction.error is None, f"the extraction call failed: {extraction.error}")
        parsed = _parse_json(extraction.response)
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
        self.added += 1
        number = self.added
        inputs = self._inputs or (variable(f"mem0-input:{number}", messages, category="message"),)
        with operation("memory_system.extract_facts", category="extraction"):
            read(*inputs)
            system = next((m for m in extraction.messages if m.get("role") == "system"), None)
            if system is not None:
                EXTRACTION_PROMPT.read(system.get("content"))
            facts_var = variable(f"facts:{number}", facts, category="llm_response", sources=inputs)
        if len(calls) < 2:
            return
        decision = calls[1]
        reply = _parse_json(decision.response)
        self._check(
            reply is None or isinstance(reply.get("memory"), list),
            f"the update-decision reply has no 'memory' list: {str(decision.response)[:120]!r}",
        )
        actions = reply.get("memory", []) if reply is not None else []
        adds: list[tuple[str, str | None]] = []
        with operation("memory_system.update_memory_decision", category="update"):
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
                        old, _memory_value(memory_id, text), category="memory_entry"
                    )
                elif event == "DELETE":
                    delete(self._memory_var(memory_id, events.found.get(memory_id, "")))
                    self.memories.pop(memory_id, None)
                else:
                    adds.append((memory_id, text))
        if adds:
            with operation("memory_system.add_to_vector_store", category="embedding"):
                read(actions_var)
                for memory_id, text in adds:
                    self.memories[memory_id] = variable(
                        memory_id,
                        _memory_value(memory_id, text),
                        category="memory_entry",
                        sources=(actions_var,),
                    )

    def _memory_var(self, memory_id: str, text: str | None) -> Var:
        """The latest variable of a memory; one created before tracing began is registered."""
        known = self.memories.get(memory_id)
        if known is None:
            known = variable(memory_id, _memory_value(memory_id, text), category="memory_entry")
            self.memories[memory_id] = known
        return known

    def _write_search(self, query: str, result: Any) -> None:
        items = result.get("results", []) if isinstance(result, dict) else []
        if not all(isinstance(i, dict) and "id" in i and "memory" in i for i in items):
            raise Mem0InstrumentationError(
                f"mem0 search() returned items without id/memory ({SUPPORTED_TEXT} returns "
                '{"results": [{"id", "memory", "score", ...}]})'
            )
        with operation(
            "memory_system.search_vector_store",
            category="retrieval",
            metadata={"scores": {str(i["id"]): i.get("score") for i in items}},
        ):
            query_var = self._query or variable(
                "mem0-query", query, category="message & query", class_name="query"
            )
            read(query_var)
            found = [self._memory_var(str(i["id"]), str(i["memory"])) for i in items]
            read(*found)
            context = variable(
                f"search:{query_var.name}",
                [str(i["memory"]) for i in items],
                category="memory_context",
                class_name="context",
                sources=(query_var, *found),
            )
            op = current_operation()
            self.last_search = SearchResult(context, op.id if op else "")


def instrument(memory: Any) -> Instrumented:
    """Instrument one ``mem0.Memory``; raises Mem0InstrumentationError when the installed mem0ai
    is outside the tested range or the instance lacks what the instrumentation wraps."""
    version = mem0_version()
    low, high = SUPPORTED
    if not low <= version < high:
        shown = ".".join(map(str, version))
        raise Mem0InstrumentationError(
            f"mem0ai {shown} is not supported: the instrumentation is tested with {SUPPORTED_TEXT}"
        )
    needed = {
        "llm.generate_response": getattr(getattr(memory, "llm", None), "generate_response", None),
        "vector_store.search": getattr(getattr(memory, "vector_store", None), "search", None),
        "_create_memory": getattr(memory, "_create_memory", None),
        "_update_memory": getattr(memory, "_update_memory", None),
        "_delete_memory": getattr(memory, "_delete_memory", None),
        "add": getattr(memory, "add", None),
        "search": getattr(memory, "search", None),
    }
    missing = [name for name, found in needed.items() if not callable(found)]
    if missing:
        raise Mem0InstrumentationError(
            f"this mem0 Memory has no {', '.join(missing)} ({SUPPORTED_TEXT} has them)"
        )
    if getattr(memory, "_memtrace", None) is not None:
        raise Mem0InstrumentationError("this mem0 Memory is instrumented already")
    state = Instrumented(memory)
    memory.llm.generate_response = state._record_llm(memory.llm.generate_response)
    memory.vector_store.search = state._record_search(memory.vector_store.search)
    memory._create_memory = state._record_change("ADD", memory._create_memory)
    memory._update_memory = state._record_change("UPDATE", memory._update_memory)
    memory._delete_memory = state._record_change("DELETE", memory._delete_memory)
    memory.add = state.traced_add(memory.add)
    memory.search = state.traced_search(memory.search)
    memory._memtrace = state
    return state


def _tracing() -> bool:
    from memtrace.tracing import active

    return active() is not None


def _parse_json(response: str | None) -> dict[str, Any] | None:
    """The reply as a JSON object, as Mem0 reads it (code fences removed); None if it is not."""
    if not response:
        return None
    text = response.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        parsed = json.loads(text, strict=False)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _memory_value(memory_id: str, text: str | None) -> dict[str, str | None]:
    return {"id": memory_id, "memory": text}


def _update_prompt(memory: Any) -> str:
    custom = getattr(getattr(memory, "config", None), "custom_update_memory_prompt", None)
    if custom:
        return str(custom)
    from mem0.configs.prompts import DEFAULT_UPDATE_MEMORY_PROMPT

    return str(DEFAULT_UPDATE_MEMORY_PROMPT)


__all__ = [
    "SUPPORTED_TEXT",
    "Instrumented",
    "Mem0InstrumentationError",
    "SearchResult",
    "instrument",
    "mem0_version",
]
