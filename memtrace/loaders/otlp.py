"""OpenTelemetry trace files (OTLP JSON) with OpenInference / OTel GenAI attributes -> records.

A file is one OTLP ``ExportTraceServiceRequest`` as JSON (``{"resourceSpans": [...]}``) or
JSON Lines of them (what the Collector's file exporter writes). Every span becomes an
operation; its inputs and outputs become variables; documents (retrieved, or written in a
Mem0-style ``{"results": [{id, memory, event}]}`` output) become versioned variables named by
their id. The mapping, and what it loses or infers, is in docs/trace-format.md.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memtrace.errors import InputError
from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
)
from memtrace.loaders.native import describe_validation_error
from memtrace.systems.locomo import load_locomo
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
}
GEN_AI_KINDS: Final[dict[str, Kind]] = {
    "chat": "generation",
    "text_completion": "generation",
    "generate_content": "generation",
    "embeddings": "embedding",
}
CASE_PREFIX: Final = "memtrace.case."
MARKER_ID: Final = "delete_marker:deleted@1"
_HEX_TRACE = re.compile(r"^[0-9a-fA-F]{32}$")
_HEX_SPAN = re.compile(r"^[0-9a-fA-F]{16}$")
M = TypeVar("M", bound=BaseModel)
_DOC_TEXT_KEYS: Final = ("memory", "text", "content", "data")
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


# -- the OTLP JSON structure (unknown fields are ignored: OTLP grows) --------------------------


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")


class OtlpKeyValue(_Item):
    key: Annotated[str, Field(min_length=1, strict=True)]
    value: dict[str, Any] = Field(default_factory=dict)


class OtlpEvent(_Item):
    name: str = ""
    timeUnixNano: int | str | None = None
    attributes: list[OtlpKeyValue] = Field(default_factory=list)


class OtlpStatus(_Item):
    code: int | str = 0
    message: str = ""


class OtlpSpan(_Item):
    traceId: Annotated[str, Field(min_length=1, strict=True)]
    spanId: Annotated[str, Field(min_length=1, strict=True)]
    parentSpanId: str = ""
    name: Annotated[str, Field(min_length=1, strict=True)]
    kind: int | str = 0
    startTimeUnixNano: int | str
    endTimeUnixNano: int | str
    attributes: list[OtlpKeyValue] = Field(default_factory=list)
    events: list[OtlpEvent] = Field(default_factory=list)
    status: OtlpStatus = Field(default_factory=OtlpStatus)


class OtlpScopeSpans(_Item):
    scope: dict[str, Any] = Field(default_factory=dict)
    spans: list[Any] = Field(default_factory=list)


class OtlpResource(_Item):
    attributes: list[OtlpKeyValue] = Field(default_factory=list)


class OtlpResourceSpans(_Item):
    resource: OtlpResource = Field(default_factory=OtlpResource)
    scopeSpans: list[OtlpScopeSpans] = Field(default_factory=list)


class OtlpRequest(_Item):
    resourceSpans: list[Any]


def looks_like_otlp(head: bytes) -> bool:
    """Whether a file starting with ``head`` is OTLP JSON: its first key is ``resourceSpans``."""
    return re.match(rb'^\s*\{\s*"resourceSpans"\s*:', head) is not None


# -- reading ----------------------------------------------------------------------------------


@dataclass
class Span:
    """One validated span, its attributes decoded to Python values."""

    location: str
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status: str
    resource: dict[str, Any]
    depth: int = 0


def read_otlp(file: Path, labels: Path | None = None) -> list[tuple[str, AnyRecord]]:
    """Parse, validate and convert one OTLP JSON file; the first record is the TraceRecord.

    ``labels``: a LoCoMo-format file whose questions become cases (joined by conversation =
    the spans' ``session.id`` and by question text).
    """
    path = str(file)
    spans = _read_spans(file)
    if not spans:
        raise InputError(
            path, None, "no spans: the file holds no resourceSpans[].scopeSpans[].spans"
        )
    return _Converter(path, file.stem, spans, labels).convert()


def _read_spans(file: Path) -> list[Span]:
    path = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    if not text.strip():
        raise InputError(path, None, "empty file: no OTLP trace data")
    documents: list[tuple[str, Any]] = []
    try:
        documents.append(("", json.loads(text)))
    except json.JSONDecodeError:
        # JSON Lines: one ExportTraceServiceRequest per line (the Collector's file exporter)
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append((f"line {number}: ", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InputError(
                    path, str(number), f"malformed JSON: {exc.msg} at column {exc.colno}"
                ) from None
    spans: list[Span] = []
    for prefix, data in documents:
        request = _validate(OtlpRequest, data, path, f"{prefix}$")
        for r, raw_resource in enumerate(request.resourceSpans):
            where = f"{prefix}resourceSpans[{r}]"
            resource = _validate(OtlpResourceSpans, raw_resource, path, where)
            resource_attributes = _attributes(resource.resource.attributes, path, where)
            for s, scope in enumerate(resource.scopeSpans):
                for i, raw_span in enumerate(scope.spans):
                    location = f"{where}.scopeSpans[{s}].spans[{i}]"
                    spans.append(_span(raw_span, path, location, resource_attributes))
    return spans


def _validate(model: type[M], data: Any, path: str, location: str) -> M:
    if not isinstance(data, dict):
        raise InputError(path, location, "expected a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problem = describe_validation_error("", exc).lstrip(".")
        raise InputError(path, location, problem) from None


def _span(data: Any, path: str, location: str, resource: dict[str, Any]) -> Span:
    span = _validate(OtlpSpan, data, path, location)
    start = _nanos(span.startTimeUnixNano, path, f"{location}.startTimeUnixNano")
    end = _nanos(span.endTimeUnixNano, path, f"{location}.endTimeUnixNano")
    if end < start:
        raise InputError(path, f"{location}.endTimeUnixNano", "ends before it starts")
    parent = span.parentSpanId
    return Span(
        location=location,
        trace_id=_hex_id(span.traceId, 16, path, f"{location}.traceId"),
        span_id=_hex_id(span.spanId, 8, path, f"{location}.spanId"),
        parent_id=_hex_id(parent, 8, path, f"{location}.parentSpanId") if parent else None,
        name=span.name,
        start_ns=start,
        end_ns=end,
        attributes=_attributes(span.attributes, path, location),
        events=[
            (event.name, _attributes(event.attributes, path, f"{location}.events[{j}]"))
            for j, event in enumerate(span.events)
        ],
        status=str(span.status.code),
        resource=resource,
    )


def _hex_id(value: str, size: int, path: str, location: str) -> str:
    """OTLP JSON ids are hex; protobuf's JSON mapping writes them base64: both are read."""
    if (_HEX_TRACE if size == 16 else _HEX_SPAN).match(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size and any(raw):
        return raw.hex()
    raise InputError(path, location, f"expected {2 * size} hex digits, got {value!r}")


def _nanos(value: int | str, path: str, location: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0 or isinstance(value, bool):
        raise InputError(path, location, f"expected nanoseconds since the epoch, got {value!r}")
    return number


def _attributes(pairs: list[OtlpKeyValue], path: str, location: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for i, pair in enumerate(pairs):
        found[pair.key] = _any_value(pair.value, path, f"{location}.attributes[{i}].value")
    return found


def _any_value(value: dict[str, Any], path: str, location: str) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if not value:
        return None
    ((kind, inner),) = list(value.items())[:1]
    if kind == "stringValue" and isinstance(inner, str):
        return inner
    if kind == "boolValue" and isinstance(inner, bool):
        return inner
    if kind == "intValue" and isinstance(inner, int | str) and not isinstance(inner, bool):
        try:
            return int(inner)
        except ValueError:
            pass
    if (
        kind == "doubleValue"
        and isinstance(inner, int | float | str)
        and not isinstance(inner, bool)
    ):
        try:
            return float(inner)
        except ValueError:
            pass
    if kind == "bytesValue" and isinstance(inner, str):
        return inner
    if kind == "arrayValue" and isinstance(inner, dict):
        items = inner.get("values", [])
        if isinstance(items, list):
            return [
                _any_value(item, path, f"{location}.values[{j}]")
                if isinstance(item, dict)
                else None
                for j, item in enumerate(items)
            ]
    if kind == "kvlistValue" and isinstance(inner, dict):
        items = inner.get("values", [])
        if isinstance(items, list) and all(isinstance(item, dict) for item in items):
            return {
                str(item.get("key")): _any_value(item.get("value") or {}, path, location)
                for item in items
            }
    raise InputError(path, location, f"not an OTLP AnyValue: {json.dumps(value)[:80]}")


# -- conversion -------------------------------------------------------------------------------


@dataclass
class _Var:
    id: str
    name: str
    version: int
    value: str | None
    category: str | None
    created_ns: int
    seq: int
    session: str
    class_name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Op:
    span: Span
    kind: Kind
    seq: int
    reads: dict[str, None] = field(default_factory=dict)
    writes: dict[str, None] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _Io:
    """One input or output of a span: where it came from, its role and its text."""

    slot: str
    role: str | None
    text: str


class _Converter:
    def __init__(self, path: str, stem: str, spans: list[Span], labels: Path | None) -> None:
        self.path = path
        self.stem = stem
        self.spans = spans
        self.labels = labels
        self.variables: list[_Var] = []
        self.by_text: dict[str, list[_Var]] = {}
        self.documents: dict[str, _Var] = {}  # document id -> latest version
        self.ops: list[_Op] = []
        self.seq = 0
        self.marker: _Var | None = None

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def convert(self) -> list[tuple[str, AnyRecord]]:
        self._order()
        for span in self.spans:
            self._operation(span)
        cases = self._cases()
        return [
            ("$", self._trace()),
            *self._sessions(),
            *((v.id, self._variable_record(v)) for v in self.variables),
            *self._operation_records(),
            *cases,
        ]

    def _order(self) -> None:
        seen: dict[tuple[str, str], Span] = {}
        for span in self.spans:
            key = (span.trace_id, span.span_id)
            if key in seen:
                raise InputError(
                    self.path,
                    span.location,
                    f"spanId {span.span_id} appears twice in trace {span.trace_id} "
                    f"(first at {seen[key].location})",
                )
            seen[key] = span
        for span in self.spans:
            depth, parent = 0, span.parent_id
            while parent is not None and (span.trace_id, parent) in seen and depth < 10_000:
                depth += 1
                parent = seen[(span.trace_id, parent)].parent_id
            span.depth = depth
        self.spans.sort(key=lambda s: (s.start_ns, s.depth, s.span_id))

    # -- variables --------------------------------------------------------------------------

    def _new_var(
        self,
        name: str,
        value: str | None,
        category: str | None,
        created_ns: int,
        session: str,
        version: int = 1,
        class_name: str | None = None,
    ) -> _Var:
        prefix = f"{class_name}:" if class_name else ""
        var = _Var(
            f"{prefix}{name}@{version}",
            name,
            version,
            value,
            category,
            created_ns,
            self.next_seq(),
            session,
            class_name,
        )
        self.variables.append(var)
        if value is not None:
            self.by_text.setdefault(value, []).append(var)
        return var

    def _existing(self, text: str, before_ns: int) -> _Var | None:
        """The latest variable holding exactly ``text`` that existed at ``before_ns``."""
        found = [v for v in self.by_text.get(text, ()) if v.created_ns <= before_ns]
        return found[-1] if found else None

    # -- spans -> operations ----------------------------------------------------------------

    def _operation(self, span: Span) -> None:
        attributes = span.attributes
        kind = _kind(span)
        session = span.trace_id
        inputs = []
        for io in _inputs(span):  # new inputs are ranked before the op that reads them
            var = self._existing(io.text, span.start_ns)
            if var is None:
                category = _input_category(io.role, kind)
                var = self._new_var(
                    f"{span.span_id}:{io.slot}", io.text, category, span.start_ns, session
                )
            inputs.append(var)
        op = _Op(span, kind, self.next_seq())
        self.ops.append(op)
        read_documents = [
            self._read_document(doc_id, content, span)
            for doc_id, content in _retrieved_documents(attributes)
        ]
        for var in (*inputs, *read_documents):
            op.reads[var.id] = None
        output_value = attributes.get("output.value")
        written = _written_documents(output_value)
        outputs: list[_Var] = []
        for io in _outputs(span, skip_output_value=written is not None):
            var = self._existing(io.text, span.end_ns)
            if var is None or var.id in op.reads:
                var = self._new_var(
                    f"{span.span_id}:{io.slot}",
                    io.text,
                    _output_category(span, kind),
                    span.end_ns,
                    session,
                )
            outputs.append(var)
        for target in outputs:
            op.writes[target.id] = None
            op.edges.extend((source.id, target.id) for source in (*inputs, *read_documents))
        for doc_id, content, event in written or ():
            self._write_document(op, doc_id, content, event, inputs)

    def _read_document(self, doc_id: str, content: str | None, span: Span) -> _Var:
        latest = self.documents.get(doc_id)
        if latest is not None and (content is None or latest.value == content):
            return latest
        version = latest.version + 1 if latest is not None else 1
        var = self._new_var(doc_id, content, "memory_entry", span.start_ns, span.trace_id, version)
        self.documents[doc_id] = var
        return var

    def _write_document(
        self, op: _Op, doc_id: str, content: str | None, event: str, inputs: list[_Var]
    ) -> None:
        span = op.span
        latest = self.documents.get(doc_id)
        if event == "NONE":
            return
        if event == "DELETE":
            if latest is None:  # deleting a document never seen: it existed before the file
                latest = self._read_document(doc_id, content, span)
            if self.marker is None:
                self.marker = self._new_var(
                    "deleted",
                    "DELETED",
                    "marker",
                    span.end_ns,
                    span.trace_id,
                    class_name="delete_marker",
                )
            op.reads[latest.id] = None
            op.writes[self.marker.id] = None
            op.edges.append((latest.id, self.marker.id))
            return
        if latest is not None and latest.value == content:
            return
        version = latest.version + 1 if latest is not None else 1
        var = self._new_var(doc_id, content, "memory_entry", span.end_ns, span.trace_id, version)
        self.documents[doc_id] = var
        op.writes[var.id] = None
        sources = [latest] if latest is not None else []
        if latest is not None:
            op.reads[latest.id] = None  # an update reads the version it replaces
        op.edges.extend((source.id, var.id) for source in (*sources, *inputs))

    # -- cases ------------------------------------------------------------------------------

    def _cases(self) -> list[tuple[str, AnyRecord]]:
        cases: dict[str, CaseRecord] = {}
        locations: dict[str, str] = {}
        for op in self.ops:
            found = self._span_case(op)
            if found is not None:
                if found.id in cases:
                    raise InputError(
                        self.path,
                        op.span.location,
                        f"{CASE_PREFIX}id {found.id!r} is also recorded at {locations[found.id]}",
                    )
                cases[found.id] = found
                locations[found.id] = op.span.location
        if self.labels is not None:
            for case in self._label_cases(cases):
                cases[case.id] = case
                locations[case.id] = f"labels:{case.id}"
        queries = {case.query for case in cases.values()}
        for var in self.variables:
            if var.id in queries:
                var.category = "message & query"
        return [(locations[key], case) for key, case in cases.items()]

    def _span_case(self, op: _Op) -> CaseRecord | None:
        attributes = op.span.attributes
        case_id = attributes.get(f"{CASE_PREFIX}id")
        if case_id is None:
            return None
        where = op.span.location

        def text(key: str) -> str | None:
            value = attributes.get(CASE_PREFIX + key)
            if value is not None and not isinstance(value, str):
                raise InputError(self.path, where, f"{CASE_PREFIX}{key}: expected a string")
            return value

        question = text("question")
        if not isinstance(case_id, str) or not case_id or question is None:
            raise InputError(
                self.path,
                where,
                f"a case needs string attributes {CASE_PREFIX}id and {CASE_PREFIX}question",
            )
        query = self._existing(question, op.span.end_ns) or self._new_var(
            f"{op.span.span_id}:question", question, None, op.span.start_ns, op.span.trace_id
        )
        prediction_text = text("prediction")
        prediction = self._existing(prediction_text, op.span.end_ns) if prediction_text else None
        if prediction is None:
            prediction = self._answer_of(query)
        golden = attributes.get(CASE_PREFIX + "golden_answers", [])
        golden_answers = [golden] if isinstance(golden, str) else golden
        if not isinstance(golden_answers, list) or not all(
            isinstance(g, str) for g in golden_answers
        ):
            raise InputError(self.path, where, f"{CASE_PREFIX}golden_answers: expected strings")
        score = attributes.get(CASE_PREFIX + "judge_score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise InputError(self.path, where, f"{CASE_PREFIX}judge_score: expected a number")
        if score is None and prediction is not None:
            score = self._score_of(prediction)
        evidence_texts = attributes.get(CASE_PREFIX + "evidence", [])
        if not isinstance(evidence_texts, list) or not all(
            isinstance(e, str) for e in evidence_texts
        ):
            raise InputError(self.path, where, f"{CASE_PREFIX}evidence: expected strings")
        evidence, missing = self._evidence(evidence_texts)
        return CaseRecord(
            type="case",
            id=case_id,
            query=query.id,
            query_text=question,
            prediction=prediction.id if prediction else None,
            prediction_text=prediction_text,
            golden_answers=golden_answers,
            judge_score=score,
            category=text("category"),
            evidence=evidence,
            missing_evidence=missing,
        )

    def _label_cases(self, cases: dict[str, CaseRecord]) -> Iterator[CaseRecord]:
        assert self.labels is not None
        conversations = load_locomo(self.labels)
        sessions = {
            str(span.attributes["session.id"])
            for span in self.spans
            if span.attributes.get("session.id") is not None
        }
        matched = [conv for conv in conversations if conv.sample_id in sessions]
        if not matched:
            raise InputError(
                str(self.labels),
                None,
                "no conversation's sample_id matches a span's session.id attribute "
                f"(spans: {sorted(sessions)[:5] or 'none'})",
            )
        by_query = {case.query: case for case in cases.values()}
        for conv in matched:
            turns = conv.turns()
            for question in conv.questions:
                query = self._first_with_text(question.text)
                if query is None:
                    continue  # not asked in this trace (a subset run)
                texts = [turns[d].text for d in question.evidence if d in turns]
                evidence, missing = self._evidence(texts)
                missing += [d for d in question.evidence if d not in turns]
                known = by_query.get(query.id)
                if known is not None:
                    yield known.model_copy(
                        update={
                            "evidence": known.evidence or evidence,
                            "missing_evidence": known.missing_evidence or missing,
                            "golden_answers": known.golden_answers or [question.answer],
                            "category": known.category or question.category,
                        }
                    )
                    continue
                prediction = self._answer_of(query)
                yield CaseRecord(
                    type="case",
                    id=f"{conv.sample_id}-qa-{question.number}",
                    query=query.id,
                    query_text=question.text,
                    prediction=prediction.id if prediction else None,
                    golden_answers=[question.answer],
                    judge_score=self._score_of(prediction) if prediction else None,
                    category=question.category,
                    evidence=evidence,
                    missing_evidence=missing,
                )

    def _first_with_text(self, text: str) -> _Var | None:
        found = self.by_text.get(text) or self.by_text.get(text.strip())
        return found[0] if found else None

    def _answer_of(self, query: _Var) -> _Var | None:
        """The first output of the earliest generation op reading the query."""
        for op in self.ops:
            if op.kind == "generation" and query.id in op.reads and op.writes:
                return self._var(next(iter(op.writes)))
        return None

    def _score_of(self, prediction: _Var) -> float | None:
        """The number a judge op reading the prediction wrote (its first numeric output)."""
        for op in self.ops:
            if op.kind == "judge" and prediction.id in op.reads:
                for var_id in op.writes:
                    value = self._var(var_id).value
                    try:
                        return float(value) if value is not None else None
                    except ValueError:
                        continue
        return None

    def _evidence(self, texts: list[str]) -> tuple[list[str], list[str]]:
        """Message variables holding each evidence text (the earliest), and texts not found."""
        found: list[str] = []
        missing: list[str] = []
        for text in texts:
            escaped = json.dumps(text, ensure_ascii=False)[1:-1]
            holder = next(
                (
                    v
                    for v in self.variables
                    if v.category == "message"
                    and v.value is not None
                    and (text in v.value or escaped in v.value)
                ),
                None,
            )
            if holder is None:
                missing.append(text)
            elif holder.id not in found:
                found.append(holder.id)
        return found, missing

    def _var(self, var_id: str) -> _Var:
        return next(v for v in self.variables if v.id == var_id)

    # -- records ----------------------------------------------------------------------------

    def _trace(self) -> TraceRecord:
        first = self.spans[0]
        resource = first.resource
        service = resource.get("service.name")
        return TraceRecord(
            type="trace",
            format_version=2,
            id=f"otlp-{self.stem}",
            system=service if isinstance(service, str) else None,
            created_at=_timestamp(first.start_ns),
            metadata={
                "source_format": "otlp",
                "otel_trace_ids": sorted({s.trace_id for s in self.spans}),
                "resource": _jsonable(resource),
            },
        )

    def _sessions(self) -> Iterator[tuple[str, SessionRecord]]:
        roots: dict[str, Span] = {}
        for span in self.spans:
            roots.setdefault(span.trace_id, span)
        for trace_id, root in roots.items():
            session_id = root.attributes.get("session.id")
            yield (
                root.location,
                SessionRecord(
                    type="session",
                    id=trace_id,
                    name=root.name,
                    category="otel_trace",
                    created_at=_timestamp(root.start_ns),
                    metadata={"session.id": session_id} if session_id is not None else {},
                ),
            )

    def _variable_record(self, var: _Var) -> VariableRecord:
        return VariableRecord(
            type="variable",
            id=var.id,
            name=var.name,
            version=var.version,
            category=var.category,
            class_name=var.class_name,
            value=var.value,
            created_at=_timestamp(var.created_ns),
            session=var.session,
            seq=var.seq,
            metadata=var.metadata,
        )

    def _operation_records(self) -> Iterator[tuple[str, AnyRecord]]:
        for op in self.ops:
            span = op.span
            attributes = span.attributes
            category = attributes.get("openinference.span.kind") or attributes.get(
                "gen_ai.operation.name"
            )
            yield (
                span.location,
                OperationRecord(
                    type="operation",
                    id=span.span_id,
                    name=span.name,
                    kind=op.kind,
                    category=str(category) if category is not None else None,
                    session=span.trace_id,
                    created_at=_timestamp(span.start_ns),
                    seq=op.seq,
                    reads=list(op.reads),
                    writes=list(op.writes),
                    metadata=_op_metadata(span),
                ),
            )
            for i, (source, target) in enumerate(dict.fromkeys(op.edges)):
                yield (
                    f"{span.location}.edges[{i}]",
                    EdgeRecord(
                        type="edge",
                        id=f"{span.span_id}/edge-{i + 1}",
                        op=span.span_id,
                        source=source,
                        target=target,
                    ),
                )


# -- attribute conventions --------------------------------------------------------------------


def _kind(span: Span) -> Kind:
    by_name = derive_kind(span.name, None)
    if by_name != "other":
        return by_name
    attributes = span.attributes
    span_kind = attributes.get("openinference.span.kind")
    if isinstance(span_kind, str) and span_kind.upper() in OPENINFERENCE_KINDS:
        return OPENINFERENCE_KINDS[span_kind.upper()]
    operation = attributes.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation in GEN_AI_KINDS:
        return GEN_AI_KINDS[operation]
    return "other"


def _input_category(role: str | None, kind: Kind) -> str:
    if role in ("system", "developer"):
        return "prompt"
    if role in ("user", "human") or kind == "extraction":
        return "message"
    return "input"


def _output_category(span: Span, kind: Kind) -> str:
    if kind == "retrieval":
        return "context"
    attributes = span.attributes
    llm = attributes.get("openinference.span.kind") == "LLM" or (
        GEN_AI_KINDS.get(str(attributes.get("gen_ai.operation.name"))) == "generation"
    )
    return "llm_response" if llm or kind in ("generation", "judge") else "output"


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest = value`` attributes as a list of ``{rest: value}`` in N order."""
    found: dict[int, dict[str, Any]] = {}
    start = len(prefix) + 1
    for key, value in attributes.items():
        if key.startswith(prefix) and key[start - 1 : start] == ".":
            match = _INDEXED.match(key[start:])
            if match is not None:
                found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [found[i] for i in sorted(found)]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _message_text(message: dict[str, Any]) -> str | None:
    """OpenInference ``message.content`` / ``message.contents.N.message_content.text``."""
    content = message.get("message.content")
    if content is not None:
        return _text(content)
    parts = [v for k, v in sorted(message.items()) if k.endswith("message_content.text")]
    return "\n".join(str(p) for p in parts) if parts else None


def _gen_ai_messages(value: Any) -> list[tuple[str | None, str]]:
    """OTel GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return [(None, value)]
    if not isinstance(value, list):
        return []
    found: list[tuple[str | None, str]] = []
    for message in value:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if isinstance(message.get("content"), str):
            found.append((role, message["content"]))
            continue
        texts = [
            str(part.get("content"))
            for part in message.get("parts", [])
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        if texts:
            found.append((role, "\n".join(texts)))
    return found


def _inputs(span: Span) -> list[_Io]:
    attributes = span.attributes
    found: list[_Io] = []
    for i, message in enumerate(_indexed(attributes, "llm.input_messages")):
        text = _message_text(message)
        if text is not None:
            role = message.get("message.role")
            found.append(_Io(f"input_messages.{i}", str(role) if role else None, text))
    for i, (role, text) in enumerate(_gen_ai_messages(attributes.get("gen_ai.input.messages"))):
        found.append(_Io(f"gen_ai.input.{i}", role, text))
    system = attributes.get("gen_ai.system_instructions")
    if system is not None:
        for i, (_, text) in enumerate(_gen_ai_messages(system)):
            found.append(_Io(f"gen_ai.system.{i}", "system", text))
    for i, prompt in enumerate(_indexed(attributes, "gen_ai.prompt")):
        if prompt.get("content") is not None:
            found.append(
                _Io(f"gen_ai.prompt.{i}", prompt.get("role"), _text(prompt["content"]) or "")
            )
    for i, (name, event) in enumerate(span.events):
        if name.startswith("gen_ai.") and name.endswith(".message") and "content" in event:
            role = name.removeprefix("gen_ai.").removesuffix(".message")
            found.append(_Io(f"event.{i}", role, _text(event["content"]) or ""))
    for i, embedding in enumerate(_indexed(attributes, "embedding.embeddings")):
        text = embedding.get("embedding.text")
        if text is not None:
            found.append(_Io(f"embedding.{i}", None, _text(text) or ""))
    value = attributes.get("input.value")
    if value is not None:
        found.append(_Io("input", None, _text(value) or ""))
    return _unique(found)


def _outputs(span: Span, *, skip_output_value: bool) -> list[_Io]:
    attributes = span.attributes
    found: list[_Io] = []
    for i, message in enumerate(_indexed(attributes, "llm.output_messages")):
        text = _message_text(message)
        if text is not None:
            found.append(_Io(f"output_messages.{i}", "assistant", text))
    for i, (role, text) in enumerate(_gen_ai_messages(attributes.get("gen_ai.output.messages"))):
        found.append(_Io(f"gen_ai.output.{i}", role, text))
    for i, completion in enumerate(_indexed(attributes, "gen_ai.completion")):
        if completion.get("content") is not None:
            found.append(
                _Io(f"gen_ai.completion.{i}", "assistant", _text(completion["content"]) or "")
            )
    for i, (name, event) in enumerate(span.events):
        if name == "gen_ai.choice":
            choice = event.get("message")
            content = choice.get("content") if isinstance(choice, dict) else event.get("content")
            if content is not None:
                found.append(_Io(f"event.{i}", "assistant", _text(content) or ""))
    value = attributes.get("output.value")
    if value is not None and not skip_output_value:
        found.append(_Io("output", None, _text(value) or ""))
    return _unique(found)


def _unique(found: list[_Io]) -> list[_Io]:
    """One input per text: the same text twice is one variable read once."""
    seen: set[str] = set()
    unique = []
    for io in found:
        if io.text not in seen:
            seen.add(io.text)
            unique.append(io)
    return unique


def _retrieved_documents(attributes: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``retrieval.documents.N.document.{id,content}`` and ``reranker.input_documents`` with ids."""
    found: list[tuple[str, str | None]] = []
    for prefix in ("retrieval.documents", "reranker.input_documents"):
        for doc in _indexed(attributes, prefix):
            doc_id = doc.get("document.id")
            if doc_id is not None:
                found.append((str(doc_id), _text(doc.get("document.content"))))
    return found


def _written_documents(value: Any) -> list[tuple[str, str | None, str]] | None:
    """Documents an output writes: Mem0's ``{"results": [{id, memory, event}]}`` shape (or a
    bare list of such objects). None when the output is not of that shape."""
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return None
    items = parsed.get("results") if isinstance(parsed, dict) else parsed
    if not isinstance(items, list) or not items:
        return None
    found: list[tuple[str, str | None, str]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            return None
        event = str(item.get("event") or "ADD").upper()
        text = next((item[k] for k in _DOC_TEXT_KEYS if isinstance(item.get(k), str)), None)
        if text is None and event not in ("DELETE", "NONE"):
            return None
        found.append((item["id"], text, event))
    return found


def _op_metadata(span: Span) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "otel_trace_id": span.trace_id,
        "otel_status": span.status,
        "duration_ms": round((span.end_ns - span.start_ns) / 1e6, 3),
    }
    if span.parent_id:
        metadata["otel_parent_span_id"] = span.parent_id
    for key in ("llm.model_name", "gen_ai.request.model", "session.id", "user.id"):
        if span.attributes.get(key) is not None:
            metadata[key] = span.attributes[key]
    for key in ("llm.invocation_parameters", "metadata"):
        value = span.attributes.get(key)
        if isinstance(value, str):
            metadata[key] = value
    return metadata


def _jsonable(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if isinstance(v, str | int | float | bool)}


def _timestamp(nanos: int) -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
    return moment.isoformat().replace("+00:00", "Z")
