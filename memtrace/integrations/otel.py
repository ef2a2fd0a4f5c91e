"""Record a memtrace-instrumented run as OpenTelemetry spans through the OpenTelemetry SDK, in
one of two conventions.

Both tracers are a ``Tracer`` that writes the native trace as usual and also turns every
finished operation into one OTel span (named by the operation, a child of one root span per
trace); recorded cases become ``memtrace.case.*`` attributes on a ``memtrace.case`` span, and
``memtrace.op_id`` names the native operation (for comparing verdicts; the importer ignores it).

- ``OpenInferenceTracer``: the attributes an OpenInference instrumentation would set:
  ``openinference.span.kind``, LLM input and output messages, ``input.value`` /
  ``output.value``, ``retrieval.documents.*``, parameters as ``llm.invocation_parameters``.
  Memory entries an operation writes or deletes go into ``output.value`` as Mem0's
  ``{"results": [{id, memory, event}]}``.
- ``GenAIMemoryTracer``: the OTel GenAI conventions with their memory operations. A retrieval
  is ``search_memory`` (``gen_ai.memory.query.text``; the memories it read as
  ``gen_ai.memory.records`` with their scores); an operation that writes or deletes memory
  entries is ``create_memory`` / ``update_memory`` / ``delete_memory`` (``upsert_memory`` when
  it does more than one of these), each record naming its Mem0 event, the memories it only read
  as records of event ``NONE``; the rest are ``chat`` / ``embeddings`` spans. Inputs and outputs
  are ``gen_ai.input.messages`` / ``gen_ai.output.messages``, except the context a search
  produced, which no GenAI attribute holds: it goes into ``output.value`` so that the answer
  span reading it links to the search. Parameters are not exported.

``write_otlp_json`` writes finished spans as an OTLP JSON file (the SDK's own OTLP encoding, ids
as hex as OTLP JSON wants). This is how memtrace checks its OTLP importer against its native
format on the same run; it also exports a memtrace-instrumented system to any OpenInference or
GenAI tool. Needs the optional extra ``memtrace-graph[otel]``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import (
    DocumentAttributes,
    MessageAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from memtrace.tracing.tracer import OpState, Tracer

SPAN_KINDS: dict[str, OpenInferenceSpanKindValues] = {
    "extraction": OpenInferenceSpanKindValues.LLM,
    "update": OpenInferenceSpanKindValues.LLM,
    "generation": OpenInferenceSpanKindValues.LLM,
    "retrieval": OpenInferenceSpanKindValues.RETRIEVER,
    "embedding": OpenInferenceSpanKindValues.EMBEDDING,
    "judge": OpenInferenceSpanKindValues.EVALUATOR,
}
_MESSAGE_KINDS = ("extraction", "update", "generation", "judge")
_DOCUMENT = "memory_entry"
_MARKER_CLASS = "delete_marker"
# one value an operation read or wrote: (name, category, class name, value text, variable id)
_Value = tuple[str, str | None, str | None, str | None, str]


class SpanMirror(Tracer):
    """A native ``Tracer`` that also emits each operation as one OTel span; a subclass sets
    the span's attributes (its convention)."""

    def __init__(
        self,
        path: Path,
        trace_id: str,
        *,
        otel_tracer: otel_trace.Tracer,
        session_id: str | None = None,
        **options: Any,
    ) -> None:
        self._otel = otel_tracer
        self._session_id = session_id
        # var id -> (name, category, class name, value text): what a span attribute needs
        self._values: dict[str, tuple[str, str | None, str | None, str | None]] = {}
        self._last_ns = 0
        self._root: otel_trace.Span | None = None
        self._kinds: dict[str, str] = {}
        super().__init__(path, trace_id, **options)
        root_attributes: dict[str, Any] = {"memtrace.trace_id": trace_id}
        if session_id is not None:
            root_attributes[SpanAttributes.SESSION_ID] = session_id
        self._root = self._otel.start_span(
            trace_id, start_time=self._ns(self._now()), attributes=root_attributes
        )
        self._context = otel_trace.set_span_in_context(self._root)

    def _ns(self, timestamp: str) -> int:
        """Span times from the trace's clock, strictly increasing (the clock ticks in ms)."""
        moment = datetime.fromisoformat(timestamp)
        seconds = int(moment.replace(microsecond=0).timestamp())
        nanos = seconds * 1_000_000_000 + moment.microsecond * 1000
        self._last_ns = max(nanos, self._last_ns + 1)
        return self._last_ns

    def variable(
        self,
        name: str,
        value: Any,
        *,
        category: str | None = None,
        class_name: str | None = None,
        session: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        var = super().variable(
            name,
            value,
            category=category,
            class_name=class_name,
            session=session,
            metadata=metadata,
        )
        if var.id not in self._values:
            latest = self.latest((class_name, name))
            text = latest[2] if latest is not None and latest[0] == var.id else None
            self._values[var.id] = (name, category, class_name, text)
        return var

    def start_operation(
        self,
        name: str,
        *,
        session: str | None,
        category: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> OpState:
        state = super().start_operation(
            name, session=session, category=category, kind=kind, metadata=metadata
        )
        state.metadata["_otel_start_ns"] = self._ns(state.created_at)
        return state

    def finish_operation(self, op: OpState) -> None:
        start_ns = op.metadata.pop("_otel_start_ns", None)
        super().finish_operation(op)
        kind = op.kind or _kind_of(op.category)
        span = self._otel.start_span(
            op.name,
            context=self._context,
            start_time=start_ns if isinstance(start_ns, int) else self._ns(op.created_at),
            attributes=self._attributes(op, kind),
        )
        span.end(end_time=self._ns(self._now()))

    def _attributes(self, op: OpState, kind: str) -> dict[str, Any]:
        raise NotImplementedError

    def _split(self, op: OpState) -> tuple[list[_Value], list[_Value], list[_Value]]:
        """What an operation read (the entries it deleted left out), wrote (delete markers left
        out) and deleted."""
        values = self._values
        markers = {v for v in op.writes if values[v][2] == _MARKER_CLASS}
        deleted = {source for source, target in op.edges if target in markers}
        reads = [values[v] + (v,) for v in op.reads if v not in deleted]
        writes = [values[v] + (v,) for v in op.writes if v not in markers]
        return reads, writes, [values[v] + (v,) for v in op.reads if v in deleted]

    def _common(self, op: OpState) -> dict[str, Any]:
        attributes: dict[str, Any] = {"memtrace.op_id": op.id}
        if self._session_id is not None:
            attributes[SpanAttributes.SESSION_ID] = self._session_id
        return attributes

    def case(self, record: dict[str, Any]) -> None:
        super().case(record)
        attributes: dict[str, Any] = {
            "memtrace.case.id": str(record["id"]),
            "memtrace.case.question": self._values[record["query"]][3] or "",
            "memtrace.case.golden_answers": [str(a) for a in record.get("golden_answers", [])],
        }
        prediction = record.get("prediction")
        if prediction:
            attributes["memtrace.case.prediction"] = self._values[prediction][3] or ""
        if record.get("judge_score") is not None:
            attributes["memtrace.case.judge_score"] = float(record["judge_score"])
        if record.get("category"):
            attributes["memtrace.case.category"] = str(record["category"])
        evidence = [_message_text(self._values[v][3]) for v in record.get("evidence", [])]
        attributes["memtrace.case.evidence"] = [text for text in evidence if text]
        if self._session_id is not None:
            attributes[SpanAttributes.SESSION_ID] = self._session_id
        now = self._ns(self._now())
        span = self._otel.start_span(
            "memtrace.case", context=self._context, start_time=now, attributes=attributes
        )
        span.end(end_time=now)

    def close(self) -> None:
        super().close()
        if self._root is not None:
            self._root.end(end_time=self._ns(self._now()))
            self._root = None


class OpenInferenceTracer(SpanMirror):
    """A native ``Tracer`` that also emits each operation as an OpenInference span."""

    def _attributes(self, op: OpState, kind: str) -> dict[str, Any]:
        reads, writes, deleted = self._split(op)
        span_kind = SPAN_KINDS.get(kind, OpenInferenceSpanKindValues.CHAIN)
        attributes = self._common(op)
        attributes[SpanAttributes.OPENINFERENCE_SPAN_KIND] = span_kind.value
        parameters = {name: text for name, category, _, text, _ in reads if category == "parameter"}
        if parameters:
            attributes[SpanAttributes.LLM_INVOCATION_PARAMETERS] = json.dumps(parameters)
        documents = [r for r in reads if r[1] == _DOCUMENT]
        for i, (name, _, _, text, _) in enumerate(documents):
            prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}."
            attributes[prefix + DocumentAttributes.DOCUMENT_ID] = name
            attributes[prefix + DocumentAttributes.DOCUMENT_CONTENT] = text or ""
        inputs = [r for r in reads if r[1] not in (_DOCUMENT, "parameter")]
        if kind in _MESSAGE_KINDS or len(inputs) > 1:
            for i, (_, category, _, text, _) in enumerate(inputs):
                prefix = f"{SpanAttributes.LLM_INPUT_MESSAGES}.{i}."
                role = "system" if category == "prompt" else "user"
                attributes[prefix + MessageAttributes.MESSAGE_ROLE] = role
                attributes[prefix + MessageAttributes.MESSAGE_CONTENT] = text or ""
        elif inputs:
            attributes[SpanAttributes.INPUT_VALUE] = inputs[0][3] or ""
        stored = [w for w in writes if w[1] == _DOCUMENT]
        outputs = [w for w in writes if w[1] != _DOCUMENT]
        results = [
            {"id": name, "memory": text, "event": "ADD" if var_id.endswith("@1") else "UPDATE"}
            for name, _, _, text, var_id in stored
        ] + [{"id": name, "event": "DELETE"} for name, *_ in deleted]
        if results:
            attributes[SpanAttributes.OUTPUT_VALUE] = json.dumps({"results": results})
        if results or len(outputs) > 1:
            for i, (_, _, _, text, _) in enumerate(outputs):
                prefix = f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.{i}."
                attributes[prefix + MessageAttributes.MESSAGE_ROLE] = "assistant"
                attributes[prefix + MessageAttributes.MESSAGE_CONTENT] = text or ""
        elif outputs:
            attributes[SpanAttributes.OUTPUT_VALUE] = outputs[0][3] or ""
        return attributes


class GenAIMemoryTracer(SpanMirror):
    """A native ``Tracer`` that also emits each operation as an OTel GenAI span, memory
    operations in the GenAI memory convention."""

    def _attributes(self, op: OpState, kind: str) -> dict[str, Any]:
        reads, writes, deleted = self._split(op)
        attributes = self._common(op)
        stored = [w for w in writes if w[1] == _DOCUMENT]
        outputs = [w for w in writes if w[1] != _DOCUMENT]
        replaced = {name for name, *_ in stored}
        documents = [r for r in reads if r[1] == _DOCUMENT and r[0] not in replaced]
        inputs = [r for r in reads if r[1] not in (_DOCUMENT, "parameter")]
        if kind == "retrieval":
            attributes["gen_ai.operation.name"] = "search_memory"
            if inputs:
                attributes["gen_ai.memory.query.text"] = inputs[0][3] or ""
                inputs = inputs[1:]
            scores = op.metadata.get("scores")
            found = [
                _record(name, text, score=_score(scores, name)) for name, _, _, text, _ in documents
            ]
            attributes["gen_ai.memory.records"] = json.dumps(found)
            attributes["gen_ai.memory.record.count"] = len(found)
            if len(outputs) == 1:  # the context: no GenAI attribute holds it
                attributes[SpanAttributes.OUTPUT_VALUE] = outputs[0][3] or ""
                outputs = []
        elif stored or deleted:
            changes = [
                _record(name, text, event="ADD" if var_id.endswith("@1") else "UPDATE")
                for name, _, _, text, var_id in stored
            ] + [_record(name, None, event="DELETE") for name, *_ in deleted]
            events = {record["event"] for record in changes}
            operation = _MEMORY_OPERATIONS.get(frozenset(events), "upsert_memory")
            attributes["gen_ai.operation.name"] = operation
            seen = [_record(name, text, event="NONE") for name, _, _, text, _ in documents]
            attributes["gen_ai.memory.records"] = json.dumps(changes + seen)
            attributes["gen_ai.memory.record.count"] = len(changes)
        else:
            operation_name = _GEN_AI_OPERATIONS.get(kind)
            if operation_name is not None:
                attributes["gen_ai.operation.name"] = operation_name
            inputs = [r for r in reads if r[1] != "parameter"]  # documents read as text
        if inputs:
            attributes["gen_ai.input.messages"] = json.dumps(
                [_message("system" if r[1] == "prompt" else "user", r[3]) for r in inputs]
            )
        if outputs:
            attributes["gen_ai.output.messages"] = json.dumps(
                [_message("assistant", w[3]) for w in outputs]
            )
        return attributes


# the GenAI memory operation of an operation that changed the store in one way only
_MEMORY_OPERATIONS: dict[frozenset[str], str] = {
    frozenset({"ADD"}): "create_memory",
    frozenset({"UPDATE"}): "update_memory",
    frozenset({"DELETE"}): "delete_memory",
}
_GEN_AI_OPERATIONS: dict[str, str] = {
    "extraction": "chat",
    "update": "chat",
    "generation": "chat",
    "judge": "chat",
    "embedding": "embeddings",
}


def _record(
    record_id: str, content: str | None, *, event: str | None = None, score: float | None = None
) -> dict[str, Any]:
    """One entry of ``gen_ai.memory.records``; ``event`` is Mem0's (the schema allows more)."""
    record: dict[str, Any] = {"id": record_id}
    if content is not None:
        record["content"] = content
    if score is not None:
        record["score"] = score
    if event is not None:
        record["event"] = event
    return record


def _score(scores: Any, record_id: str) -> float | None:
    score = scores.get(record_id) if isinstance(scores, dict) else None
    return float(score) if isinstance(score, int | float) else None


def _message(role: str, text: str | None) -> dict[str, Any]:
    """A GenAI message: a role and one text part."""
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text or ""}]}
    if role == "assistant":
        message["finish_reason"] = "stop"
    return message


def _kind_of(category: str | None) -> str:
    """An operation recorded without a kind: its category, when that names a kind."""
    return category if category in SPAN_KINDS else "other"


def _message_text(value: str | None) -> str | None:
    """The text of a message variable (the reference systems store ``{"content": ...}``)."""
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return value
    content = parsed.get("content") if isinstance(parsed, dict) else None
    return content if isinstance(content, str) else value


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Finished spans as an OTLP JSON ``ExportTraceServiceRequest`` (hex ids, as OTLP JSON
    specifies; protobuf's generic JSON mapping would write them base64)."""
    request: dict[str, Any] = MessageToDict(encode_spans(spans))
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = _b64_to_hex(span[key])
    return request


def write_otlp_json(spans: Sequence[ReadableSpan], path: Path) -> Path:
    path.write_text(json.dumps(otlp_json(spans)), encoding="utf-8")
    return path


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()
