"""What every span convention shares: an input or output (``Io``), the registry entry
(``Convention``) and the shapes instrumentations write texts in (chat messages, content parts,
tool calls and results, JSON encoded as text). Everything here is pure."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from memtrace.loaders.otlp.spans import Span
from memtrace.taxonomy import Kind


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


@dataclass(frozen=True)
class ContentSwitch:
    """What turns on an instrumentation's content capture, for a span it wrote (``writes``)
    that carries none: a model call without its messages can neither start nor continue a
    trail, and the person loading it should be told what to set, not how to use our SDK."""

    instrumentation: str
    writes: Callable[[Span], bool]
    how: str


def as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def json_decoded(value: Any) -> Any:
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
    parsed = json_decoded(value)
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
    parsed = json_decoded(value)
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
    parsed = json_decoded(blocks)
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
    value = json_decoded(value)
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


def ios(slot: str, found: list[tuple[str | None, str]], role: str | None = None) -> Iterator[Io]:
    for i, (own_role, text) in enumerate(found):
        yield Io(f"{slot}.{i}", own_role or role, text)


def lookup(table: dict[str, Kind], value: Any) -> Kind | None:
    return table.get(value) if isinstance(value, str) else None


def says_nothing(span: Span) -> None:
    """A convention's kind for spans it reads texts of but does not name the kind of."""
    return None


def nothing(span: Span) -> Iterator[Io]:
    return iter(())
