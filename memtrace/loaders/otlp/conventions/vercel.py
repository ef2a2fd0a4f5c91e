"""The Vercel AI SDK: ai.* attributes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from memtrace.loaders.otlp.conventions.shapes import (
    TOOL_CALL,
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

# the operation plus ``.doGenerate`` / ``.doStream`` / ``.doEmbed``.
VERCEL_AI_KINDS: Final[dict[str, Kind]] = {
    "ai.generateText": "generation",
    "ai.streamText": "generation",
    "ai.generateObject": "generation",
    "ai.streamObject": "generation",
    "ai.embed": "embedding",
    "ai.embedMany": "embedding",
    "ai.toolCall": "other",
}


def _vercel_kind(span: Span) -> Kind | None:
    operation = span.attributes.get("ai.operationId")
    name = operation if isinstance(operation, str) else span.name
    base = re.sub(r"\.do(Generate|Stream|Embed)$", "", name)
    return VERCEL_AI_KINDS.get(base)


def _vercel_inputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    prompt = json_decoded(attributes.get("ai.prompt"))
    if isinstance(prompt, dict):  # {system?, prompt?, messages?}
        if isinstance(prompt.get("system"), str):
            yield Io("ai.prompt.system", "system", prompt["system"])
        text = content_text(prompt.get("prompt"))
        if text is not None:
            yield Io("ai.prompt", "user", text)
        yield from ios("ai.prompt.messages", messages(prompt.get("messages")))
    elif isinstance(prompt, str):
        yield Io("ai.prompt", "user", prompt)
    yield from ios("ai.prompt.messages", messages(attributes.get("ai.prompt.messages")))
    if attributes.get("ai.value") is not None:
        yield Io("ai.value", None, as_text(attributes["ai.value"]) or "")
    if attributes.get("ai.toolCall.args") is not None:
        yield Io("ai.toolCall.args", None, arguments_text(attributes["ai.toolCall.args"]) or "")
    values = json_decoded(attributes.get("ai.values"))
    if isinstance(values, list):
        for i, value in enumerate(values):
            yield Io(f"ai.values.{i}", None, as_text(value) or "")


def _vercel_outputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    for key in ("ai.response.text", "ai.result.text", "ai.response.object", "ai.toolCall.result"):
        if attributes.get(key) is not None:
            yield Io(key, "assistant", as_text(attributes[key]) or "")
    calls = json_decoded(attributes.get("ai.response.toolCalls"))  # [{toolCallId, toolName, args}]
    for i, call in enumerate(calls if isinstance(calls, list) else ()):
        if isinstance(call, dict):
            text = arguments_text(call.get("args", call.get("input")))
            if text is not None:
                yield Io(f"ai.response.toolCalls.{i}", TOOL_CALL, text)


CONVENTION: Final = Convention("vercel_ai", _vercel_kind, _vercel_inputs, _vercel_outputs)

# the AI SDK's telemetry settings record inputs and outputs unless told not to
SWITCH: Final = ContentSwitch(
    "Vercel AI SDK",
    lambda span: _vercel_kind(span) is not None,
    "experimental_telemetry: { isEnabled: true, recordInputs: true, recordOutputs: true } on "
    "each generateText / streamText call",
)
