"""Tracing mem0ai 2.x (``mem0ai>=2.0,<2.3``): additive extraction and hybrid search.

Mem0 2.x runs ``add()`` in the caller's thread: it reads the scope's last messages back
(``db.get_last_messages``), embeds the turn and searches the 10 nearest memories
(``vector_store.search``), makes ONE LLM call (the additive-extraction prompt, JSON
``{"memory": [{id, text, attributed_to, linked_memory_ids}]}``) that only ADDs, embeds the new
texts in one batch, drops those whose MD5 matches a memory it retrieved or an earlier text of
the batch, inserts the rest in one ``vector_store.insert`` and writes one ADD history row each.
Nothing is updated or deleted during ``add()``: only the public ``update()`` / ``delete()`` do.

The wrappers record those calls (the LLM's ``generate_response``, the embedder's ``embed`` /
``embed_batch`` counted once per call, the vector store's ``search`` / ``keyword_search`` /
``insert``, the history's ``get_last_messages`` / ``batch_add_history`` / ``add_history``, the
entity boost and the reranker, never the separate entity or telemetry stores). When ``add()``
returns, they become, in this order:

- ``memory_system.retrieve_existing_memories`` (retrieval): reads the memories the lookup found,
  writes ``existing_memories:<n>`` (what the LLM was shown, with Mem0's index ids); the turn it
  searched with is in the op's metadata, not read, so that the message's one reader is the
  extraction (an attribution that follows the message must not stop at a lookup);
- ``memory_system.extract_memories`` (extraction): reads the input messages, the
  ``additive-extraction-prompt``, ``existing_memories:<n>`` and ``recent_messages:<n>`` (the
  messages read back), writes ``extracted:<n>`` (the memories Mem0 parsed from the reply);
- ``memory_system.add_to_vector_store`` (embedding): reads ``extracted:<n>`` and the memories a
  dropped duplicate matched, writes one ``memory_entry`` per inserted memory; the dropped texts
  and why (``duplicate`` of a retrieved memory, ``batch duplicate``, ``not embedded``) are in
  the op's metadata.

``search()`` becomes ``memory_system.search_vector_store`` with the final scores, the semantic
candidates' raw scores (the threshold applies to them), the raw BM25 scores of
``keyword_search`` (None when the store has no keyword search), the entity boosts (None without
spaCy) and whether a reranker reordered them, in the op's metadata. ``update()`` and
``delete()`` become ``memory_system.update_memory`` / ``memory_system.delete_memory``.

For replays, the extraction records its model call (``llm_request`` / ``llm_reply``); the three
ops of one ``add()`` are the steps ``lookup``, ``extract`` and ``add``. The request's identity
leaves out the two dates Mem0 stamps into the extraction prompt (``## Observation Date``,
``## Current Date``: today's, when ``add()`` is given no timestamp), so that a trace replays on
another day with the replies it recorded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from memtrace.integrations.mem0 import (
    ALL_MEMORIES,
    Events,
    Instrumented,
    memory_value,
    parse_json,
    request_digest,
    tracing,
)
from memtrace.tracing import Registered, delete, mutation, operation, read, variable

EXTRACTION_PROMPT = Registered("additive-extraction-prompt", category="prompt")
CUSTOM_INSTRUCTIONS_NAME = "custom-instructions"
CUSTOM_INSTRUCTIONS = Registered(CUSTOM_INSTRUCTIONS_NAME, category="prompt")
EXISTING_TOP_K = 10  # what add() asks the store for (mem0 2.x)
# the dates generate_additive_extraction_prompt writes (today's, unless given): not the request's
# identity
_DATES = re.compile(r"(## (?:Observation|Current) Date\n)[^\n]*")


@dataclass(frozen=True)
class _Found:
    id: str
    text: str
    score: float | None
    hash: str | None


@dataclass
class _Events(Events):
    """What one ``add()`` or ``search()`` did, in order."""

    recent: list[dict[str, Any]] | None = None
    searches: list[list[_Found]] = field(default_factory=list)
    keyword: list[list[_Found]] = field(default_factory=list)
    inserted: list[_Found] = field(default_factory=list)
    history_rows: int = 0
    embedding_calls: int = 0
    entity_boosts: dict[str, float] | None = None
    reranked: bool = False


class Mem0V2(Instrumented[_Events]):
    """mem0ai 2.x: additive extraction, MD5 de-duplication, hybrid search."""

    version_range: ClassVar[str] = "mem0ai>=2.0,<2.3 (additive extraction, hybrid search)"
    needed: ClassVar[tuple[str, ...]] = (
        "llm.generate_response",
        "embedding_model.embed",
        "embedding_model.embed_batch",
        "vector_store.search",
        "vector_store.keyword_search",
        "vector_store.insert",
        "db.get_last_messages",
        "db.batch_add_history",
        "db.add_history",
        "_compute_entity_boosts",
        "add",
        "search",
        "update",
        "delete",
        "get",
    )
    step_kinds: ClassVar[Mapping[str, str]] = {
        "memory_system.retrieve_existing_memories": "lookup",
        "memory_system.extract_memories": "extract",
        "memory_system.add_to_vector_store": "add",
    }
    call_steps: ClassVar[tuple[str, ...]] = ("extract",)
    takes_custom_instructions: ClassVar[bool] = True
    takes_threshold: ClassVar[bool] = True

    def __init__(self, memory: Any) -> None:
        super().__init__(memory)
        self._embedding_depth = 0  # embed_batch may loop over embed: count the outer call

    def new_events(self) -> _Events:
        return _Events()

    def digest(self, messages: Any, options: dict[str, Any]) -> str:
        undated = [
            {**m, "content": _DATES.sub(r"\1-", m["content"])}
            if isinstance(m, dict) and isinstance(m.get("content"), str)
            else m
            for m in messages
        ]
        return request_digest(undated, options)

    def wrap(self) -> None:
        memory = self.memory
        memory.llm.generate_response = self._record_llm(memory.llm.generate_response)
        embedder = memory.embedding_model
        embedder.embed = self._count_embedding(embedder.embed)
        embedder.embed_batch = self._count_embedding(embedder.embed_batch)
        store = memory.vector_store
        store.search = self._record_found(store.search, "searches")
        store.keyword_search = self._record_found(store.keyword_search, "keyword")
        store.insert = self._record_insert(store.insert)
        db = memory.db
        db.get_last_messages = self._record_recent(db.get_last_messages)
        db.batch_add_history = self._count_history(db.batch_add_history, batch=True)
        db.add_history = self._count_history(db.add_history, batch=False)
        memory._compute_entity_boosts = self._record_boosts(memory._compute_entity_boosts)
        if getattr(memory, "reranker", None) is not None:
            memory.reranker.rerank = self._record_rerank(memory.reranker.rerank)
        memory.add = self._traced_add(memory.add)
        memory.search = self._traced_search(memory.search)
        memory.update = self._traced_update(memory.update)
        memory.delete = self._traced_delete(memory.delete)

    def search(
        self, query: str, *, user_id: str, top_k: int, threshold: float | None = None
    ) -> dict[str, Any]:
        options = {"threshold": threshold} if threshold is not None else {}
        result: dict[str, Any] = self.memory.search(
            query, filters={"user_id": user_id}, top_k=top_k, **options
        )
        return result

    def all_memories(self, user_id: str) -> list[dict[str, Any]]:
        found: dict[str, Any] = self.memory.get_all(
            filters={"user_id": user_id}, top_k=ALL_MEMORIES
        )
        return list(found.get("results", []))

    # -- the wrappers: they only record ------------------------------------------------------

    def _count_embedding(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def embed(*args: Any, **kwargs: Any) -> Any:
            if self._events is not None and self._embedding_depth == 0:
                self._events.embedding_calls += 1
            self._embedding_depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                self._embedding_depth -= 1

        return embed

    def _record_found(self, original: Callable[..., Any], kind: str) -> Callable[..., Any]:
        def search(*args: Any, **kwargs: Any) -> Any:
            found = original(*args, **kwargs)
            if self._events is not None and (found is not None or kind == "searches"):
                getattr(self._events, kind).append([_found(item) for item in found or []])
            return found

        return search

    def _record_insert(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def insert(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)  # a failed batch is retried one by one
            if self._events is not None:
                ids = kwargs.get("ids", args[1] if len(args) > 1 else None) or []
                payloads = kwargs.get("payloads", args[2] if len(args) > 2 else None) or []
                for memory_id, payload in zip(ids, payloads, strict=True):
                    fields = payload if isinstance(payload, dict) else {}
                    self._events.inserted.append(
                        _Found(str(memory_id), str(fields.get("data")), None, fields.get("hash"))
                    )
            return result

        return insert

    def _record_recent(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def get_last_messages(*args: Any, **kwargs: Any) -> Any:
            messages = original(*args, **kwargs)
            if self._events is not None:
                self._events.recent = list(messages or [])
            return messages

        return get_last_messages

    def _count_history(self, original: Callable[..., Any], *, batch: bool) -> Callable[..., Any]:
        def history(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self._events is not None:
                rows = kwargs.get("records", args[0] if args else []) if batch else [None]
                self._events.history_rows += len(rows)
            return result

        return history

    def _record_boosts(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def compute_entity_boosts(*args: Any, **kwargs: Any) -> Any:
            boosts = original(*args, **kwargs)
            if self._events is not None and isinstance(boosts, dict):
                self._events.entity_boosts = {str(k): float(v) for k, v in boosts.items()}
            return boosts

        return compute_entity_boosts

    def _record_rerank(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def rerank(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self._events is not None:
                self._events.reranked = True
            return result

        return rerank

    # -- the traced public methods ------------------------------------------------------------

    def _traced_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def search(query: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self._events = events = _Events()
                try:
                    result = original(query, *args, **kwargs)
                finally:
                    self._events = None
                if tracing():
                    self._write_search(query, result, self._search_metadata(events, kwargs))
                return result

        return search

    def _traced_update(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def update(memory_id: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                old = self._known(str(memory_id)) if tracing() else None
                result = original(memory_id, *args, **kwargs)
                text = kwargs.get("text", args[0] if args else None) or kwargs.get("data")
                if old is not None and text is not None:  # a metadata-only update: no version
                    with operation("memory_system.update_memory", category="update"):
                        self.memories[str(memory_id)] = mutation(
                            old, memory_value(str(memory_id), str(text)), category="memory_entry"
                        )
                return result

        return update

    def _traced_delete(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def delete_memory(memory_id: str, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                old = self._known(str(memory_id)) if tracing() else None
                result = original(memory_id, *args, **kwargs)
                if old is not None:
                    with operation("memory_system.delete_memory", category="deletion"):
                        delete(old)
                    self.memories.pop(str(memory_id), None)
                return result

        return delete_memory

    def _known(self, memory_id: str) -> Any:
        """The memory's variable; one stored before tracing began is read from Mem0 first."""
        if memory_id not in self.memories:
            stored = self.memory.get(memory_id) or {}
            self._memory_var(memory_id, stored.get("memory"))
        return self.memories[memory_id]

    # -- events -> operations ---------------------------------------------------------------

    def _write_add(self, messages: Any, events: _Events, result: Any) -> None:
        self._check(
            len(events.searches) == 1,
            f"{len(events.searches)} vector searches (expected the one existing-memory lookup)",
        )
        self._check(
            len(events.llm_calls) == 1,
            f"{len(events.llm_calls)} LLM calls (expected one additive-extraction call)",
        )
        call = events.llm_calls[0]
        self._check(call.error is None, f"the extraction call failed: {call.error}")
        system = next((m for m in call.messages if m.get("role") == "system"), {})
        user = next((m for m in call.messages if m.get("role") == "user"), {})
        self._check(
            "## New Messages" in str(user.get("content", "")),
            "the LLM call is not an additive extraction (no '## New Messages' section)",
        )
        found = events.searches[0]
        extracted = _extracted(call.response)
        results = result.get("results", []) if isinstance(result, dict) else []
        returned = [str(r.get("id")) for r in results if isinstance(r, dict)]
        stored = [item.id for item in events.inserted]
        self._check(
            returned == stored and all(r.get("event") == "ADD" for r in results),
            f"add() returned {returned} but the store saw inserts of {stored}",
        )
        self._check(
            events.history_rows == len(stored),
            f"{events.history_rows} history rows for {len(stored)} inserts",
        )
        dropped = _dropped(extracted, found, events.inserted)
        inputs = self._input_vars(messages)
        number = self.added
        with self._operation(
            "memory_system.retrieve_existing_memories",
            "retrieval",
            metadata={
                "query": _turn(messages),
                "top_k": EXISTING_TOP_K,
                "scores": {item.id: item.score for item in found},
            },
        ):
            seen = [self._memory_var(item.id, item.text) for item in found]
            read(*seen)
            shown = [{"id": str(i), "text": item.text} for i, item in enumerate(found)]
            existing = variable(
                f"existing_memories:{number}",
                shown,
                category="memory_context",
                class_name="context",
                sources=tuple(seen),
            )
        with self._operation("memory_system.extract_memories", "extraction", call):
            read(*inputs, existing)
            EXTRACTION_PROMPT.read(system.get("content"))
            # what the request appended (add(prompt=...) overrides the configured ones); ""
            # when none: an input of the extraction all the same, which an optimizer may set
            CUSTOM_INSTRUCTIONS.read(_section(str(user.get("content", "")), "Custom Instructions"))
            sources = (*inputs, existing)
            if events.recent:
                recent = variable(
                    f"recent_messages:{number}",
                    [f"{m.get('role')}: {m.get('content')}" for m in events.recent],
                    category="conversation_history",
                )
                read(recent)
            extracted_var = variable(
                f"extracted:{number}", extracted, category="llm_response", sources=sources
            )
        if not extracted:
            return
        metadata: dict[str, Any] = {"embedding_calls": events.embedding_calls}
        if dropped:
            metadata["dropped"] = dropped
        with self._operation("memory_system.add_to_vector_store", "embedding", metadata=metadata):
            read(extracted_var)
            matched = {d["duplicate_of"] for d in dropped if d.get("duplicate_of")}
            read(*(self.memories[memory_id] for memory_id in matched if memory_id in self.memories))
            for item in events.inserted:
                self.memories[item.id] = variable(
                    item.id,
                    memory_value(item.id, item.text),
                    category="memory_entry",
                    sources=(extracted_var,),
                )

    def _search_metadata(self, events: _Events, kwargs: dict[str, Any]) -> dict[str, Any]:
        self._check(
            len(events.searches) == 1,
            f"{len(events.searches)} vector searches (expected one semantic search)",
            "search()",
        )
        keyword = events.keyword[0] if events.keyword else None
        return {
            "semantic": {item.id: item.score for item in events.searches[0]},
            "keyword": {item.id: item.score for item in keyword} if keyword is not None else None,
            "entity": events.entity_boosts,
            "threshold": kwargs.get("threshold", 0.1),
            "top_k": kwargs.get("top_k", 20),
            "reranked": events.reranked,
        }


