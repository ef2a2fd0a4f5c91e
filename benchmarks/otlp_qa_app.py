"""A small question-answering app traced with the OpenTelemetry SDK (OpenInference attributes),
as a user's service would be: the spans the receiver's tests and benchmark send.

Each question is one trace: a ``answer_question`` root span carrying the case
(``memtrace.case.*``), a retriever span and an LLM span under it. Every other answer is wrong
(judge score 0), so half the cases are failed cases to attribute. With ``users``, question n is
asked by ``users[n % len(users)]`` (``user.id`` on its root span), as a web service's requests
are: ``memtrace collect --timelines`` appends each user's questions to the user's timeline.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

FACTS = [
    ("Where did Ana move in 2021?", "Lisbon", "Porto"),
    ("What instrument does Ben play?", "cello", "violin"),
    ("Which dog breed does Chloe own?", "a beagle", "a poodle"),
    ("What did Dev study?", "geology", "history"),
]


class Collecting(SpanExporter):
    """Keeps finished spans in memory, to be exported later in batches of one's choosing."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def answer_questions(
    provider: TracerProvider, count: int, tag: str = "", users: Sequence[str] = ()
) -> list[str]:
    """Trace ``count`` questions through ``provider``; return their trace ids (hex)."""
    tracer = provider.get_tracer("qa-app")
    trace_ids = []
    for number in range(count):
        question, gold, wrong = FACTS[number % len(FACTS)]
        question = f"{question} (#{tag}{number})"
        correct = number % 2 == 0
        answer = gold if correct else wrong
        with tracer.start_as_current_span("answer_question") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", question)
            root.set_attribute("memtrace.case.id", f"q{tag}{number}")
            root.set_attribute("memtrace.case.question", question)
            root.set_attribute("memtrace.case.golden_answers", [gold])
            root.set_attribute("memtrace.case.judge_score", 1.0 if correct else 0.0)
            if users:
                root.set_attribute("user.id", users[number % len(users)])
            memory = f"Notes: the answer to '{question}' is {gold}."
            with tracer.start_as_current_span("retrieve") as retrieve:
                retrieve.set_attribute("openinference.span.kind", "RETRIEVER")
                retrieve.set_attribute("input.value", question)
                retrieve.set_attribute("retrieval.documents.0.document.id", f"m{tag}{number}")
                retrieve.set_attribute("retrieval.documents.0.document.content", memory)
            with tracer.start_as_current_span("generate") as generate:
                generate.set_attribute("openinference.span.kind", "LLM")
                generate.set_attribute("llm.model_name", "scripted")
                generate.set_attribute("input.value", f"{memory}\nQuestion: {question}")
                generate.set_attribute("output.value", answer)
            root.set_attribute("output.value", answer)
            trace_ids.append(format(root.get_span_context().trace_id, "032x"))
    return trace_ids


def traced_spans(
    count: int, tag: str = "", users: Sequence[str] = ()
) -> tuple[list[ReadableSpan], list[str]]:
    """``count`` questions' finished spans (3 per question), and their trace ids."""
    collecting = Collecting()
    provider = TracerProvider(resource=Resource.create({"service.name": "qa-app"}))
    provider.add_span_processor(SimpleSpanProcessor(collecting))
    trace_ids = answer_questions(provider, count, tag, users)
    provider.shutdown()
    return collecting.spans, trace_ids


def as_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The spans as one OTLP JSON request (hex ids), through the SDK's own protobuf encoder."""
    document: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document
