"""pydantic-ai and Logfire: tool and agent run attributes, Logfire's OpenAI spans."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from memtrace.loaders.otlp.conventions.shapes import (
    ContentSwitch,
    Convention,
    Io,
    arguments_text,
    as_text,
    content_text,
    ios,
    json_decoded,
    messages,
)
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind


def _logfire_kind(span: Span) -> Kind | None:
    """pydantic-ai's agent runs and tool calls (instrumentation version 1 names no operation)."""
    attributes = span.attributes
    agent_or_tool = ("gen_ai.agent.name", "agent_name", "gen_ai.tool.name", "tool_arguments")
    return "other" if any(key in attributes for key in agent_or_tool) else None


def _logfire_inputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    if attributes.get("tool_arguments") is not None:
        yield Io("tool_arguments", None, arguments_text(attributes["tool_arguments"]) or "")
    request = json_decoded(attributes.get("request_data"))
    if isinstance(request, dict):
        yield from ios("request_data.messages", messages(request.get("messages")))


def _logfire_outputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    for key in ("tool_response", "final_result"):
        if attributes.get(key) is not None:
            yield Io(key, "assistant", as_text(attributes[key]) or "")
    response = json_decoded(attributes.get("response_data"))
    if isinstance(response, dict):
        message = response.get("message")
        text = content_text(message.get("content")) if isinstance(message, dict) else None
        if text is not None:
            yield Io("response_data.message", "assistant", text)


CONVENTION: Final = Convention("logfire", _logfire_kind, _logfire_inputs, _logfire_outputs)

# pydantic-ai's own instrumentation keeps content out with include_content=False
SWITCH: Final = ContentSwitch(
    "pydantic-ai",
    lambda span: span.scope.startswith("pydantic-ai") or span.scope.startswith("pydantic_ai"),
    "InstrumentationSettings(include_content=True) (the default) in Agent(instrument=...) or "
    "Agent.instrument_all(...)",
)