def _found(item: Any) -> _Found:
    payload = getattr(item, "payload", None) or {}
    score = getattr(item, "score", None)
    return _Found(
        str(item.id),
        str(payload.get("data", "")),
        float(score) if isinstance(score, int | float) else None,
        payload.get("hash"),
    )


def _extracted(response: str | None) -> list[dict[str, Any]]:
    """The memories Mem0 took from the reply: ``memory`` items with a text (a reply that is no
    JSON object, or has no ``memory`` list, is read as none, as Mem0 does)."""
    parsed = parse_json(response)
    items = parsed.get("memory") if parsed is not None else None
    if not isinstance(items, list):
        return []
    return [
        {"text": item["text"], "attributed_to": item.get("attributed_to")}
        for item in items
        if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"]
    ]


def _dropped(
    extracted: list[dict[str, Any]], found: list[_Found], inserted: list[_Found]
) -> list[dict[str, Any]]:
    """The extracted texts that were not stored, and why (Mem0's MD5 de-duplication)."""
    existing = {item.hash: item.id for item in found if item.hash}
    stored = {item.text for item in inserted}
    seen: set[str] = set()
    dropped: list[dict[str, Any]] = []
    for item in extracted:
        text = item["text"]
        digest = hashlib.md5(text.encode()).hexdigest()
        if digest in existing:
            dropped.append({"text": text, "reason": "duplicate", "duplicate_of": existing[digest]})
        elif digest in seen:
            dropped.append({"text": text, "reason": "batch duplicate"})
        elif text not in stored:
            dropped.append({"text": text, "reason": "not embedded"})
        seen.add(digest)
    return dropped


def _section(prompt: str, title: str) -> str:
    """The text of the ``## <title>`` section of Mem0's extraction prompt ("" when absent)."""
    _, found, rest = prompt.partition(f"## {title}\n")
    if not found:
        return ""
    return re.split(r"\n\n#{1,2} ", rest, maxsplit=1)[0].strip()


def _turn(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    if isinstance(messages, dict):
        messages = [messages]
    return "\n".join(
        f"{m.get('role')}: {m.get('content')}" for m in messages if isinstance(m, dict)
    )


PIPELINE = Mem0V2
