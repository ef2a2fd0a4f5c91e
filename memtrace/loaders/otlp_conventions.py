"""The span conventions the OTLP importer reads: one registry entry per instrumentation family.

Each convention says, for one span, what kind of operation it is (None: it does not say) and
which texts went in and came out. The loader asks every convention, in ``CONVENTIONS`` order,
and keeps one variable per distinct text, so a convention may overlap another (OpenLLMetry's
newest spans carry the current GenAI attributes, OpenLit's both attributes and events). What
each reads, with the source of the convention, is in docs/trace-format.md; adding one is one
entry here. Everything here is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.otlp_json import Span
from memtrace.taxonomy import Kind

# OpenInference span kinds and OTel GenAI operation names -> memtrace kinds; used when the span
# name matches no rule of loaders/kinds.py (a name such as memory_system.extract_facts is more
# specific than "LLM").
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
# OpenLLMetry (Traceloop): ``llm.request.type`` on LLM spans, ``traceloop.span.kind`` on the
# spans of its workflow / task / agent / tool decorators and of the frameworks it instruments.
LLM_REQUEST_KINDS: Final[dict[str, Kind]] = {
    "chat": "generation",
    "completion": "generation",
    "embedding": "embedding",
    "rerank": "retrieval",
}
TRACELOOP_KINDS: Final[dict[str, Kind]] = {
    "workflow": "other",
    "task": "other",
    "agent": "other",
    "tool": "other",
}
# The Vercel AI SDK names each span by its operation (``ai.operationId``); a provider call is
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
MEMTRACE_KEYS: Final = "memtrace."  # memtrace's own attributes (memtrace.case.*, ...)


@dataclass(frozen=True)
class Io:
    """One input or output of a span: where it came from, its role and its text."""

    slot: str
    role: str | None
    text: str


@dataclass(frozen=True)
class Convention:
    """How one instrumentation family describes a span (docs/trace-format.md)."""

    name: str
    kind: Callable[[Span], Kind | None]
    inputs: Callable[[Span], Iterator[Io]]
    outputs: Callable[[Span], Iterator[Io]]


# -- shared shapes ------------------------------------------------------------------------------


def as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _parsed(value: Any) -> Any:
    """A JSON text decoded (attributes carry structures as JSON strings); anything else as is."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def content_text(content: Any) -> str | None:
    """The text of a message's content in any of the shapes instrumentations write: a string
    (taken as it is), or a list of parts (``{"type": "text", "content"|"text": ...}``, Bedrock's
    ``{"text": ...}``). Parts without text (tool calls, images) are left out; None when no part
    has text."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return None
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type", "text") == "text":
            text = part.get("content", part.get("text"))
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts) if texts else None


def parts_text(value: Any) -> str | None:
    """``content_text`` of a value that may be a list of parts encoded as JSON text (how span
    events and flattened attributes carry them: Strands' ``[{"text": ...}]``); any other text is
    taken as it is."""
    parsed = _parsed(value)
    if isinstance(parsed, list) and parsed and all(isinstance(p, dict) for p in parsed):
        return content_text(parsed)
    if isinstance(parsed, dict):
        text = parsed.get("text")
        if isinstance(text, str):
            return text
    return content_text(value)


TOOL_CALL: Final = "tool_call"  # the role of a tool call's arguments (not an answer)
TOOL_RESULT: Final = "tool"  # the role of what a tool returned, as the model reads it


def arguments_text(value: Any) -> str | None:
    """A tool call's arguments as one canonical JSON text: the model writes them as a JSON
    string, the tool's span as an object or a re-encoded string, so the call and the tool run
    that received it hold the same text (and are linked as one variable)."""
    parsed = _parsed(value)
    return as_text(parsed) if isinstance(parsed, dict | list) else as_text(value)


# Part type -> (role, the keys that may hold its text): GenAI's ``tool_call`` (``arguments``) and
# ``tool_call_response`` (``response``; pydantic-ai writes ``result``), the Vercel AI SDK's
# ``tool-call`` (``args``; ``input`` since v5) and ``tool-result`` (``result``; ``output``).
_TOOL_PARTS: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "tool_call": (TOOL_CALL, ("arguments",)),
    "tool_call_response": (TOOL_RESULT, ("response", "result")),
    "tool-call": (TOOL_CALL, ("args", "input")),
    "tool-result": (TOOL_RESULT, ("result", "output")),
}


def result_text(value: Any) -> str | None:
    """What a tool returned: its text parts joined (Strands returns ``[{"text": ...}]``), else
    the value as it is."""
    return parts_text(value) or as_text(value)


def tool_blocks(blocks: Any) -> Iterator[tuple[str, str]]:
    """``(role, text)`` of the tool calls and results among a message's parts: a part of a type
    in ``_TOOL_PARTS``, or a Bedrock Converse content block (Strands' events) ``{"toolUse":
    {"input"}}`` / ``{"toolResult": {"content"}}``."""
    parsed = _parsed(blocks)
    for part in parsed if isinstance(parsed, list) else ():
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("toolUse"), dict):
            role, value = TOOL_CALL, part["toolUse"].get("input")
        elif isinstance(part.get("toolResult"), dict):
            role, value = TOOL_RESULT, part["toolResult"].get("content")
        elif (known := _TOOL_PARTS.get(part.get("type"))) is not None:  # type: ignore[arg-type]
            role, keys = known
            value = next((part[key] for key in keys if part.get(key) is not None), None)
        else:
            continue
        text = arguments_text(value) if role == TOOL_CALL else result_text(value)
        if text is not None:
            yield role, text


def tool_parts(message: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(role, text)`` of the tool calls and tool results in one chat message: its parts (in
    ``parts`` or ``content``, ``tool_blocks``), and OpenAI's ``tool_calls[].function.arguments``."""
    yield from tool_blocks(message.get("parts", message.get("content")))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            text = arguments_text(function.get("arguments"))
            if text is not None:
                yield TOOL_CALL, text


def messages(value: Any) -> list[tuple[str | None, str]]:
    """``(role, text)`` of a list of chat messages (JSON text or decoded): each message's
    ``content`` or ``parts``, then its tool calls and tool results (``tool_parts``); a text that
    is no JSON list is one message of unknown role."""
    value = _parsed(value)
    if isinstance(value, str):
        return [(None, value)]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    found: list[tuple[str | None, str]] = []
    for message in value:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        text = content_text(message.get("content", message.get("parts")))
        if text is not None:
            found.append((str(role) if role is not None else None, text))
        found.extend(tool_parts(message))
    return found


def _ios(slot: str, found: list[tuple[str | None, str]], role: str | None = None) -> Iterator[Io]:
    for i, (own_role, text) in enumerate(found):
        yield Io(f"{slot}.{i}", own_role or role, text)


def _lookup(table: dict[str, Kind], value: Any) -> Kind | None:
    return table.get(value) if isinstance(value, str) else None


# -- OpenInference (Phoenix, Arize; LangChain, LlamaIndex, ... through OpenInference) ------------


def _openinference_kind(span: Span) -> Kind | None:
    kind = span.attributes.get("openinference.span.kind")
    return OPENINFERENCE_KINDS.get(kind.upper()) if isinstance(kind, str) else None


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


# -- OTel GenAI, current (v1.37+): JSON messages with parts, as attributes or on the event
# gen_ai.client.inference.operation.details ---------------------------------------------------

_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"


def _gen_ai_kind(span: Span) -> Kind | None:
    operation = span.attributes.get("gen_ai.operation.name")
    return _lookup(GEN_AI_KINDS, operation) or _lookup(GEN_AI_MEMORY_KINDS, operation)


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
        yield from _ios(f"{slot}.input", messages(attributes.get("gen_ai.input.messages")))
    query = span.attributes.get("gen_ai.memory.query.text")
    if isinstance(query, str):
        yield Io("gen_ai.memory.query", None, query)
    arguments = arguments_text(span.attributes.get("gen_ai.tool.call.arguments"))
    if arguments is not None:  # an execute_tool span: what the tool call passed
        yield Io("gen_ai.tool.call.arguments", None, arguments)


def _gen_ai_outputs(span: Span) -> Iterator[Io]:
    for slot, attributes in _gen_ai_sources(span):
        found = messages(attributes.get("gen_ai.output.messages"))
        yield from _ios(f"{slot}.output", found, "assistant")
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
    listed = _parsed(span.attributes.get("events"))
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
            message = _parsed(event.get("message"))
            if isinstance(message, dict) and ("content" in message or "parts" in message):
                text = content_text(message.get("content", message.get("parts")))
            else:
                text = parts_text(message if message is not None else event.get("content"))
            if text is not None:
                yield Io(slot, "assistant", text)
            for i, (role, tool_text) in enumerate(tool_blocks(message)):
                yield Io(f"{slot}.tool.{i}", role, tool_text)


# -- OpenLLMetry (Traceloop) and Strands: indexed gen_ai.prompt.N / gen_ai.completion.N -------


def _openllmetry_kind(span: Span) -> Kind | None:
    attributes = span.attributes
    return _lookup(LLM_REQUEST_KINDS, attributes.get("llm.request.type")) or _lookup(
        TRACELOOP_KINDS, attributes.get("traceloop.span.kind")
    )


def _indexed_text(item: dict[str, Any]) -> str | None:
    """``content`` (OpenLLMetry), ``content.M.text`` parts (Strands, flattened) or ``text``."""
    if item.get("content") is not None:
        return parts_text(item["content"])
    parts = sorted(
        (int(match.group(1)), value)
        for key, value in item.items()
        if (match := re.fullmatch(r"content\.(\d+)\.text", key)) and isinstance(value, str)
    )
    if parts:
        return "\n".join(text for _, text in parts)
    text = item.get("text")
    return text if isinstance(text, str) else None


def _indexed_inputs(span: Span) -> Iterator[Io]:
    for i, prompt in enumerate(span.indexed("gen_ai.prompt")):
        text = _indexed_text(prompt)
        if text is not None:
            role = prompt.get("role")
            yield Io(f"gen_ai.prompt.{i}", str(role) if role is not None else None, text)


def _indexed_outputs(span: Span) -> Iterator[Io]:
    for i, completion in enumerate(span.indexed("gen_ai.completion")):
        text = _indexed_text(completion)
        if text is not None:
            yield Io(f"gen_ai.completion.{i}", "assistant", text)


def _entity_texts(value: Any, keys: tuple[str, ...]) -> list[str]:
    """The texts of ``traceloop.entity.input`` / ``output``: JSON of a decorated function's
    arguments (``{"args": [...], "kwargs": {...}}``) or of a framework's ``{"inputs": ...}`` /
    ``{"outputs": ...}`` (the first of ``keys`` present). Each argument is a text of its own (a
    question passed as an argument is then the same variable as the message that carries it)."""
    parsed = value
    if isinstance(value, str):  # always JSON: a returned string is written as a JSON string
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
    present = [key for key in keys if isinstance(parsed, dict) and key in parsed]
    if not present:
        text = as_text(parsed)
        return [text] if text else []
    assert isinstance(parsed, dict)
    chosen = present[:1] if present[0] in ("inputs", "outputs") else present
    items: list[Any] = []
    for key in chosen:
        inner = parsed[key]
        if isinstance(inner, dict):
            items.extend(inner.values())
        elif isinstance(inner, list):
            items.extend(inner)
        elif inner is not None:
            items.append(inner)
    return [text for text in map(as_text, items) if text]


def _entity_inputs(span: Span) -> Iterator[Io]:
    value = span.attributes.get("traceloop.entity.input")
    texts = _entity_texts(value, ("inputs", "args", "kwargs"))
    for i, text in enumerate(texts):
        yield Io(f"traceloop.input.{i}", None, text)


def _entity_outputs(span: Span) -> Iterator[Io]:
    texts = _entity_texts(span.attributes.get("traceloop.entity.output"), ("outputs",))
    for i, text in enumerate(texts):
        yield Io(f"traceloop.output.{i}", None, text)


# -- OpenLit, and OTel GenAI before v1.28: the whole prompt and completion as one text, in the
# events gen_ai.content.prompt / gen_ai.content.completion or as span attributes ---------------


def _whole_text(span: Span, key: str, event: str) -> Iterator[tuple[str, str]]:
    value = span.attributes.get(key)
    if isinstance(value, str):
        yield key, value
    for i, (name, attributes) in enumerate(span.events):
        inner = attributes.get(key)
        if name == event and isinstance(inner, str):
            yield f"event.{i}", inner


def _content_event_inputs(span: Span) -> Iterator[Io]:
    for slot, text in _whole_text(span, "gen_ai.prompt", "gen_ai.content.prompt"):
        yield Io(slot, None, text)


def _content_event_outputs(span: Span) -> Iterator[Io]:
    for slot, text in _whole_text(span, "gen_ai.completion", "gen_ai.content.completion"):
        yield Io(slot, "assistant", text)


# -- Vercel AI SDK: ai.* attributes ------------------------------------------------------------


def _vercel_kind(span: Span) -> Kind | None:
    operation = span.attributes.get("ai.operationId")
    name = operation if isinstance(operation, str) else span.name
    base = re.sub(r"\.do(Generate|Stream|Embed)$", "", name)
    return VERCEL_AI_KINDS.get(base)


def _vercel_inputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    prompt = _parsed(attributes.get("ai.prompt"))
    if isinstance(prompt, dict):  # {system?, prompt?, messages?}
        if isinstance(prompt.get("system"), str):
            yield Io("ai.prompt.system", "system", prompt["system"])
        text = content_text(prompt.get("prompt"))
        if text is not None:
            yield Io("ai.prompt", "user", text)
        yield from _ios("ai.prompt.messages", messages(prompt.get("messages")))
    elif isinstance(prompt, str):
        yield Io("ai.prompt", "user", prompt)
    yield from _ios("ai.prompt.messages", messages(attributes.get("ai.prompt.messages")))
    if attributes.get("ai.value") is not None:
        yield Io("ai.value", None, as_text(attributes["ai.value"]) or "")
    if attributes.get("ai.toolCall.args") is not None:
        yield Io("ai.toolCall.args", None, arguments_text(attributes["ai.toolCall.args"]) or "")
    values = _parsed(attributes.get("ai.values"))
    if isinstance(values, list):
        for i, value in enumerate(values):
            yield Io(f"ai.values.{i}", None, as_text(value) or "")


def _vercel_outputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    for key in ("ai.response.text", "ai.result.text", "ai.response.object", "ai.toolCall.result"):
        if attributes.get(key) is not None:
            yield Io(key, "assistant", as_text(attributes[key]) or "")
    calls = _parsed(attributes.get("ai.response.toolCalls"))  # [{toolCallId, toolName, args}]
    for i, call in enumerate(calls if isinstance(calls, list) else ()):
        if isinstance(call, dict):
            text = arguments_text(call.get("args", call.get("input")))
            if text is not None:
                yield Io(f"ai.response.toolCalls.{i}", TOOL_CALL, text)


# -- pydantic-ai and Logfire: tool and agent run attributes, Logfire's OpenAI spans -------------


def _logfire_kind(span: Span) -> Kind | None:
    """pydantic-ai's agent runs and tool calls (instrumentation version 1 names no operation)."""
    attributes = span.attributes
    agent_or_tool = ("gen_ai.agent.name", "agent_name", "gen_ai.tool.name", "tool_arguments")
    return "other" if any(key in attributes for key in agent_or_tool) else None


def _logfire_inputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    if attributes.get("tool_arguments") is not None:
        yield Io("tool_arguments", None, arguments_text(attributes["tool_arguments"]) or "")
    request = _parsed(attributes.get("request_data"))
    if isinstance(request, dict):
        yield from _ios("request_data.messages", messages(request.get("messages")))


def _logfire_outputs(span: Span) -> Iterator[Io]:
    attributes = span.attributes
    for key in ("tool_response", "final_result"):
        if attributes.get(key) is not None:
            yield Io(key, "assistant", as_text(attributes[key]) or "")
    response = _parsed(attributes.get("response_data"))
    if isinstance(response, dict):
        message = response.get("message")
        text = content_text(message.get("content")) if isinstance(message, dict) else None
        if text is not None:
            yield Io("response_data.message", "assistant", text)


def _says_nothing(span: Span) -> None:
    return None


def _memtrace_kind(span: Span) -> Kind | None:
    """A span with memtrace's own attributes (a case span an app adds around its call, the
    root span of memtrace's export) is known: its kind is other."""
    return "other" if any(key.startswith(MEMTRACE_KEYS) for key in span.attributes) else None


def _nothing(span: Span) -> Iterator[Io]:
    return iter(())


CONVENTIONS: Final[tuple[Convention, ...]] = (
    Convention("openinference", _openinference_kind, _openinference_inputs, _openinference_outputs),
    Convention("gen_ai", _gen_ai_kind, _gen_ai_inputs, _gen_ai_outputs),
    Convention("gen_ai_events", _says_nothing, _event_inputs, _event_outputs),
    Convention("openllmetry", _openllmetry_kind, _indexed_inputs, _indexed_outputs),
    Convention("traceloop_entity", _says_nothing, _entity_inputs, _entity_outputs),
    Convention("openlit", _says_nothing, _content_event_inputs, _content_event_outputs),
    Convention("vercel_ai", _vercel_kind, _vercel_inputs, _vercel_outputs),
    Convention("logfire", _logfire_kind, _logfire_inputs, _logfire_outputs),
    # last: memtrace.* attributes say nothing of the span's own kind, only that it is known
    Convention("memtrace", _memtrace_kind, _nothing, _nothing),
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
    by_name = derive_kind(span.name, None)
    if by_name != "other":
        return by_name, True
    kind = convention_kind(span)
    return (kind, True) if kind is not None else ("other", False)


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
            ):
                found.append(prefix + key)
    return found
