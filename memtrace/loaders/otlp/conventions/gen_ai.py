"""OTel GenAI semantic conventions: the current form (JSON messages with parts, as attributes or
on an event), the events form of v1.28 to v1.36, and the memory operations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from memtrace.loaders.otlp.conventions.shapes import (
    TOOL_RESULT,
    ContentSwitch,
    Convention,
    Io,
    arguments_text,
    content_text,
    ios,
    json_decoded,
    lookup,
    messages,
    parts_text,
    result_text,
    says_nothing,
    tool_blocks,
)
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

# OTel GenAI operation names -> memtrace kinds (after the span name's rules, loaders/kinds.py)
GEN_AI_KINDS: Final[dict[str, Kind]] = {
    "chat": "generation",
    "text_completion": "generation",
    "generate_content": "generation",
    "embeddings": "embedding",
    "execute_tool": "other",
    "invoke_agent": "other",
    "create_agent": "other",
    "execute_event_loop_cycle": "other",  # Strands: one model call and its tool calls
}
# OTel GenAI memory operations (semantic conventions, status Development). A create writes what
# an extraction produced into the store, as Mem0's add_to_vector_store does (kind embedding).
GEN_AI_MEMORY_KINDS: Final[dict[str, Kind]] = {
    "search_memory": "retrieval",
    "create_memory": "embedding",
    "update_memory": "update",
    "upsert_memory": "update",
    "delete_memory": "deletion",
    "create_memory_store": "other",
    "delete_memory_store": "deletion",
}

# -- OTel GenAI, current (v1.37+): JSON messages with parts, as attributes or on the event
# gen_ai.client.inference.operation.details ---------------------------------------------------

_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"


def _gen_ai_kind(span: Span) -> Kind | None:
    operation = span.attributes.get("gen_ai.operation.name")
    return lookup(GEN_AI_KINDS, operation) or lookup(GEN_AI_MEMORY_KINDS, operation)


def _gen_ai_sources(span: Span) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "gen_ai", span.attributes
    for i, (name, attributes) in enumerate(span.events):
        if name == _DETAILS_EVENT:
            yield f"event.{i}.gen_ai", attributes


def _gen_ai_inputs(span: Span) -> Iterator[Io]:
    for slot, attributes in _gen_ai_sources(span):
        system = attributes.get("gen_ai.system_instructions")
        if system is not None:
            text = parts_text(system)
            if text is not None:
                yield Io(f"{slot}.system", "system", text)
        yield from ios(f"{slot}.input", messages(attributes.get("gen_ai.input.messages")))
    query = span.attributes.get("gen_ai.memory.query.text")
    if isinstance(query, str):
        yield Io("gen_ai.memory.query", None, query)
    arguments = arguments_text(span.attributes.get("gen_ai.tool.call.arguments"))
    if arguments is not None:  # an execute_tool span: what the tool call passed
        yield Io("gen_ai.tool.call.arguments", None, arguments)


def _gen_ai_outputs(span: Span) -> Iterator[Io]:
    for slot, attributes in _gen_ai_sources(span):
        found = messages(attributes.get("gen_ai.output.messages"))
        yield from ios(f"{slot}.output", found, "assistant")
    result = result_text(span.attributes.get("gen_ai.tool.call.result"))
    if result is not None:
        yield Io("gen_ai.tool.call.result", TOOL_RESULT, result)


# -- OTel GenAI events (v1.28 to v1.36): one span event per message ------------------------------
# gen_ai.{system,user,assistant,tool}.message with ``content``; gen_ai.choice with ``message``
# (an object or its JSON text). Strands writes content as a JSON list of ``{"text": ...}``;
# pydantic-ai (instrumentation version 1) puts the same events, as a JSON list with an
# ``event.name`` each, into one ``events`` attribute.


def _message_events(span: Span) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, (name, attributes) in enumerate(span.events):
        yield f"event.{i}", {**attributes, "event.name": name}
    listed = json_decoded(span.attributes.get("events"))
    if isinstance(listed, list):
        for i, event in enumerate(listed):
            if isinstance(event, dict) and isinstance(event.get("event.name"), str):
                yield f"events.{i}", event


def _event_inputs(span: Span) -> Iterator[Io]:
    # Strands puts a tool's arguments in a gen_ai.tool.message on its execute_tool span
    tool_run = span.attributes.get("gen_ai.operation.name") == "execute_tool"
    for slot, event in _message_events(span):
        name = event["event.name"]
        if name.startswith("gen_ai.") and name.endswith(".message"):
            arguments = tool_run and name == "gen_ai.tool.message"
            text = (arguments_text if arguments else parts_text)(event.get("content"))
            if text is not None:
                yield Io(slot, name.removeprefix("gen_ai.").removesuffix(".message"), text)
            for i, (role, tool_text) in enumerate(tool_blocks(event.get("content"))):
                yield Io(f"{slot}.tool.{i}", role, tool_text)


def _event_outputs(span: Span) -> Iterator[Io]:
    for slot, event in _message_events(span):
        if event["event.name"] == "gen_ai.choice":
            message = json_decoded(event.get("message"))
            if isinstance(message, dict) and ("content" in message or "parts" in message):
                text = content_text(message.get("content", message.get("parts")))
            else:
                text = parts_text(message if message is not None else event.get("content"))
            if text is not None:
                yield Io(slot, "assistant", text)
            for i, (role, tool_text) in enumerate(tool_blocks(message)):
                yield Io(f"{slot}.tool.{i}", role, tool_text)


CONVENTIONS: Final = (
    Convention("gen_ai", _gen_ai_kind, _gen_ai_inputs, _gen_ai_outputs),
    Convention("gen_ai_events", says_nothing, _event_inputs, _event_outputs),
)

# the GenAI conventions' own instrumentations (opentelemetry-instrumentation-openai-v2 and the
# others built on opentelemetry-util-genai) record no content unless asked; EVENT_ONLY sends it to
# the logs signal, which memtrace does not receive
SWITCH: Final = ContentSwitch(
    "OpenTelemetry GenAI (opentelemetry-instrumentation-openai-v2, opentelemetry-util-genai)",
    lambda span: any(key.startswith("gen_ai.") for key in span.attributes),
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT) with "
    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental",
)
