"""Trace the real Mem0 library (``mem0ai``): one call instruments a ``mem0.Memory`` so that
``add()`` and ``search()`` record a native memtrace trace.

    from memtrace.integrations.mem0 import instrument
    traced = instrument(memory)            # checks the mem0ai version and the hooks it needs
    with trace("run.jsonl", "run-1", system="mem0-lib"):
        with traced.inputs(message_var):   # optional: the variables add() consumes
            memory.add(messages, user_id="u1")
        traced.search("question", user_id="u1", top_k=10)  # memory.search, either version's API

Two pipelines are supported, told apart by the installed version and checked against the
instance's shape (a clear error for anything else):

- mem0ai 1.0.x (``mem0_v1.py``, extra ``memtrace-graph[mem0-v1]``): fact extraction, then an
  ADD / UPDATE / DELETE / NONE decision;
- mem0ai 2.x (``mem0_v2.py``, extra ``memtrace-graph[mem0]``): additive extraction (one LLM
  call that only adds), MD5 de-duplication, hybrid search (semantic, keyword, entity).

For replays (``systems/mem0_lib.py``), the ops that made a model call record it (metadata
``llm_request``: the pipeline's ``digest`` of it, ``llm_reply``); ``written`` names the ops the
last traced ``add()`` wrote, each pipeline's ``step_kinds`` the step each op is and
``call_steps`` the step each model call of one ``add()`` answers for; ``similar()`` the
memories a 1.0.x decision was shown and ``all_memories(user)`` every memory of a user.

Mem0 has no hooks, so the instance's collaborators are wrapped (never the classes); the
wrappers only *record events*, and when ``add()`` / ``search()`` returns, the events are checked
against the version's pipeline and written as operations. Events that do not fit raise
``Mem0InstrumentationError`` instead of writing a partial trace. docs/tracing.md has the graph.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import import_module
from importlib import metadata as package_metadata
from typing import Any, ClassVar, Final, Generic, TypeVar

from memtrace.errors import Mem0InstrumentationError
from memtrace.tracing import Var, operation, read, variable
from memtrace.tracing.api import current_operation

# version ranges tested, [low, high), with the module that traces each
RANGES: Final = (((1, 0, 11), (1, 1, 0), "mem0_v1"), ((2, 0, 0), (2, 3, 0), "mem0_v2"))
SUPPORTED_TEXT: Final = "mem0ai>=1.0.11,<1.1 or mem0ai>=2.0,<2.3"
ALL_MEMORIES: Final = 100_000  # the page size of all_memories (Mem0's own default is 100)


def mem0_version() -> tuple[int, ...]:
    try:
        text = package_metadata.version("mem0ai")
    except package_metadata.PackageNotFoundError:
        raise Mem0InstrumentationError(
            "mem0ai is not installed (pip install 'memtrace-graph[mem0]' for 2.x, "
            "'memtrace-graph[mem0-v1]' for 1.0.x)"
        ) from None
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


@dataclass
class LLMCall:
    messages: list[dict[str, Any]]
    response: str | None
    error: str | None = None
    request: str = ""  # request_digest of the call

    def metadata(self) -> dict[str, str | None]:
        """What the operation made by this call records of it: the request's digest and the
        reply, so that a replay can serve a request no repair changed (``systems/mem0_lib.py``)."""
        return {"llm_request": self.request, "llm_reply": self.response}


def request_digest(messages: Any, options: dict[str, Any]) -> str:
    """The identity of one call of Mem0's LLM: its messages and options (``response_format``)."""
    text = json.dumps({"messages": messages, **options}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class SearchResult:
    """What the traced ``search()`` recorded: the context variable and the operation id."""

    context: Var
    op_id: str


@dataclass
class Events:
    """What one traced ``add()`` did (a pipeline's subclass records more); appended to by the
    wrappers, possibly from Mem0's worker threads."""

    llm_calls: list[LLMCall] = field(default_factory=list)
    found: dict[str, str] = field(default_factory=dict)  # memory id -> text, from searches


E = TypeVar("E", bound=Events)


class Instrumented(Generic[E]):
    """The tracing state of one instrumented ``mem0.Memory``; a subclass per pipeline."""

    version_range: ClassVar[str]
    needed: ClassVar[tuple[str, ...]]  # dotted attributes of the Memory that must be callable
    # the operation name of each op one add() writes -> its step kind (``extract``: a replay
    # names the op ``extract:<message>``)
    step_kinds: ClassVar[Mapping[str, str]]
    call_steps: ClassVar[tuple[str, ...]]  # the step kind of each model call of one add(), in order
    # the settings of this version an application (and an optimizer) may set
    takes_custom_instructions: ClassVar[bool] = False  # config ``custom_instructions``
    takes_threshold: ClassVar[bool] = False  # ``search(threshold=...)``, memtrace passes it

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.memories: dict[str, Var] = {}  # Mem0 memory id -> its latest variable
        self.added = 0
        self.last_search: SearchResult | None = None
        self.written: list[tuple[str, str]] = []  # (name, op id) the last traced add() wrote
        self._inputs: tuple[Var, ...] = ()
        self._query: Var | None = None
        self._inside: Callable[[], None] | None = None
        self._lock = threading.Lock()  # one add() / search() at a time per memory
        self._events: E | None = None  # of the add() / search() under way

    @contextmanager
    def inputs(self, *variables: Var) -> Iterator[None]:
        """The variables the next ``add()`` calls consume (e.g. the conversation message)."""
        self._inputs = variables
        try:
            yield
        finally:
            self._inputs = ()

    @contextmanager
    def query(self, var: Var, inside: Callable[[], None] | None = None) -> Iterator[None]:
        """The question variable the next ``search()`` calls read; ``inside`` is called within
        each of their operations (e.g. to mark the parameters the search reads)."""
        self._query, self._inside = var, inside
        try:
            yield
        finally:
            self._query, self._inside = None, None

    def similar(self) -> list[tuple[str, str]]:
        """The memories (id, text) the similarity searches of the ``add()`` under way found, in
        the order Mem0 numbers them (``"0"``, ``"1"``, ...) in its update prompt."""
        return list(self._events.found.items()) if self._events is not None else []

    def wrap(self) -> None:
        """Install the wrappers on the Memory's collaborators."""
        raise NotImplementedError

    def search(
        self, query: str, *, user_id: str, top_k: int, threshold: float | None = None
    ) -> dict[str, Any]:
        """``memory.search`` for one user's memories, in the installed version's API
        (``threshold``: the least similarity of a result, None: Mem0's default)."""
        raise NotImplementedError

    def all_memories(self, user_id: str) -> list[dict[str, Any]]:
        """Every memory of one user (``{"id", "memory", ...}``), in the installed version's API."""
        raise NotImplementedError

    def digest(self, messages: Any, options: dict[str, Any]) -> str:
        """The identity of one call of Mem0's LLM, as the trace records it and a replay asks."""
        return request_digest(messages, options)

    def new_events(self) -> E:
        """An empty record for the next ``add()`` or ``search()``."""
        raise NotImplementedError

    def _write_add(self, messages: Any, events: E, result: Any) -> None:
        """Write what one ``add()`` did as operations (checked against the pipeline)."""
        raise NotImplementedError

    def _record_llm(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def generate_response(*args: Any, **kwargs: Any) -> Any:
            if self._events is None:
                return original(*args, **kwargs)
            messages = list(kwargs.get("messages", args[0] if args else []))
            options = {k: v for k, v in kwargs.items() if k != "messages"}
            call = LLMCall(messages, None, request=self.digest(messages, options))
            self._events.llm_calls.append(call)
            try:
                response = original(*args, **kwargs)
            except Exception as exc:
                call.error = f"{type(exc).__name__}: {exc}"
                raise
            call.response = response if isinstance(response, str) else json.dumps(response)
            return response

        return generate_response

    def _traced_add(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def add(messages: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self._events = events = self.new_events()
                self.written = []
                try:
                    result = original(messages, *args, **kwargs)
                finally:
                    self._events = None
                # infer=False adds and procedural memories (memory_type) are not traced
                if kwargs.get("infer", True) and kwargs.get("memory_type") is None and tracing():
                    self._write_add(messages, events, result)
                return result

        return add

    def _check(self, condition: bool, problem: str, call: str = "add()") -> None:
        if not condition:
            raise Mem0InstrumentationError(
                f"mem0 {call}: {problem}; this instrumentation follows the pipeline of "
                f"{self.version_range} and records no partial trace"
            )

    @contextmanager
    def _operation(
        self,
        name: str,
        category: str,
        call: LLMCall | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Iterator[None]:
        """An operation of a traced ``add()``, noted in ``written``; ``call``: its LLM call."""
        recorded = {**(metadata or {}), **(call.metadata() if call else {})}
        with operation(name, category=category, metadata=recorded or None):
            op = current_operation()
            if op is not None:
                self.written.append((name, op.id))
            yield

    def _input_vars(self, messages: Any) -> tuple[Var, ...]:
        self.added += 1
        return self._inputs or (variable(f"mem0-input:{self.added}", messages, category="message"),)

    def _memory_var(self, memory_id: str, text: str | None) -> Var:
        """The latest variable of a memory; one created before tracing began is registered."""
        known = self.memories.get(memory_id)
        if known is None:
            known = variable(memory_id, memory_value(memory_id, text), category="memory_entry")
            self.memories[memory_id] = known
        return known

    def _write_search(self, query: str, result: Any, metadata: dict[str, Any]) -> None:
        """``memory_system.search_vector_store``: reads the query and the memories returned,
        writes the context (their texts, best first)."""
        items = result.get("results", []) if isinstance(result, dict) else []
        self._check(
            all(isinstance(i, dict) and "id" in i and "memory" in i for i in items),
            'search() returned items without id/memory (expected {"results": [{"id", "memory", '
            '"score", ...}]})',
            "search()",
        )
        scores = {str(i["id"]): i.get("score") for i in items}
        with operation(
            "memory_system.search_vector_store",
            category="retrieval",
            metadata={"scores": scores, **metadata},
        ):
            query_var = self._query or variable(
                "mem0-query", query, category="message & query", class_name="query"
            )
            read(query_var)
            if self._inside is not None:
                self._inside()
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


def pipeline_class() -> type[Instrumented[Any]]:
    """The instrumentation of the installed mem0ai; Mem0InstrumentationError outside the
    tested ranges."""
    version = mem0_version()
    module = next((name for low, high, name in RANGES if low <= version < high), None)
    if module is None:
        raise Mem0InstrumentationError(
            f"mem0ai {'.'.join(map(str, version))} is not supported: the instrumentation is "
            f"tested with {SUPPORTED_TEXT}"
        )
    pipeline: type[Instrumented[Any]] = import_module(f"memtrace.integrations.{module}").PIPELINE
    return pipeline


def instrument(memory: Any) -> Instrumented[Any]:
    """Instrument one ``mem0.Memory``; raises Mem0InstrumentationError when the installed mem0ai
    is outside the tested ranges or the instance lacks what that version's pipeline wraps."""
    pipeline = pipeline_class()
    shown = ".".join(map(str, mem0_version()))
    missing = [name for name in pipeline.needed if not callable(_dotted(memory, name))]
    if missing:
        raise Mem0InstrumentationError(
            f"this mem0 Memory (mem0ai {shown}) has no {', '.join(missing)} "
            f"({pipeline.version_range} has them)"
        )
    if getattr(memory, "_memtrace", None) is not None:
        raise Mem0InstrumentationError("this mem0 Memory is instrumented already")
    state = pipeline(memory)
    state.wrap()
    memory._memtrace = state
    return state


def _dotted(target: Any, name: str) -> Any:
    for part in name.split("."):
        target = getattr(target, part, None)
    return target


def tracing() -> bool:
    from memtrace.tracing import active

    return active() is not None


def parse_json(response: str | None) -> dict[str, Any] | None:
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


def memory_value(memory_id: str, text: str | None) -> dict[str, str | None]:
    return {"id": memory_id, "memory": text}


__all__ = [
    "SUPPORTED_TEXT",
    "Instrumented",
    "Mem0InstrumentationError",
    "SearchResult",
    "instrument",
    "mem0_version",
    "request_digest",
]
