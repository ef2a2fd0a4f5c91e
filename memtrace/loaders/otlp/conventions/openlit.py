"""OpenLit, and OTel GenAI before v1.28: the whole prompt and completion as one text, in the
events gen_ai.content.prompt / gen_ai.content.completion or as span attributes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from memtrace.loaders.otlp.conventions.shapes import ContentSwitch, Convention, Io, says_nothing
from memtrace.loaders.otlp.spans import Span


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


CONVENTION: Final = Convention(
    "openlit", says_nothing, _content_event_inputs, _content_event_outputs
)

# OpenLit says who it is in its resource (telemetry.sdk.name) and records content unless
# openlit.init(capture_message_content=False)
SWITCH: Final = ContentSwitch(
    "OpenLit",
    lambda span: span.resource.get("telemetry.sdk.name") == "openlit" or span.scope == "openlit",
    "openlit.init(capture_message_content=True) (the default)",
)
