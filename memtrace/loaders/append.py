"""Appending requests to a timeline: a web service's requests of one memory as one trace.

Each request (one OTel trace) is converted by the OTLP reader with what the timeline already
holds as its ``Prior`` (otlp/prior.py), asked of the graph through indexes only: the latest
variable holding an exact text (``Variable.text_key``, the digest of its value), a memory's
latest version by name, the live memory holding a text, the message holding an evidence text.
So an append costs what the request holds, not what the timeline holds. Its nodes get seq
numbers after the timeline's (``Trace.next_seq``), and everything it writes, nodes and
relationships to earlier requests' variables and operations alike, commits in one transaction:
a request is in the timeline whole or not at all. A request whose spans the timeline already
holds (by span id) is not appended again; spans of it that are new are appended on their own.

Appends to one timeline must not run from two processes at once (the receiver holds a lease on
the timeline while it appends; docs/collect.md). The trace a request without a group id forms,
``otlp-<OTel trace id>``, is appended the same way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from memtrace.admin import init_schema
from memtrace.db import Database
from memtrace.errors import InputError
from memtrace.loaders.checks import Finding, TraceChecker
from memtrace.loaders.formats import detect
from memtrace.loaders.index import NodeRecord
from memtrace.loaders.load import FileResult, LoadOptions, LoadSummary, expand_paths
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    EdgeRecord,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
    parse_timestamp,
)
from memtrace.loaders.otlp.conventions import span_inputs, span_outputs
from memtrace.loaders.otlp.conventions.shapes import as_text
from memtrace.loaders.otlp.prior import text_key
from memtrace.loaders.otlp.reader import (
    CONTENT_FREE_SPANS,
    UNKNOWN_KIND_SPANS,
    UNREAD_CONTENT_SPANS,
    otlp_records,
    otlp_trace_id,
    span_timestamp,
)
from memtrace.loaders.otlp.spans import Span, read_spans
from memtrace.loaders.otlp.timelines import Grouping, by_request, request_group, request_ids
from memtrace.loaders.rows import node_rows, system_name
from memtrace.loaders.writer import (
    AppendWrite,
    GraphPrior,
    append_state,
    known_cases,
    write_appends,
)
from memtrace.taxonomy import dataset_name


@dataclass(frozen=True)
class Request:
    """One request: its OTel trace id, its spans, and the user / conversation / session ids
    it carries (``user_id``, ... as on the graph)."""

    trace_id: str
    spans: list[Span]
    ids: dict[str, str] = field(default_factory=dict)


@dataclass
class AppendResult:
    """What appends to one timeline wrote (summed over them)."""

    trace_id: str
    requests: int = 0
    already_there: int = 0  # requests whose every span the timeline held already
    sessions: int = 0
    operations: int = 0
    variables: int = 0
    edges: int = 0
    cases: int = 0
    failed_cases: int = 0
    labels: int = 0
    unread_content_spans: int = 0
    unknown_kind_spans: int = 0
    content_free_spans: int = 0
    unread_content_keys: list[str] = field(default_factory=list)
    unknown_kind_names: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    failed_case_ids: list[str] = field(default_factory=list)  # the failed cases appended

    def add(self, other: AppendResult) -> None:
        for counted in fields(self):
            if counted.type == "int":  # the counts (annotations are text here)
                setattr(
                    self, counted.name, getattr(self, counted.name) + getattr(other, counted.name)
                )
        self.unread_content_keys = sorted({*self.unread_content_keys, *other.unread_content_keys})
        self.unknown_kind_names = sorted({*self.unknown_kind_names, *other.unknown_kind_names})
        self.findings = merge_findings([*self.findings, *other.findings])
        self.failed_case_ids += other.failed_case_ids


def append_requests(
    db: Database,
    trace_id: str,
    props: dict[str, Any],
    requests: Sequence[Request],
    source: str,
) -> AppendResult:
    """Append ``requests`` (one timeline's, in order) to trace ``trace_id`` in one transaction;
    ``props`` are the trace's properties if this append creates it."""
    result, write = prepare_append(db, trace_id, props, requests, source)
    if write is not None:
        write_appends(db, [write])
    return result


def prepare_append(
    db: Database,
    trace_id: str,
    props: dict[str, Any],
    requests: Sequence[Request],
    source: str,
) -> tuple[AppendResult, AppendWrite | None]:
    """``append_requests`` up to its write: what the append will have written, and the write
    (None when the timeline holds every span already). Appends to different timelines may be
    written together (``write_appends``); two appends to one timeline may not."""
    result = AppendResult(trace_id)
    span_ids = [span.span_id for request in requests for span in request.spans]
    state = append_state(db, trace_id, span_ids)
    if state.exists and state.next_seq is None:
        raise InputError(
            source,
            None,
            f"trace {trace_id!r} exists and was loaded whole, not appended to: requests cannot "
            f"be appended to it (`memtrace db delete --trace {trace_id}` first)",
        )
    known = state.known
    new: list[Request] = []
    for request in requests:
        spans = [span for span in request.spans if span.span_id not in known]
        if spans:
            new.append(Request(request.trace_id, spans, request.ids))
        else:
            result.already_there += 1
    if not new:
        return result, None
    prior = GraphPrior(db, trace_id)
    spans = [span for request in new for span in request.spans]
    prior.prefetch(list(_texts(spans)))
    records = otlp_records(spans, source, trace_id, None, prior)
    cases = [record for _, record in records if isinstance(record, CaseRecord)]
    clash = sorted(known_cases(db, trace_id, [c.id for c in cases])) if cases else []
    if clash:
        raise InputError(
            source,
            None,
            f"case {clash[0]!r} is already in timeline {trace_id!r}: each question's "
            "memtrace.case.id must be unique within its timeline",
        )
    plan = _plan(records, new, state.next_seq or 0)
    write = AppendWrite(
        trace_id,
        props,
        plan.counts,
        plan.next_seq,
        {
            "load/append_latest_texts": [{"key": key} for key in plan.latest_texts],
            "load/append_nodes": plan.nodes,
            "load/append_versions": plan.versions,
            "load/append_operation_links": plan.ops,
            "load/append_flows": plan.flows,
            "load/append_case_links": plan.cases,
        },
    )
    trace = next(record for _, record in records if isinstance(record, TraceRecord))
    result.requests = len(new)
    for name, count in plan.counts.items():
        if hasattr(result, name.removeprefix("n_")):
            setattr(result, name.removeprefix("n_"), count)
    result.content_free_spans = int(trace.metadata.get(CONTENT_FREE_SPANS, 0))
    result.unread_content_keys = list(trace.metadata.get("unread_content_keys", []))
    result.unknown_kind_names = list(trace.metadata.get("unknown_kind_names", []))
    result.findings = timeline_findings(records, prior.seen.values())
    result.failed_case_ids = [case.id for case in cases if case.is_failed is True]
    return result, write


@dataclass
class Timeline:
    """The requests of one timeline (or of a request without a group id: its own trace)."""

    trace_id: str
    props: dict[str, Any]  # the trace's properties when an append creates it
    requests: list[Request] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the files its requests came from


def timelines(
    spans: Sequence[tuple[str, Span]],
    grouping: Grouping,
    overrides: dict[str, str | None],
    spellings: Any,
) -> list[Timeline]:
    """Requests (spans by OTel trace, each span once by span id) grouped into their timelines,
    each timeline's requests in start order; ``spans`` are (source, span) pairs."""
    source_of: dict[str, str] = {}
    unique: dict[tuple[str, str], Span] = {}
    for source, span in spans:
        unique.setdefault((span.trace_id, span.span_id), span)
        source_of.setdefault(span.trace_id, source)
    found: dict[str, Timeline] = {}
    requests = by_request(unique.values())
    for otel_id in sorted(requests, key=lambda t: min(s.start_ns for s in requests[t])):
        request_spans = requests[otel_id]
        group = request_group(request_spans, grouping)
        trace_id = group.trace_id if group is not None else otlp_trace_id(otel_id)
        timeline = found.get(trace_id)
        if timeline is None:
            first = min(request_spans, key=lambda s: s.start_ns)
            service = first.resource.get("service.name")
            created = span_timestamp(first.start_ns)
            props = {
                "system": system_name(
                    overrides.get("system") or (service if isinstance(service, str) else None),
                    spellings,
                ),
                "dataset": dataset_name(overrides.get("dataset")),
                "source": "otlp",
                "created_at": created,
                "ts": parse_timestamp(created),
                **(group.properties() if group is not None else {}),
            }
            timeline = found[trace_id] = Timeline(
                trace_id, {k: v for k, v in props.items() if v is not None}
            )
        timeline.requests.append(Request(otel_id, request_spans, request_ids(request_spans)))
        if source_of[otel_id] not in timeline.sources:
            timeline.sources.append(source_of[otel_id])
    return list(found.values())


def append_files(db: Database | None, patterns: list[str], options: LoadOptions) -> LoadSummary:
    """``memtrace load --timelines`` / ``--group-by``: every OTLP file is read and each
    timeline's requests converted first (a bad file or span writes nothing), then (unless
    ``dry_run``) each timeline's requests are appended, ``requests_per_append`` per
    transaction."""
    started = time.perf_counter()
    grouping = options.grouping
    if grouping is None:
        raise ValueError("append_files needs options.grouping")
    if options.labels is not None or options.trace_id is not None:
        raise InputError(
            ", ".join(patterns),
            None,
            "--labels and --trace-id are for whole loads: timelines are named by their "
            "group ids and take their cases from memtrace.case.* span attributes",
        )
    spans: list[tuple[str, Span]] = []
    for file in expand_paths(patterns):
        fmt = options.format or detect(file).format
        if fmt != "otlp":
            raise InputError(
                str(file), None, f"timelines are made of OTLP requests; this file is {fmt}"
            )
        spans += [(str(file), span) for span in read_spans(file)]
    found = timelines(
        spans,
        grouping,
        {"system": options.system, "dataset": options.dataset},
        options.system_spellings,
    )
    findings: dict[str, list[Finding]] = {}
    for timeline in found:  # every conversion's problems before anything is written
        records = otlp_records(
            [span for request in timeline.requests for span in request.spans],
            timeline.sources[0],
            timeline.trace_id,
            None,
        )
        findings[timeline.trace_id] = timeline_findings(records)
    summary = LoadSummary(dry_run=options.dry_run)
    if db is not None and not options.dry_run:
        init_schema(db)
    for timeline in found:
        timeline_started = time.perf_counter()
        result = AppendResult(timeline.trace_id)
        if db is not None and not options.dry_run:
            step = max(1, options.requests_per_append)
            for start in range(0, len(timeline.requests), step):
                chunk = timeline.requests[start : start + step]
                result.add(
                    append_requests(
                        db, timeline.trace_id, timeline.props, chunk, timeline.sources[0]
                    )
                )
        else:
            result.requests = len(timeline.requests)
        more = len(timeline.sources) - 1
        named = timeline.sources[0] + (f" (+{more} more file{'s' * (more > 1)})" if more else "")
        file_result = appended_result(result, named)
        file_result.findings = findings[timeline.trace_id]
        file_result.seconds = time.perf_counter() - timeline_started
        summary.files.append(file_result)
    summary.seconds = time.perf_counter() - started
    return summary


def appended_result(result: AppendResult, path: str) -> FileResult:
    """An append's counts as a load summary's entry (one per timeline)."""
    shared = {f.name for f in fields(FileResult)} & {f.name for f in fields(AppendResult)}
    return FileResult(path=path, format="otlp", **{name: getattr(result, name) for name in shared})


def timeline_findings(records: Sequence[tuple[str, AnyRecord]], earlier: Any = ()) -> list[Finding]:
    """What will degrade attribution, over a timeline's records (``earlier``: the variables of
    earlier requests they read): a request without a case is how a timeline's messages come,
    and a memory an earlier request stored is a memory."""
    checker = TraceChecker(timeline=True)
    for var in earlier:
        checker.observe_earlier(var.id, var.category)
    for _, record in records:
        checker.observe(record)
    return checker.findings()


def merge_findings(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per code: counts added, examples pooled (the first of them kept)."""
    merged: dict[str, Finding] = {}
    for finding in findings:
        known = merged.get(finding.code)
        if known is None:
            merged[finding.code] = finding
            continue
        examples = tuple(sorted({*known.examples, *finding.examples}))[: len(known.examples) or 3]
        merged[finding.code] = Finding(
            known.code,
            "error" if "error" in (known.level, finding.level) else "warning",
            known.count + finding.count,
            known.problem,
            known.fix,
            examples,
        )
    return sorted(merged.values(), key=lambda finding: finding.level != "error")


def _texts(spans: Sequence[Span]) -> Iterator[str]:
    """Every input and output text of the spans: what the conversion will look up."""
    for span in spans:
        for io in (*span_inputs(span), *span_outputs(span)):
            yield io.text
        output = as_text(span.attributes.get("output.value"))
        if output:
            yield output


@dataclass
class _Plan:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    versions: list[dict[str, Any]] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    flows: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    next_seq: int = 0
    latest_texts: list[str] = field(default_factory=list)  # text keys new variables hold


def _plan(
    records: Sequence[tuple[str, AnyRecord]], requests: Sequence[Request], base: int
) -> _Plan:
    """The rows of one append: its nodes with seq numbers after ``base`` (ranked as a whole
    load ranks them: start time, the reader's order, operations first, id), its links."""
    plan = _Plan()
    ids_of = {request.trace_id: request.ids for request in requests}
    ranked = sorted(
        (
            (
                parse_timestamp(r.created_at),
                r.seq or 0,
                0 if isinstance(r, OperationRecord) else 1,
                r.id,
            )
            for _, r in records
            if isinstance(r, OperationRecord | VariableRecord)
        )
    )
    seq_of = {key[3]: base + n for n, key in enumerate(ranked)}
    plan.next_seq = base + len(ranked)
    # per text, the new variable holding it last: the timeline's latest holder from now on
    latest: dict[str, str] = {}
    held = [(seq_of[r.id], r.value, r.id) for _, r in records if isinstance(r, VariableRecord)]
    for _, value, var_id in sorted(held):
        if value is not None:
            latest[text_key(value)] = var_id
    plan.latest_texts = list(latest)
    variable_session = {
        r.id: r.session for _, r in records if isinstance(r, VariableRecord) and r.session
    }
    counts = dict.fromkeys(
        (
            "n_requests",
            "n_sessions",
            "n_operations",
            "n_variables",
            "n_edges",
            "n_cases",
            "n_failed_cases",
            "n_labels",
            "unread_content_spans",
            "unknown_kind_spans",
        ),
        0,
    )
    counts["n_requests"] = len(requests)
    for _, record in records:
        match record:
            case TraceRecord():
                counts["unread_content_spans"] += int(record.metadata.get(UNREAD_CONTENT_SPANS, 0))
                counts["unknown_kind_spans"] += int(record.metadata.get(UNKNOWN_KIND_SPANS, 0))
            case SessionRecord():
                counts["n_sessions"] += 1
                extra = {"otel_trace_id": record.id, **ids_of.get(record.id, {})}
                plan.nodes.append(_node("Session", record, None, extra))
            case VariableRecord():
                counts["n_variables"] += 1
                extra = {"text_key": text_key(record.value)} if record.value is not None else {}
                if extra and latest.get(extra["text_key"]) == record.id:
                    extra["latest_text_key"] = extra["text_key"]
                plan.nodes.append(_node("Variable", record, seq_of[record.id], extra))
                if record.version > 1:
                    plan.versions.append(
                        {"id": record.id, "name": record.name, "version": record.version,
                         "class_name": record.class_name}
                    )  # fmt: skip
            case OperationRecord():
                counts["n_operations"] += 1
                plan.nodes.append(_node("Operation", record, seq_of[record.id], {}))
                plan.ops.append(
                    {"op": record.id, "session": record.session, "reads": list(record.reads),
                     "writes": list(record.writes)}
                )  # fmt: skip
            case EdgeRecord():
                counts["n_edges"] += 1
                plan.flows.append(
                    {"id": record.id, "op": record.op, "source": record.source,
                     "target": record.target, "category": record.category}
                )  # fmt: skip
            case CaseRecord():
                counts["n_cases"] += 1
                counts["n_failed_cases"] += record.is_failed is True
                counts["n_labels"] += len(record.labels)
                asked_in = variable_session.get(record.prediction or "") or variable_session.get(
                    record.query
                )
                plan.nodes.append(_node("Case", record, None, ids_of.get(asked_in or "", {})))
                plan.cases.append(
                    {
                        "id": record.id,
                        "query": record.query,
                        "prediction": record.prediction,
                        "evidence": list(dict.fromkeys(record.evidence)),
                        "labels": [
                            {"op": label.op_id, "props": {"error_type": label.error_type,
                             "reason": label.reason, "source": label.source}}
                            for label in record.labels
                        ],
                    }
                )  # fmt: skip
    plan.counts = counts
    return plan


def _node(label: str, record: AnyRecord, seq: int | None, extra: dict[str, Any]) -> dict[str, Any]:
    """A node row: the properties a whole load gives the record (rows.py), and ``extra``."""
    created_at = getattr(record, "created_at", None)
    ts = parse_timestamp(created_at) if isinstance(created_at, str) else None
    ((_, row),) = list(node_rows(NodeRecord(record, 0, ts, seq)))
    return {"label": label, "id": record.id, "props": {**row["props"], **extra}}
