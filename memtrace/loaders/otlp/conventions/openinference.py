"""OpenInference (Phoenix, Arize; LangChain, LlamaIndex and others through OpenInference)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from memtrace.loaders.otlp.conventions.shapes import (
    TOOL_CALL,
    ContentSwitch,
    Convention,
    Io,
    arguments_text,
    as_text,
)
from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind

# OpenInference span kinds -> memtrace kinds; used when the span name matches no rule of
# loaders/kinds.py (a name such as memory_system.extract_facts is more specific than "LLM").
OPENINFERENCE_KINDS: Final[dict[str, Kind]] = {
    "LLM": "generation",
    "RETRIEVER": "retrieval",
    "RERANKER": "retrieval",
    "EMBEDDING": "embedding",
    "EVALUATOR": "judge",
    "CHAIN": "other",
    "TOOL": "other",
    "AGENT": "other",
    "GUARDRAIL": "other",
    "PROMPT": "other",
}


# LlamaIndex's response synthesizers (CompactAndRefine, Refine, TreeSummarize, ...: every
# BaseSynthesizer) answer in a CHAIN span ``<Synthesizer>.synthesize``: the answering step, which
# writes the answer itself when retrieval found nothing ("Empty Response", no model call)
_ANSWERING_CHAINS: Final = re.compile(r"\.a?synthesize$")


def _openinference_kind(span: Span) -> Kind | None:
    kind = span.attributes.get("openinference.span.kind")
    if not isinstance(kind, str):
        return None
    if kind.upper() == "CHAIN" and _ANSWERING_CHAINS.search(span.name):
        return "generation"
    return OPENINFERENCE_KINDS.get(kind.upper())


def _openinference_message(message: dict[str, Any]) -> str | None:
    """``message.content`` or ``message.contents.N.message_content.text``."""
    content = message.get("message.content")
    if content is not None:
        return as_text(content)
    parts = [v for k, v in sorted(message.items()) if k.endswith("message_content.text")]
    return "\n".join(str(p) for p in parts) if parts else None


_OPENINFERENCE_ARGUMENTS: Final = re.compile(
    r"message\.tool_calls\.(\d+)\.tool_call\.function\.arguments"
)


def _openinference_tool_calls(slot: str, message: dict[str, Any]) -> Iterator[Io]:
    """``message.tool_calls.M.tool_call.function.arguments`` of one message."""
    calls = sorted(
        (int(match.group(1)), value)
        for key, value in message.items()
        if (match := _OPENINFERENCE_ARGUMENTS.fullmatch(key))
    )
    for m, value in calls:
        text = arguments_text(value)
        if text is not None:
            yield Io(f"{slot}.tool_calls.{m}", TOOL_CALL, text)


def _openinference_inputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    for i, message in enumerate(span.indexed("llm.input_messages")):
        text = _openinference_message(message)
        if text is not None:
            role = message.get("message.role")
            yield Io(f"input_messages.{i}", str(role) if role else None, text)
        yield from _openinference_tool_calls(f"input_messages.{i}", message)
    for i, embedding in enumerate(span.indexed("embedding.embeddings")):
        text = embedding.get("embedding.text")
        if text is not None:
            yield Io(f"embedding.{i}", None, as_text(text) or "")
    prompts = attributes.get("llm.prompts")  # a completion call's prompts (LlamaIndex)
    for i, prompt in enumerate(prompts if isinstance(prompts, list) else ()):
        if isinstance(prompt, str):
            yield Io(f"prompts.{i}", "user", prompt)
    value = attributes.get("input.value")
    if value is not None:
        # a tool's arguments, compared as JSON with the tool call that asked for them
        tool = str(attributes.get("openinference.span.kind")).upper() == "TOOL"
        yield Io("input", None, (arguments_text(value) if tool else as_text(value)) or "")


def _openinference_outputs(span: Span) -> Iterator[Io]:
    for i, message in enumerate(span.indexed("llm.output_messages")):
        text = _openinference_message(message)
        if text is not None:
            yield Io(f"output_messages.{i}", "assistant", text)
        yield from _openinference_tool_calls(f"output_messages.{i}", message)
    # output.value is read by the converter: a Mem0-shaped value is documents, not a text


CONVENTION: Final = Convention(
    "openinference", _openinference_kind, _openinference_inputs, _openinference_outputs
)

# Arize's OpenInference instrumentations hide content when told to (their trace configuration,
# https://arize-ai.github.io/openinference/spec/configuration/trace-config.html)
SWITCH: Final = ContentSwitch(
    "OpenInference",
    lambda span: (
        "openinference.span.kind" in span.attributes or span.scope.startswith("openinference.")
    ),
    "leave OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_OUTPUTS and their _MESSAGES / _TEXT "
    "forms unset or false, or pass TraceConfig(hide_inputs=False, hide_outputs=False) to the "
    "instrumentor",
)
