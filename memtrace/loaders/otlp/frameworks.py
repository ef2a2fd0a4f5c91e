"""The data flow framework spans carry inside their values (LangChain, LlamaIndex; under
OpenInference or OpenLLMetry), which exact-text identity alone misses.

A framework step hands its value on wrapped or unwrapped: a retriever outputs ``{"documents":
[...]}`` and the next step takes the bare list; ``RunnableParallel`` outputs ``{"context": ...,
"question": ...}`` built from its branches' outputs; a prompt template outputs the messages the
model call then reads one by one; a model decides an update as JSON and the store applies one
field of it. So a value is also found by its **parts**: the sub-values of a JSON object or list
(canonical JSON for containers, the strings themselves), at any depth. ``Parts`` indexes them;
the reader asks it which earlier variables a new text carries (its parts are variables) or
unwraps (it is a part of a variable). docs/trace-format.md, "Data flow". Everything here is
pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from memtrace.loaders.otlp.conventions import FRAMEWORK_KEYS

# a part shorter than this (an "id": null, a role "ai", a flag) says nothing of where a value
# came from; a note id such as "note-7" is long enough
MIN_PART: Final = 6
MAX_DEPTH: Final = 6


def canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def decoded(text: str) -> Any:
    """The JSON container a text holds, else None."""
    if text[:1] not in ("{", "["):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict | list) else None


def parts(text: str) -> list[str]:
    """The sub-values of a JSON text (strings as they are, containers as canonical JSON), at
    any depth; none for a text that is no JSON object or list."""
    value = decoded(text)
    if value is None:
        return []
    found = dict.fromkeys(_parts(value, 0))
    found.pop(canonical(value), None)
    return list(found)


def _parts(value: Any, depth: int) -> Iterator[str]:
    if isinstance(value, str):
        if len(value) >= MIN_PART:
            yield value
            inner = decoded(value)  # JSON inside a string (an AI message's JSON content)
            if inner is not None and depth < MAX_DEPTH:
                yield from _parts(inner, depth + 1)
        return
    if not isinstance(value, dict | list) or depth > MAX_DEPTH:
        return
    if value:
        yield canonical(value)
    for item in value.values() if isinstance(value, dict) else value:
        yield from _parts(item, depth + 1)


def same_value(text: str) -> str:
    """The text under which a value is compared with parts: canonical JSON for a JSON text (the
    list a step takes may be spaced or ordered otherwise than inside the wrapper), else itself."""
    value = decoded(text)
    return canonical(value) if value is not None else text


def says_where_from(part: str) -> bool:
    """Whether a part, found in an earlier value, says the value came from there: a text of
    several words or a structure does; a single token (an id, a name, a role) is shared by
    unrelated values and does not."""
    return part[:1] in ("{", "[") or any(c.isspace() for c in part.strip())


def root_inputs(text: str) -> list[str]:
    """The texts a framework's outermost step was given: the string values of a JSON object
    (``chain.invoke({"message": ...})`` as OpenLLMetry and LlamaIndex write it), else the text
    itself (OpenInference unwraps a single input)."""
    value = decoded(text)
    if isinstance(value, dict):
        strings = [v for v in value.values() if isinstance(v, str) and v]
        return strings or [text]
    return [text]


def is_framework_step(attributes: dict[str, Any]) -> bool:
    return any(attributes.get(key) is not None for key in FRAMEWORK_KEYS)


def is_chain(attributes: dict[str, Any]) -> bool:
    kind = attributes.get("openinference.span.kind") or attributes.get("traceloop.span.kind")
    return isinstance(kind, str) and kind.upper() in ("CHAIN", "WORKFLOW", "AGENT", "TASK")


def unnamed_documents(attributes: dict[str, Any], indexed: list[dict[str, Any]]) -> list[str]:
    """The contents of retrieved documents that carry no id, linked to the stored items by
    content: OpenInference's ``retrieval.documents.N.document.content`` without ``.id``
    (LangChain's documents), and the ``page_content`` of OpenLLMetry's LangChain retriever
    output ``{"documents": [{"page_content", "metadata"}], "count"}``."""
    found = [
        doc["document.content"]
        for doc in indexed
        if doc.get("document.id") is None and isinstance(doc.get("document.content"), str)
    ]
    output = attributes.get("traceloop.entity.output")
    value = decoded(output) if isinstance(output, str) else None
    documents = value.get("documents") if isinstance(value, dict) else None
    for doc in documents if isinstance(documents, list) else ():
        if isinstance(doc, dict) and isinstance(doc.get("page_content"), str):
            found.append(doc["page_content"])
    return found


EMBED_WORDS: Final = 4  # an earlier value this long or longer, found verbatim in a prompt


class Embedded:
    """Earlier values (step outputs and their string parts) found verbatim inside a prompt: a
    prompt formatted from them (``PromptTemplate.format(...)`` then ``llm.complete``) read them.
    Indexed by their first words, so a prompt is scanned once per word."""

    def __init__(self) -> None:
        self.by_start: dict[tuple[str, ...], set[str]] = {}

    def add(self, text: str) -> None:
        for value in (text, *parts(text)):
            words = tuple(value.split()[:EMBED_WORDS])
            if len(words) == EMBED_WORDS and value[:1] not in ("{", "["):
                self.by_start.setdefault(words, set()).add(value)

    def found_in(self, prompt: str) -> list[str]:
        """The indexed values the prompt holds verbatim (not the prompt itself)."""
        words = prompt.split()
        found: dict[str, None] = {}
        for i in range(len(words) - EMBED_WORDS + 1):
            for value in self.by_start.get(tuple(words[i : i + EMBED_WORDS]), ()):
                if value != prompt and value in prompt:
                    found[value] = None
        return list(found)
