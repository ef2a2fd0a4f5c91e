"""The span conventions the OTLP importer reads: one registry entry per instrumentation family,
one module per family.

Each convention says, for one span, what kind of operation it is (None: it does not say) and
which texts went in and came out. The loader asks every convention, in ``CONVENTIONS`` order,
and keeps one variable per distinct text, so a convention may overlap another (OpenLLMetry's
newest spans carry the current GenAI attributes, OpenLit's both attributes and events). What
each reads, with the source of the convention, is in docs/trace-format.md; adding one is a
module here and one entry in ``CONVENTIONS``. Everything here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.otlp.conventions import (
    cognee,
    gen_ai,
    langfuse,
    logfire,
    openinference,
    openlit,
    openllmetry,
    transport,
    vercel,
)
from memtrace.loaders.otlp.conventions.shapes import (
    ContentSwitch,
    Convention,
    Io,
    json_decoded,
    nothing,
)
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

MEMTRACE_KEYS: Final = "memtrace."
# the attributes by which a span says it is a framework's step (a chain, a retriever, a model
# call made through a framework)
FRAMEWORK_KEYS: Final = (
    "openinference.span.kind",
    "traceloop.span.kind",
)  # memtrace's own attributes (memtrace.case.*, ...)


def _memtrace_kind(span: Span) -> Kind | None:
    """A span with memtrace's own attributes (a case span an app adds around its call, the
    root span of memtrace's export) is known: its kind is other."""
    return "other" if any(key.startswith(MEMTRACE_KEYS) for key in span.attributes) else None


CONVENTIONS: Final[tuple[Convention, ...]] = (
    openinference.CONVENTION,
    *gen_ai.CONVENTIONS,
    *openllmetry.CONVENTIONS,
    openlit.CONVENTION,
    vercel.CONVENTION,
    logfire.CONVENTION,
    langfuse.CONVENTION,
    cognee.CONVENTION,
    # after every family that reads content: an HTTP or RPC span says only how a request came
    transport.CONVENTION,
    # last: memtrace.* attributes say nothing of the span's own kind, only that it is known
    Convention("memtrace", _memtrace_kind, nothing, nothing),
)


# What turns content capture on, per instrumentation family, the most specific first: a
# pydantic-ai, OpenLit or OpenLLMetry span also carries gen_ai.* attributes, and the GenAI
# conventions' own switch is for the instrumentations that write nothing else.
CONTENT_SWITCHES: Final[tuple[ContentSwitch, ...]] = (
    openinference.SWITCH,
    openllmetry.SWITCH,
    openlit.SWITCH,
    logfire.SWITCH,
    vercel.SWITCH,
    gen_ai.SWITCH,
)


# -- what the converter asks -------------------------------------------------------------------


def convention_kind(span: Span) -> Kind | None:
    """The kind the first convention that recognises the span gives; None when none does."""
    for convention in CONVENTIONS:
        kind = convention.kind(span)
        if kind is not None:
            return kind
    return None


def span_kind(span: Span) -> tuple[Kind, bool]:
    """The span's kind, and whether anything recognised it (its name by the rules of
    loaders/kinds.py, else a convention); an unrecognised span is ``other``."""
    by_name = derive_kind(_step_name(span), None)
    if by_name != "other":
        return by_name, True
    kind = convention_kind(span)
    return (kind, True) if kind is not None else ("other", False)


def _step_name(span: Span) -> str:
    """The name the kind rules read: a framework step named ``Class.method`` (LlamaIndex's
    ``RetrieverQueryEngine.query``, ``NotesRetriever.retrieve``) is what its method does, not
    what its class is called."""
    framework = any(key in span.attributes for key in FRAMEWORK_KEYS)
    return span.name.rsplit(".", 1)[-1] if framework and "." in span.name else span.name


def span_inputs(span: Span) -> list[Io]:
    return _unique(io for c in CONVENTIONS for io in c.inputs(span))


def span_outputs(span: Span) -> list[Io]:
    return _unique(io for c in CONVENTIONS for io in c.outputs(span))


def _unique(found: Iterator[Io]) -> list[Io]:
    """One Io per text: the same text twice is one variable read once."""
    seen: set[str] = set()
    unique = []
    for io in found:
        if io.text and io.text not in seen:
            seen.add(io.text)
            unique.append(io)
    return unique


# Keys that name content (a prompt, a message, an output) rather than its metadata; a span with
# a non-empty value under such a key that produced no variable is counted as unread.
_CONTENT_KEY = re.compile(
    r"(^|[._])(prompt|completion|messages?|input|output|content|text|query|question|answer|"
    r"reply|result|response|documents?|context|request_data|response_data|arguments|args)"
    r"([._]|$)"
)
_METADATA_KEY = re.compile(
    r"(mime_type|model|id|name|type|role|finish_reasons?|tokens?|count|index|system|"
    r"provider|streaming|api_base)$"
)


def content_keys(span: Span) -> list[str]:
    """The keys of the span's attributes and event attributes that look like content."""
    found = []
    sources = [("", span.attributes)] + [(f"{name}:", attrs) for name, attrs in span.events]
    for prefix, attributes in sources:
        for key, value in attributes.items():
            if (
                not key.startswith(MEMTRACE_KEYS)  # the case's own attributes are read as the case
                and value not in (None, "", [], {})
                and not isinstance(value, bool | int | float)
                and _CONTENT_KEY.search(key)
                and not _METADATA_KEY.search(key)
                and not _empty_wrapper(value)
            ):
                found.append(prefix + key)
    return found


def _empty_wrapper(value: object) -> bool:
    """A framework step's value wrapped with its metadata whose value is empty (OpenLLMetry's
    ``{"inputs": [], "tags": [...]}`` of a step given nothing) carries no content."""
    parsed = json_decoded(value)
    if not isinstance(parsed, dict):
        return False
    wrapped = [key for key in ("inputs", "outputs") if key in parsed]
    return bool(wrapped) and all(parsed[key] in (None, "", [], {}) for key in wrapped)


def conversation_ids(span: Span) -> dict[str, str]:
    """The ids that tie a span to a conversation across requests (each request its own OTel
    trace): ``session`` (OpenInference / OpenLLMetry ``session.id``, Langfuse's
    ``langfuse.session.id``, GenAI's ``gen_ai.conversation.id``) and ``user``
    (``user.id``, ``langfuse.user.id``); a key is left out when the span names none."""
    found: dict[str, str] = {}
    for name, keys in (
        ("session", (*langfuse.SESSION_KEYS, "gen_ai.conversation.id")),
        ("user", langfuse.USER_KEYS),
    ):
        value = next((span.attributes[k] for k in keys if span.attributes.get(k) is not None), None)
        if value is not None:
            found[name] = str(value)
    return found


def content_free(span: Span) -> bool:
    """A span of a known kind that by its convention carries no content (cognee's memory
    spans: counts only): not counted as unread content, named as content-free."""
    return cognee.content_free(span)


def content_switch(span: Span) -> ContentSwitch | None:
    """The switch of the instrumentation that wrote ``span``, when one of ``CONTENT_SWITCHES``
    recognises it."""
    return next((switch for switch in CONTENT_SWITCHES if switch.writes(span)), None)
