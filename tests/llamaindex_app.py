"""The notes assistant of tests/framework_memory.py written the way LlamaIndex's docs show one: a
``CustomLLM`` (llama-index-llms-openai pins openai<3, so the model is the docs' custom-LLM
example over the ``openai`` client, pointed at the local scripted endpoint), ``llm.complete``
for the extraction and the decision, a custom ``BaseRetriever`` over the notes and a
``RetrieverQueryEngine`` with its own ``text_qa_template`` for the answers; traced by Arize's
openinference-instrumentation-llama-index. Spans: the OpenTelemetry SDK's in-memory exporter,
written as OTLP JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framework_memory import (
    ANSWER_INSTRUCTIONS,
    DECIDE_INSTRUCTIONS,
    EXTRACT_INSTRUCTIONS,
    MESSAGES,
    QUESTIONS,
    Notes,
    mark_case,
    matching,
    score_case,
)
from instrumented_app import required


def run_llamaindex_app(base_url: str, out: Path) -> Path:
    instrumentation = required(
        "openinference.instrumentation.llama_index", "openinference-instrumentation-llama-index"
    )
    required("llama_index.core", "llama-index-core")
    import openai
    from llama_index.core import PromptTemplate
    from llama_index.core.llms import (
        CompletionResponse,
        CompletionResponseGen,
        CustomLLM,
        LLMMetadata,
    )
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memtrace.integrations.otel import write_otlp_json

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = instrumentation.LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("notes-assistant")
    notes = Notes(tracer)
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)

    class NotesLLM(CustomLLM):
        """A chat model behind an OpenAI-compatible endpoint (the docs' custom LLM)."""

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="gpt-4o-mini")

        @llm_completion_callback()
        def complete(
            self, prompt: str, formatted: bool = False, **kwargs: Any
        ) -> CompletionResponse:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
            )
            return CompletionResponse(text=reply.choices[0].message.content or "")

        @llm_completion_callback()
        def stream_complete(
            self, prompt: str, formatted: bool = False, **kwargs: Any
        ) -> CompletionResponseGen:
            yield self.complete(prompt, formatted=formatted, **kwargs)

    class NotesRetriever(BaseRetriever):
        """The user's notes sharing words with the query."""

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [
                NodeWithScore(node=TextNode(text=text, id_=key), score=1.0)
                for key, text in matching(notes.held, query_bundle.query_str)
            ]

    llm = NotesLLM()
    extract_prompt = PromptTemplate(EXTRACT_INSTRUCTIONS + "\n---------------------\n{message}")
    decide_prompt = PromptTemplate("{instructions}\n\nNotes:\n{notes}\n\nNew fact: {fact}")
    qa_prompt = PromptTemplate(
        ANSWER_INSTRUCTIONS + "\n\nContext:\n{context_str}\n\nQuestion: {query_str}\nAnswer: "
    )
    query_engine = RetrieverQueryEngine.from_args(
        NotesRetriever(), llm=llm, text_qa_template=qa_prompt
    )
    try:
        for message in MESSAGES:
            fact = llm.complete(extract_prompt.format(message=message)).text
            decision = llm.complete(
                decide_prompt.format(
                    instructions=DECIDE_INSTRUCTIONS, notes=notes.listing(), fact=fact
                )
            ).text
            notes.apply(fact, json.loads(decision))
        for case in QUESTIONS:
            with tracer.start_as_current_span("ask notes assistant") as span:
                mark_case(span, case)
                score_case(span, case, str(query_engine.query(case.question)))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return write_otlp_json(exporter.get_finished_spans(), out)
