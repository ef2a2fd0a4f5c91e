"""A small tool-using agent, written twice as users of two instrumentations write one: the model
is offered a ``search_notes`` tool over the user's notes, calls it, reads what it returned and
answers. The app stores the notes first and says so as a GenAI memory span (as
tests/instrumented_app.py does); each question runs inside the app's own span carrying
``memtrace.case.*`` (as docs/trace-format.md says); the spans are collected by the OpenTelemetry
SDK's in-memory exporter and written as canonical OTLP JSON.

- ``run_openinference_agent``: a hand-written tool loop over the ``openai`` client, instrumented
  by Arize's openinference-instrumentation-openai; the tool is traced with OpenInference's own
  ``@tracer.tool`` decorator (openinference-instrumentation's ``TracerProvider``).
- ``run_pydantic_ai_agent``: a pydantic-ai ``Agent`` with a ``@agent.tool_plain``, its built-in
  OpenTelemetry instrumentation on (the ``Instrumentation`` capability), over the OpenAI chat
  model pointed at the local endpoint.

The endpoint's script decides what the model asks the tool and answers: ``script_replies``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, Reply
from instrumented_app import remember, required

NOTES = [
    "The green bin goes out on Thursday evenings.",
    "The dentist appointment is on 14 March at 9:30.",
    "Paper recycling is collected on alternate Mondays.",
]
NOTE_IDS = {f"note-{number}": note for number, note in enumerate(NOTES, start=1)}
NOTHING_FOUND = "No notes match."
# case id, question, golden answer, the note holding it, what the model asks the tool, its reply
QUESTIONS = [
    (
        "notes-1",
        "Which evening does the green bin go out?",
        "Thursday",
        NOTES[0],
        "green bin evening",
        "Monday evening.",  # wrong although the tool found the note
    ),
    (
        "notes-2",
        "When is my tooth check-up?",
        "14 March at 9:30",
        NOTES[1],
        "tooth check-up",  # shares no word with the note: the tool finds nothing
        "I do not know.",
    ),
]
INSTRUCTIONS = "Answer the question from the user's notes; look them up with search_notes."
TOOL_SCHEMA = {
    "type": "function",
    "function": {
        "name": "search_notes",
        "description": "Search the user's notes by words.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def script_replies(fake: FakeOpenAI) -> None:
    """Per question: a call of search_notes, then the (scripted) answer."""
    for *_, query, reply in QUESTIONS:
        fake.script(Reply(tool_calls=(("search_notes", {"query": query}),)), Reply(content=reply))


def search_notes(query: str) -> str:
    """The user's notes sharing a word of four letters or more with ``query``."""
    words = {w for w in re.findall(r"[a-z]+", query.lower()) if len(w) > 3}
    found = [note for note in NOTES if words & set(re.findall(r"[a-z]+", note.lower()))]
    return "\n".join(found) or NOTHING_FOUND


def _ask_each(tracer: Any, span_name: str, answer: Callable[[str], str], **span: Any) -> None:
    """Store the notes, then run ``answer`` on each question inside the app's span marked with
    ``memtrace.case.*``, scored by the app's own exact-match check."""
    remember(tracer, NOTE_IDS)
    for case_id, question, golden, note, *_ in QUESTIONS:
        with tracer.start_as_current_span(span_name, **span) as case:
            case.set_attribute("memtrace.case.id", case_id)
            case.set_attribute("memtrace.case.question", question)
            case.set_attribute("memtrace.case.golden_answers", [golden])
            case.set_attribute("memtrace.case.evidence", [note])
            reply = answer(question)
            right = golden.lower() in reply.lower()
            case.set_attribute("memtrace.case.judge_score", 1.0 if right else 0.0)


def run_openinference_agent(base_url: str, out: Path) -> Path:
    """The tool loop over ``openai``, instrumented by OpenInference; the OTLP JSON file."""
    instrumentation = required(
        "openinference.instrumentation.openai", "openinference-instrumentation-openai"
    )
    import openai
    from openinference.instrumentation import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memtrace.integrations.otel import write_otlp_json

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("notes-agent")
    traced_search = tracer.tool(name="search_notes")(search_notes)
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)

    def answer(question: str) -> str:
        conversation: list[Any] = [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": question},
        ]
        tools: Any = [TOOL_SCHEMA]  # the openai package types it as a TypedDict
        for _ in range(4):  # a bounded loop: the model either calls tools or answers
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=conversation, tools=tools
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            conversation.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
                result = traced_search(**arguments)
                conversation.append({"role": "tool", "tool_call_id": call.id, "content": result})
        raise RuntimeError("the model kept calling tools")

    try:
        _ask_each(tracer, "notes turn", answer, openinference_span_kind="agent")
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return write_otlp_json(exporter.get_finished_spans(), out)


def run_pydantic_ai_agent(base_url: str, out: Path) -> Path:
    """A pydantic-ai agent with its own instrumentation; the OTLP JSON file."""
    pydantic_ai = required("pydantic_ai", "pydantic-ai-slim")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from memtrace.integrations.otel import write_otlp_json

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = OpenAIChatModel(
        "gpt-4o-mini", provider=OpenAIProvider(base_url=base_url, api_key="test-key")
    )
    settings = pydantic_ai.InstrumentationSettings(tracer_provider=provider)
    agent = pydantic_ai.Agent(
        model, instructions=INSTRUCTIONS, capabilities=[Instrumentation(settings=settings)]
    )
    agent.tool_plain(search_notes)

    def answer(question: str) -> str:
        return str(agent.run_sync(question).output)

    try:
        _ask_each(provider.get_tracer("notes-agent"), "ask the notes agent", answer)
    finally:
        provider.shutdown()
    return write_otlp_json(exporter.get_finished_spans(), out)
