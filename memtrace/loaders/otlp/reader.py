"""OpenTelemetry trace files (OTLP JSON) with OpenInference / OTel GenAI attributes -> records.

Every span becomes an operation; its inputs and outputs become variables. Values are not
texts: each operation's output is a variable of its own even when an earlier one had the same
text (two cases answering "I don't know." answer separately); a span passing up what a span
inside it produced writes that same variable. Text links only reads: an input is the latest
variable holding its exact text (an earlier output or input), else a new one. Documents
(retrieved, or written in a Mem0-style ``{"results": [{id, memory, event}]}`` output) become
versioned variables named by their id; cases come from ``memtrace.case.*`` span attributes or a
LoCoMo labels file. The mapping, and what it loses or infers, is in docs/trace-format.md.
Reading and validation: spans.py; the conventions a span's kind and texts are read by:
conventions/; documents and GenAI memory records: attributes.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from memtrace.errors import InputError
from memtrace.loaders.checks import CONTENT_OFF
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
)
from memtrace.loaders.otlp.attributes import (
    AttributeProblem,
    MemorySpan,
    input_category,
    memory_span,
    output_category,
    retrieved_documents,
    written_documents,
)
from memtrace.loaders.otlp.conventions import (
    content_free,
    content_keys,
    content_switch,
    span_inputs,
    span_kind,
    span_outputs,
)
from memtrace.loaders.otlp.conventions.shapes import Io, as_text
from memtrace.loaders.otlp.frameworks import (
    Embedded,
    decoded,
    is_chain,
    is_framework_step,
    parts,
    root_inputs,
    same_value,
    says_where_from,
    unnamed_documents,
)
from memtrace.loaders.otlp.prior import NO_PRIOR, Prior, PriorVariable
from memtrace.loaders.otlp.spans import Span, document_spans, looks_like_otlp, read_spans
from memtrace.taxonomy import Kind

__all__ = [
    "LabeledQuestion",
    "Labels",
    "looks_like_otlp",
    "read_otlp",
    "read_otlp_document",
]

CASE_PREFIX: Final = "memtrace.case."
# trace metadata keys: spans whose content produced no variable, spans of unknown kind
UNREAD_CONTENT_SPANS: Final = "unread_content_spans"
UNKNOWN_KIND_SPANS: Final = "unknown_kind_spans"
CONTENT_FREE_SPANS: Final = "content_free_spans"  # known kinds that say only counts (cognee)
# the one deletion marker of a trace (every deletion's edge ends there), shared by a timeline's
# requests
_MARKER_NAME: Final = "deleted"
_MARKER_ID: Final = f"delete_marker:{_MARKER_NAME}@1"


@dataclass(frozen=True)
class LabeledQuestion:
    """A question to join into an OTLP trace as a case (``memtrace load --labels`` reads them
    from a LoCoMo-format file)."""

    conversation: str  # matched against the spans' session.id
    case_id: str
    question: str  # matched against a variable's exact text
    answer: str
    category: str | None
    evidence: tuple[str, ...]  # texts of the messages that hold the answer
    missing_evidence: tuple[str, ...] = ()  # evidence ids that name no message of the file


@dataclass(frozen=True)
class Labels:
    source: str  # the file they came from, for errors
    questions: tuple[LabeledQuestion, ...]


def read_otlp(file: Path, labels: Labels | None = None) -> list[tuple[str, AnyRecord]]:
    """Parse, validate and convert one OTLP JSON file; the first record is the TraceRecord.

    ``labels``: questions that become cases (joined by conversation = the spans' ``session.id``
    and by question text).
    """
    return otlp_records(read_spans(file), str(file), file.stem, labels)


def read_otlp_document(
    document: Any, source: str, name: str, labels: Labels | None = None
) -> list[tuple[str, AnyRecord]]:
    """``read_otlp`` of one decoded OTLP JSON ``ExportTraceServiceRequest`` (a live receiver's
    batch, say): ``source`` names it in errors, ``name`` gives the trace id ``otlp-<name>``."""
    return otlp_records(document_spans(document, source), source, name, labels)


def otlp_trace_id(name: str) -> str:
    """The memtrace trace id of an OTLP file or document named ``name`` (its trace id)."""
    return f"otlp-{name}"


def otlp_records(
    spans: list[Span], source: str, name: str, labels: Labels | None, prior: Prior = NO_PRIOR
) -> list[tuple[str, AnyRecord]]:
    """``prior``: what the timeline these spans are appended to already holds (its variables
    are read, never written again: the records name them without defining them)."""
    if not spans:
        raise InputError(
            source, None, "no spans: the file holds no resourceSpans[].scopeSpans[].spans"
        )
    return _Converter(source, name, spans, labels, prior).convert()


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
    metadata: dict[str, Any] = field(default_factory=dict)
    # the assistant's texts it wrote (a generation that only called tools answered nothing)
    answers: list[str] = field(default_factory=list)


class _Converter:
    def __init__(
        self, path: str, stem: str, spans: list[Span], labels: Labels | None, prior: Prior
    ) -> None:
        self.path = path
        self.stem = stem
        self.spans = spans
        self.labels = labels
        self.prior = prior
        self.asked: set[str] = set()  # document names whose prior state was looked up
        self.variables: list[_Var] = []
        self.by_text: dict[str, list[_Var]] = {}
        self.by_id: dict[str, _Var] = {}
        self.documents: dict[str, _Var] = {}  # document name -> latest version
        self.deleted: set[str] = set()  # document names whose latest version was deleted
        self.ops: list[_Op] = []
        self.seq = 0
        self.marker: _Var | None = None  # the deletion marker, once a deletion needs it
        # (trace id, span id) -> its child spans; -> its operation
        self.children: dict[tuple[str, str], list[Span]] = {}
        self.op_of: dict[tuple[str, str], _Op] = {}
        self.span_of: dict[tuple[str, str], Span] = {}
        # a part of a JSON value (frameworks.py) -> the variables holding it, in creation order
        self.part_of: dict[str, list[_Var]] = {}
        self.carries: dict[str, list[_Var]] = {}  # an input variable -> the values it carries
        self.written: set[str] = set()  # the variables some operation wrote
        self.embedded = Embedded()  # their texts, to find inside later prompts
        self.producer: dict[str, _Op] = {}  # variable id -> the operation that output it
        self.unknown_kind: list[str] = []  # names of spans no rule or convention recognised
        self.unread: list[list[str]] = []  # per span with content but no variable: its keys
        self.content_free: list[str] = []  # names of spans whose convention has no content
        # (instrumentation, how to turn its content on) -> spans it wrote without content
        self.content_off: dict[tuple[str, str], int] = {}

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def convert(self) -> list[tuple[str, AnyRecord]]:
        self._order()
        for span in self.spans:
            self._operation(span)
        self._fold_chains()
        self._deciding_generations()
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
        self.span_of = seen
        for span in self.spans:
            if span.parent_id is not None:
                self.children.setdefault((span.trace_id, span.parent_id), []).append(span)
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
        self.by_id[var.id] = var
        if value is not None:
            self.by_text.setdefault(value, []).append(var)
            for part in parts(value):
                self.part_of.setdefault(part, []).append(var)
        return var

    def _existing(self, text: str, before_ns: int) -> _Var | None:
        """The latest variable holding exactly ``text`` that existed at ``before_ns`` (in an
        earlier request of the timeline when none of these spans wrote one)."""
        found = [v for v in self.by_text.get(text, ()) if v.created_ns <= before_ns]
        return found[-1] if found else self._prior_with_text(text)

    def _prior_with_text(self, text: str) -> _Var | None:
        found = self.prior.latest_with_text(text)
        return self._from_prior(found) if found is not None else None

    def _from_prior(self, found: PriorVariable) -> _Var:
        """An earlier request's variable, as this conversion refers to it (never a record)."""
        known = self.by_id.get(found.id)
        if known is not None:
            return known
        var = _Var(
            found.id,
            found.name,
            found.version,
            found.value,
            found.category,
            -1,  # before every span of these requests
            -1,
            "",
            found.class_name,
        )
        self.by_id[var.id] = var
        return var

    def _document(self, name: str) -> _Var | None:
        """The latest version of document ``name`` (from earlier requests of the timeline when
        these spans have not touched it; ``self.deleted`` learns whether it was deleted)."""
        if name not in self.documents and name not in self.asked:
            self.asked.add(name)
            found, deleted = self.prior.document(name)
            if found is not None:
                self.documents[name] = self._from_prior(found)
                if deleted:
                    self.deleted.add(name)
        return self.documents.get(name)

    def _produced_inside(self, text: str, span: Span) -> _Var | None:
        """The latest output holding exactly ``text`` of an operation within ``span`` (the span
        or its descendants): what a span passing its child's result up outputs."""
        found = [
            v
            for v in self.by_text.get(text, ())
            if v.id in self.producer and self._within(self.producer[v.id].span, span)
        ]
        return found[-1] if found else None

    def _within(self, span: Span, ancestor: Span) -> bool:
        if span is ancestor:
            return True
        parent, depth = span.parent_id, 0
        while parent is not None and span.trace_id == ancestor.trace_id and depth < 10_000:
            if parent == ancestor.span_id:
                return True
            found = self.span_of.get((span.trace_id, parent))
            parent, depth = (found.parent_id if found else None), depth + 1
        return False

    # -- spans -> operations ----------------------------------------------------------------

    def _memory_span(self, span: Span) -> MemorySpan | None:
        try:
            return memory_span(span)
        except AttributeProblem as problem:
            key = problem.key.partition("[")[0]
            raise InputError(
                self.path, span.attribute_location(key), f"span {span.name!r}: {problem}"
            ) from None

    def _operation(self, span: Span) -> None:
        attributes = span.attributes
        kind, recognized = span_kind(span)
        if not recognized:
            self.unknown_kind.append(span.name)
        memory = self._memory_span(span)
        session = span.trace_id
        inputs = []
        for io in self._inputs(span):  # new inputs are ranked before the op that reads them
            var = self._existing(io.text, span.start_ns)
            if var is None:
                category = input_category(io.role, kind)
                var = self._new_var(
                    f"{span.span_id}:{io.slot}", io.text, category, span.start_ns, session
                )
                carried = self._carried(var, span, span.start_ns)
                if kind == "generation" and not carried:
                    carried = self._embedded_in(var, span)
                inputs.extend(carried)
                if decoded(io.text) is not None:  # a structure: whoever reads it reads its parts
                    self.carries[var.id] = carried
            else:
                inputs.extend(self.carries.get(var.id, ()))
            inputs.append(var)
        op = _Op(span, kind, self.next_seq())
        self.ops.append(op)
        self.op_of[(span.trace_id, span.span_id)] = op
        found = self._stored_by_content(span, retrieved_documents(span))
        written = written_documents(attributes.get("output.value"))
        if kind == "retrieval" and written is not None:
            # a search returning Mem0-shaped results reads those memories, it stores nothing
            found += [(doc_id, content) for doc_id, content, _ in written]
            written = None  # and the results are also the context it outputs
        if memory is not None:
            written = self._memory_records(op, memory, found)
            inputs.extend(self._deciders(memory, span))
        read_documents = [self._read_document(doc_id, content, span) for doc_id, content in found]
        for var in (*inputs, *read_documents):
            op.reads[var.id] = None
        outputs: list[_Var] = []
        skip_output_value = written is not None and memory is None
        for io in self._outputs(span, skip_output_value):
            existing = self._existing(io.text, span.end_ns)
            if existing is not None and existing.id in op.reads and self._passes_on(span, kind):
                continue  # a step that hands its input on (RunnablePassthrough) writes nothing
            # a copy of a stored memory's text is no write of that memory; a retrieval that
            # outputs it found it (a search tool returning the note it matched)
            stored = existing if kind == "retrieval" else None
            if (
                stored is not None
                and stored.category == "memory_entry"
                and self._document(stored.name) is stored
                and stored.id not in op.reads
            ):
                op.reads[stored.id] = None
                read_documents.append(stored)
            # values are not texts: an equal text output elsewhere is another variable; only
            # what a span inside this one output and this one passes up is the same variable
            var = self._produced_inside(io.text, span)
            if var is None or var.id in op.reads:
                var = self._new_var(
                    f"{span.span_id}:{io.slot}",
                    io.text,
                    output_category(span, kind),
                    span.end_ns,
                    session,
                )
            self.producer.setdefault(var.id, op)
            outputs.append(var)
            if io.role == "assistant":
                op.answers.append(var.id)
        found_texts = [c for _, c in found if c]
        handed_on = all(any(t in (o.value or "") for o in outputs) for t in found_texts)
        if kind == "retrieval" and not handed_on and is_framework_step(attributes):
            # a framework's retriever hands on what it found (LlamaIndex writes only the
            # nodes' reprs): the documents' texts are its output, what later steps carry
            outputs.append(
                self._new_var(
                    f"{span.span_id}:documents",
                    json.dumps(found_texts, ensure_ascii=False),
                    "context",
                    span.end_ns,
                    session,
                )
            )
        if memory is not None and memory.operation == "search_memory" and not outputs:
            # a search with no output attribute: its context is the records it returned
            contents = [r.content for r in memory.records]
            context = json.dumps(contents, ensure_ascii=False)
            var = self._new_var(
                f"{span.span_id}:memory_context", context, "context", span.end_ns, session
            )
            self.producer[var.id] = op
            outputs.append(var)
        for target in outputs:
            if target.id not in self.written and target.value:
                self.embedded.add(target.value)
            self.written.add(target.id)
            op.writes[target.id] = None
            op.edges.extend((source.id, target.id) for source in (*inputs, *read_documents))
        for doc_id, content, event in written or ():
            self._write_document(op, doc_id, content, event, inputs)
        if memory is not None and memory.operation == "delete_memory_store":
            prefix = f"{memory.store}/" if memory.store else ""
            names = [n for n in self.documents if n.startswith(prefix)]
            names += [n for n in self.prior.documents_in_store(prefix) if n not in names]
            for name in names:
                if self._document(name) is not None and name not in self.deleted:
                    self._write_document(op, name, None, "DELETE", inputs)
        keys = content_keys(span) if not (op.reads and op.writes) else []
        if not op.reads and not op.writes:
            if content_free(span):
                self.content_free.append(span.name)
            elif keys:
                self.unread.append(keys)
        if not keys and self._without_content(kind, op):
            switch = content_switch(span)
            if switch is not None:
                key = (switch.instrumentation, switch.how)
                self.content_off[key] = self.content_off.get(key, 0) + 1

    @staticmethod
    def _without_content(kind: Kind, op: _Op) -> bool:
        """A span whose instrumentation left its content out: a model call without its
        messages or its reply, another known step with neither (a transport or unknown span,
        ``other``, carries none to begin with)."""
        if kind == "generation":
            return not op.reads or not op.writes
        return kind != "other" and not op.reads and not op.writes

    # -- framework data flow (frameworks.py) -----------------------------------------------

    def _inputs(self, span: Span) -> list[Io]:
        """The span's input texts; the outermost step of a framework (a chain no framework span
        encloses) was given the conversation's message or question: each string it was given
        is a message of its own (role user)."""
        found = span_inputs(span)
        parent = self.span_of.get((span.trace_id, span.parent_id or ""))
        if not is_chain(span.attributes) or (
            parent is not None and is_framework_step(parent.attributes)
        ):
            return found
        given = ("input", "traceloop.input.0")
        root = [
            Io(f"{io.slot}.{i}", "user", text)
            for io in found
            if io.slot in given
            for i, text in enumerate(root_inputs(io.text))
        ]
        return root + [io for io in found if io.slot not in given]

    def _carried(self, var: _Var, span: Span, before_ns: int) -> list[_Var]:
        """The earlier variables a new text carries (each of its JSON parts came from the
        latest value holding it: what a ``RunnableParallel``'s branches wrote, the documents a
        retriever output) or unwraps (it is a part of theirs: the documents list inside a
        retriever's ``{"documents": [...]}``, a message of a prompt template's output); never
        one of the span's own."""
        own = f"{span.span_id}:"
        found = [
            self._holder(part, before_ns, own)
            for part in parts(var.value or "")
            if says_where_from(part)
        ]
        found.append(self._holder(same_value(var.value or ""), before_ns, own, exact=False))
        unique = {v.id: v for v in found if v is not None}
        return list(unique.values())

    def _embedded_in(self, var: _Var, span: Span) -> list[_Var]:
        """The earlier step outputs a model call's new prompt holds verbatim."""
        own = f"{span.span_id}:"
        texts = self.embedded.found_in(var.value or "")
        found = [self._holder(text, span.start_ns, own) for text in texts]
        return list({v.id: v for v in found if v is not None and v.id in self.written}.values())

    def _holder(self, text: str, before_ns: int, own: str, exact: bool = True) -> _Var | None:
        """The latest variable before ``before_ns`` (none of the span's own) holding ``text``
        as a part, or (``exact``) as its whole text."""
        candidates = [*self.part_of.get(text, ()), *(self.by_text.get(text, ()) if exact else ())]
        earlier = [
            v for v in candidates if v.created_ns <= before_ns and not v.name.startswith(own)
        ]
        if not earlier and exact:
            return self._prior_with_text(text)
        # a step's output (or a message) says where a value came from; another step's input
        # only repeats it
        return max(
            earlier,
            key=lambda v: (v.id in self.written or v.category == "message", v.created_ns, v.seq),
            default=None,
        )

    @staticmethod
    def _passes_on(span: Span, kind: Kind) -> bool:
        return kind not in ("generation", "judge") and is_framework_step(span.attributes)

    def _descendants(self, span: Span) -> list[_Op]:
        found, stack = [], list(self.children.get((span.trace_id, span.span_id), ()))
        while stack:
            child = stack.pop()
            found.append(self.op_of[(child.trace_id, child.span_id)])
            stack.extend(self.children.get((child.trace_id, child.span_id), ()))
        return found

    def _fold_chains(self) -> None:
        """A framework step's (a chain's, a wrapping model call's) steps are its child spans,
        read after it (spans are taken in start order): a value it outputs that a step inside
        it wrote (a sequence's last step's output, the inner model call's reply) is that
        step's variable, not a copy; a value it built of its steps' outputs
        (``RunnableParallel``'s dict) reads them."""
        same: dict[str, _Var] = {}  # the chain's copy -> the variable its step wrote
        for op in self.ops:
            if not is_framework_step(op.span.attributes):
                continue
            inner = self._descendants(op.span)
            if not inner:
                continue
            written = {self._var(v).value: self._var(v) for o in inner for v in o.writes}
            for var_id in list(op.writes):
                var = self._var(var_id)
                if var.value in written and written[var.value].id != var_id:
                    same[var_id] = written[var.value]
                    del op.writes[var_id]
                    op.edges = [e for e in op.edges if e[1] != var_id]
                    continue
                for carried in self._carried(var, op.span, op.span.end_ns):
                    if carried.id not in op.reads:
                        op.reads[carried.id] = None
                        op.edges.append((carried.id, var_id))
            if op.kind == "generation" and not op.writes:
                op.kind = "other"  # a wrapper: the model call inside it answered
        if same:
            self._replace(same)

    def _replace(self, same: dict[str, _Var]) -> None:
        """Every use of a variable in ``same`` becomes a use of the variable it maps to."""

        def to(var_id: str) -> str:
            while var_id in same:
                var_id = same[var_id].id
            return var_id

        for op in self.ops:
            op.reads = dict.fromkeys(to(v) for v in op.reads)
            op.writes = dict.fromkeys(to(v) for v in op.writes)
            op.edges = [(to(a), to(b)) for a, b in op.edges if to(a) != to(b)]
            op.answers = [to(v) for v in op.answers]
        gone = set(same)
        self.variables = [v for v in self.variables if v.id not in gone]
        for table in (self.by_text, self.part_of):
            for key, held in table.items():
                table[key] = [v for v in held if v.id not in gone]

    def _deciding_generations(self) -> None:
        """A model call whose output decided an update or a deletion (a memory span took its
        record from it, possibly through a parser step) is that update's or deletion's cause:
        it gets the memory operation's kind."""
        writer = {v: o for o in self.ops for v in o.writes}
        for op in self.ops:
            if op.kind not in ("update", "deletion") or self._memory_span(op.span) is None:
                continue
            for var_id in op.reads:
                source = self._nearest_generation(var_id, writer)
                if source is not None:
                    # the decision is the change: the model call did what the span applied
                    source.kind = op.kind
                    source.reads.update((r, None) for r in op.reads if r != var_id)
                    source.writes.update(op.writes)
                    source.edges.extend(op.edges)
                    op.writes.clear()
                    op.edges.clear()
                    break

    @staticmethod
    def _nearest_generation(var_id: str, writer: dict[str, _Op]) -> _Op | None:
        """The model call nearest upstream of a variable, through at most a few steps (a
        parser, a chain)."""
        frontier = [var_id]
        for _ in range(4):
            ops = [writer[v] for v in frontier if v in writer]
            generation = next((o for o in ops if o.kind == "generation"), None)
            if generation is not None or not ops:
                return generation
            frontier = [r for o in ops for r in o.reads]
        return None

    def _stored_by_content(
        self, span: Span, found: list[tuple[str, str | None]]
    ) -> list[tuple[str, str | None]]:
        """Retrieved documents as the stored documents holding their text: those without an
        id, and those whose id names no stored document (a framework's node id, the store's
        record id without the store's scope)."""
        by_value = {
            var.value: name
            for name, var in self.documents.items()
            if name not in self.deleted and var.value
        }

        def holder(content: str | None) -> str | None:
            """The live document holding ``content`` (in an earlier request's memories when
            none of these spans' documents does)."""
            if not content:
                return None
            if content not in by_value:
                stored = self.prior.live_document_with_text(content)
                if stored is None:
                    return None
                by_value[content] = stored.name
                self._document(stored.name)
            return by_value[content]

        linked = []
        for doc_id, content in found:
            named = self._document(doc_id) is not None
            stored = None if named else holder(content)
            linked.append((stored, content) if stored is not None else (doc_id, content))
        contents = unnamed_documents(span.attributes, span.indexed("retrieval.documents"))
        return linked + [(name, c) for c in contents if (name := holder(c)) is not None]

    def _deciders(self, memory: MemorySpan, span: Span) -> list[_Var]:
        """The values a memory span's records were taken from: a record's content or id that
        is (a part of) an earlier variable (a model's decision ``{"event": "UPDATE", "id":
        ..., "text": ...}``) makes the model call that decided it the write's cause."""
        found: list[_Var] = []
        for record in memory.records:
            for text in (record.content, record.id):
                holder = self._holder(text, span.start_ns, f"{span.span_id}:") if text else None
                if holder is not None:
                    found.append(holder)
                    break
        return list({v.id: v for v in found}.values())

    @staticmethod
    def _outputs(span: Span, skip_output_value: bool) -> list[Io]:
        """The span's output texts; OpenInference's ``output.value`` last, unless it holds the
        documents the span wrote (then they are read as documents, not as a text)."""
        outputs = span_outputs(span)
        value = span.attributes.get("output.value")
        text = as_text(value)
        if text and not skip_output_value and all(io.text != text for io in outputs):
            outputs.append(Io("output", None, text))
        return outputs

    def _memory_records(
        self, op: _Op, memory: MemorySpan, found: list[tuple[str, str | None]]
    ) -> list[tuple[str, str | None, str]]:
        """A GenAI memory span's records: those a search returned, and those with event NONE
        (seen, left unchanged), are read (added to ``found``); the rest are written with their
        event. Records are named by their id, prefixed by the store id when the span names one
        (the store is the scope)."""
        prefix = f"{memory.store}/" if memory.store else ""
        if memory.store:
            op.metadata["gen_ai.memory.store.id"] = memory.store
        search = memory.operation == "search_memory"
        read = [r for r in memory.records if search or r.event == "NONE"]
        found += [(prefix + r.id, r.content) for r in read]
        scores = {prefix + r.id: r.score for r in read if r.score is not None}
        if scores:
            op.metadata["scores"] = scores
        return [(prefix + r.id, r.content, r.event) for r in memory.records if r not in read]

    def _read_document(self, doc_id: str, content: str | None, span: Span) -> _Var:
        latest = self._document(doc_id)
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
        latest = self._document(doc_id)
        if event == "NONE":
            return
        if event == "DELETE":
            if latest is None:  # deleting a document never seen: it existed before the file
                latest = self._read_document(doc_id, content, span)
            if self.marker is None:
                earlier = self.prior.variable(_MARKER_ID)  # an earlier request's deletions'
                self.marker = self._from_prior(earlier) if earlier is not None else None
            if self.marker is None:
                self.marker = self._new_var(
                    _MARKER_NAME,
                    "DELETED",
                    "marker",
                    span.end_ns,
                    span.trace_id,
                    class_name="delete_marker",
                )
            op.reads[latest.id] = None
            op.writes[self.marker.id] = None
            op.edges.append((latest.id, self.marker.id))
            self.deleted.add(doc_id)
            return
        if latest is not None and latest.value == content:
            return
        version = latest.version + 1 if latest is not None else 1
        var = self._new_var(doc_id, content, "memory_entry", span.end_ns, span.trace_id, version)
        self.documents[doc_id] = var
        self.deleted.discard(doc_id)
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
        query = self._existing(question, op.span.end_ns)
        if query is None:
            # the question is in no variable as such (inside a prompt, say): it is what the
            # case's span was asked, and what happened inside that span answered it
            query = self._new_var(
                f"{op.span.span_id}:question", question, None, op.span.start_ns, op.span.trace_id
            )
            op.reads[query.id] = None
        prediction_text = text("prediction")
        prediction = (
            self._produced_inside(prediction_text, op.span)
            or self._existing(prediction_text, op.span.end_ns)
            if prediction_text
            else None
        )
        if prediction is None:
            prediction = self._answer_of(query) or self._answer_inside(op)
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
        sessions = {
            str(span.attributes["session.id"])
            for span in self.spans
            if span.attributes.get("session.id") is not None
        }
        matched = [q for q in self.labels.questions if q.conversation in sessions]
        if not matched:
            raise InputError(
                self.labels.source,
                None,
                "no conversation's sample_id matches a span's session.id attribute "
                f"(spans: {sorted(sessions)[:5] or 'none'})",
            )
        by_query = {case.query: case for case in cases.values()}
        for question in matched:
            query = self._first_with_text(question.question)
            if query is None:
                continue  # not asked in this trace (a subset run)
            evidence, missing = self._evidence(list(question.evidence))
            missing += question.missing_evidence
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
                id=question.case_id,
                query=query.id,
                query_text=question.question,
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
        """The answer of the earliest generation op reading the query that answered (an agent's
        first generation may only call a tool)."""
        return self._answer([op for op in self.ops if query.id in op.reads], last=False)

    def _answer(self, ops: list[_Op], last: bool) -> _Var | None:
        """The first answer of the earliest (``last``: latest to end) of the generations among
        ``ops`` that wrote one, else the first output of such a generation that wrote any."""
        generations = [op for op in ops if op.kind == "generation" and op.writes]
        answered = [op for op in generations if op.answers] or generations
        if not answered:
            return None
        op = max(answered, key=lambda op: (op.span.end_ns, op.seq)) if last else answered[0]
        return self._var(op.answers[0] if op.answers else next(iter(op.writes)))

    def _answer_inside(self, case_op: _Op) -> _Var | None:
        """The answer of the last generation to end inside the case's span (the span itself or
        a descendant): the answer of an app whose prompt wraps the question."""
        inside: list[_Op] = []
        stack = [case_op.span]
        while stack:
            span = stack.pop()
            stack.extend(self.children.get((span.trace_id, span.span_id), ()))
            inside.append(self.op_of[(span.trace_id, span.span_id)])
        return self._answer(inside, last=True)

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
            if holder is None:  # said in an earlier request of the timeline, as a message
                found_before = self.prior.message_with_text(text)
                holder = self._from_prior(found_before) if found_before is not None else None
            if holder is None:
                missing.append(text)
            elif holder.id not in found:
                found.append(holder.id)
        return found, missing

    def _var(self, var_id: str) -> _Var:
        return self.by_id[var_id]

    # -- records ----------------------------------------------------------------------------

    def _trace(self) -> TraceRecord:
        first = self.spans[0]
        resource = first.resource
        service = resource.get("service.name")
        return TraceRecord(
            type="trace",
            format_version=2,
            id=otlp_trace_id(self.stem),
            system=service if isinstance(service, str) else None,
            created_at=span_timestamp(first.start_ns),
            metadata={
                "source_format": "otlp",
                "otel_trace_ids": sorted({s.trace_id for s in self.spans}),
                "resource": _jsonable(resource),
                # what the conventions of otlp_conventions.py could not read (load summary)
                UNREAD_CONTENT_SPANS: len(self.unread),
                "unread_content_keys": sorted({key for keys in self.unread for key in keys})[:10],
                CONTENT_FREE_SPANS: len(self.content_free),
                CONTENT_OFF: [
                    {"instrumentation": name, "spans": count, "how": how}
                    for (name, how), count in sorted(self.content_off.items())
                ],
                "content_free_names": sorted(set(self.content_free))[:10],
                UNKNOWN_KIND_SPANS: len(self.unknown_kind),
                "unknown_kind_names": sorted(set(self.unknown_kind))[:10],
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
                    created_at=span_timestamp(root.start_ns),
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
            created_at=span_timestamp(var.created_ns),
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
                    created_at=span_timestamp(span.start_ns),
                    seq=op.seq,
                    reads=list(op.reads),
                    writes=list(op.writes),
                    metadata={**_op_metadata(span), **op.metadata},
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


def _op_metadata(span: Span) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "otel_trace_id": span.trace_id,
        "otel_status": span.status,
        **({"otel_status_message": span.status_message} if span.status_message else {}),
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


def span_timestamp(nanos: int) -> str:
    """An OTLP time (nanoseconds since the epoch) as the records' ISO 8601 text (microseconds)."""
    seconds, rest = divmod(nanos, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
    return moment.isoformat().replace("+00:00", "Z")
