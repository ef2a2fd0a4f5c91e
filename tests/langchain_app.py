"""A notes assistant written the way LangChain's docs show one (LCEL: prompt | model | parser,
a custom ``BaseRetriever``, the RAG chain ``{"context": retriever | format_docs, "question":
RunnablePassthrough()} | prompt | llm | StrOutputParser()``), traced by a LangChain
instrumentation: Arize's openinference-instrumentation-langchain, or OpenLLMetry's
opentelemetry-instrumentation-langchain. The model is ``ChatOpenAI`` pointed at the local
scripted endpoint; what it remembers, is asked and replies, with the planted failures:
tests/framework_memory.py. Spans: the OpenTelemetry SDK's in-memory exporter, written as OTLP
JSON."""

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

INSTRUMENTATIONS = {
    "openinference": (
        "openinference.instrumentation.langchain",
        "LangChainInstrumentor",
        "openinference-instrumentation-langchain",
    ),
    "openllmetry": (
        "opentelemetry.instrumentation.langchain",
        "LangchainInstrumentor",
        "opentelemetry-instrumentation-langchain",
    ),
}


def run_langchain_app(base_url: str, out: Path, instrumentation: str) -> Path:
    module, name, dist = INSTRUMENTATIONS[instrumentation]
    instrumentor = getattr(required(module, dist), name)()
    required("langchain_openai", "langchain-openai")
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough
    from langchain_openai import ChatOpenAI
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memtrace.integrations.otel import write_otlp_json

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("notes-assistant")
    notes = Notes(tracer)

    class NotesRetriever(BaseRetriever):
        """The user's notes sharing words with the query."""

        k: int = 2

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(page_content=text, id=key, metadata={"source": "notes"})
                for key, text in matching(notes.held, query, self.k)
            ]

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(doc.page_content for doc in docs)

    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="test-key", max_retries=0)  # type: ignore[arg-type]
    extract_chain = (
        ChatPromptTemplate.from_messages([("system", EXTRACT_INSTRUCTIONS), ("human", "{message}")])
        | llm
        | StrOutputParser()
    )
    decide_chain = (
        ChatPromptTemplate.from_messages(
            [
                ("system", DECIDE_INSTRUCTIONS.replace("{", "{{").replace("}", "}}")),
                ("human", "Notes:\n{notes}\n\nNew fact: {fact}"),
            ]
        )
        | llm
        | StrOutputParser()
    )
    rag_prompt = ChatPromptTemplate.from_messages(
        [("system", ANSWER_INSTRUCTIONS), ("human", "Context:\n{context}\n\nQuestion: {question}")]
    )
    rag_chain = (
        {"context": NotesRetriever() | format_docs, "question": RunnablePassthrough()}
        | rag_prompt
        | llm
        | StrOutputParser()
    )
    try:
        for message in MESSAGES:
            fact = extract_chain.invoke({"message": message})
            decision: dict[str, Any] = json.loads(
                decide_chain.invoke({"notes": notes.listing(), "fact": fact})
            )
            notes.apply(fact, decision)
        for case in QUESTIONS:
            with tracer.start_as_current_span("ask notes assistant") as span:
                mark_case(span, case)
                score_case(span, case, rag_chain.invoke(case.question))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    return write_otlp_json(exporter.get_finished_spans(), out)
