"""Timelines without a database: which requests group together (each convention's ids, --group-by,
no id), the timeline's trace id, and the identity rules of an append (a memory by its record id
or its content, an input text with no producer is one variable, outputs with equal texts stay
apart, a span re-sent is taken once), with the timeline's earlier state given as a Prior."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from otlp_spans import request, span

from memtrace.loaders.append import timelines
from memtrace.loaders.models import OperationRecord, VariableRecord
from memtrace.loaders.otlp.prior import PriorVariable
from memtrace.loaders.otlp.reader import otlp_records
from memtrace.loaders.otlp.spans import Span, document_spans
from memtrace.loaders.otlp.timelines import (
    DEFAULT_GROUPING,
    group_by,
    request_group,
    request_ids,
    timeline_trace_id,
)


def spans_of(*raw: dict[str, Any], trace: str = "a" * 32) -> list[Span]:
    return document_spans(request(*[{**s, "traceId": trace} for s in raw]), "timelines.json")


@pytest.mark.parametrize(
    ("attributes", "kind", "value"),
    [
        ({"user.id": "ana", "session.id": "s-1", "gen_ai.conversation.id": "c-1"}, "user", "ana"),
        ({"langfuse.user.id": "ana", "langfuse.session.id": "s-1"}, "user", "ana"),
        ({"enduser.id": "ana"}, "user", "ana"),
        ({"user_id": "ana"}, "user", "ana"),  # Mem0's scope on a memory call
        ({"gen_ai.conversation.id": "c-1", "session.id": "s-1"}, "conversation", "c-1"),
        ({"session.id": "s-1"}, "session", "s-1"),
        ({"langfuse.session.id": "s-1"}, "session", "s-1"),
        ({"session.id": 42}, "session", "42"),
    ],
)
def test_each_conventions_ids_group_in_precedence_order(
    attributes: dict[str, Any], kind: str, value: str
) -> None:
    spans = spans_of(span(1, "POST /message", {}), span(2, "chat", attributes, parent=1))
    group = request_group(spans, DEFAULT_GROUPING)
    assert group is not None and (group.kind, group.value) == (kind, value)
    assert group.trace_id == f"timeline:{kind}:{value}"


def test_a_request_without_an_id_has_no_group_and_group_by_reads_one_attribute() -> None:
    spans = spans_of(span(1, "POST /ask", {"tenant.id": "acme", "http.route": "/ask"}))
    assert request_group(spans, DEFAULT_GROUPING) is None
    group = request_group(spans, group_by("tenant.id"))
    assert group is not None and group.trace_id == "timeline:tenant.id:acme"
    assert group.properties() == {
        "timeline_kind": "tenant.id",
        "timeline_attribute": "tenant.id",
        "timeline_value": "acme",
    }
    # an empty id is none
    assert request_group(spans_of(span(1, "x", {"user.id": " "})), DEFAULT_GROUPING) is None


def test_the_root_spans_id_wins_and_every_kind_is_a_property() -> None:
    spans = spans_of(
        span(1, "POST /ask", {"user.id": "ana", "session.id": "s-1"}),
        span(2, "search", {"user_id": "bob", "gen_ai.conversation.id": "c-9"}, parent=1),
    )
    group = request_group(spans, DEFAULT_GROUPING)
    assert group is not None and group.value == "ana"
    assert request_ids(spans) == {"user_id": "ana", "conversation_id": "c-9", "session_id": "s-1"}


def test_a_timeline_id_is_stable_and_plain() -> None:
    assert timeline_trace_id("user", "ana") == timeline_trace_id("user", "ana")
    odd = timeline_trace_id("user", "Ana María <ana@example.org>")
    assert odd.startswith("timeline:user:sha256-") and len(odd) == len("timeline:user:sha256-") + 32
    assert odd == timeline_trace_id("user", "Ana María <ana@example.org>")
    assert timeline_trace_id("user", "x" * 129) != timeline_trace_id("user", "x" * 130)


def test_requests_group_into_timelines_in_start_order_each_span_once() -> None:
    first = spans_of(span(1, "POST /message", {"user.id": "ana"}), trace="a" * 32)
    second = spans_of(span(5, "POST /ask", {"user.id": "ana"}), trace="b" * 32)
    other = spans_of(span(3, "POST /ask", {"user.id": "bob"}), trace="c" * 32)
    lone = spans_of(span(4, "GET /health", {}), trace="d" * 32)
    pairs = [("f1", s) for s in [*second, *first, *other, *lone, *first]]  # first re-sent
    found = {t.trace_id: t for t in timelines(pairs, DEFAULT_GROUPING, {}, {})}
    assert sorted(found) == ["otlp-" + "d" * 32, "timeline:user:ana", "timeline:user:bob"]
    ana = found["timeline:user:ana"]
    assert [r.trace_id for r in ana.requests] == ["a" * 32, "b" * 32]
    assert [len(r.spans) for r in ana.requests] == [1, 1]
    assert ana.props["user_id"] == "ana" and ana.props["source"] == "otlp"


@dataclass
class FakePrior:
    """A timeline's earlier state, as the graph would answer."""

    variables: list[PriorVariable] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)

    def latest_with_text(self, text: str) -> PriorVariable | None:
        return next((v for v in reversed(self.variables) if v.value == text), None)

    def document(self, name: str) -> tuple[PriorVariable | None, bool]:
        found = [v for v in self.variables if v.name == name and v.category == "memory_entry"]
        return (found[-1], name in self.deleted) if found else (None, False)

    def live_document_with_text(self, text: str) -> PriorVariable | None:
        return next(
            (
                v
                for v in reversed(self.variables)
                if v.category == "memory_entry" and v.value == text and v.name not in self.deleted
            ),
            None,
        )

    def documents_in_store(self, prefix: str) -> list[str]:
        return [v.name for v in self.variables if v.name.startswith(prefix)]

    def message_with_text(self, text: str) -> PriorVariable | None:
        return next(
            (v for v in self.variables if v.category == "message" and v.value == text), None
        )

    def variable(self, var_id: str) -> PriorVariable | None:
        return next((v for v in self.variables if v.id == var_id), None)


SYSTEM = "Answer from the memories."
NOTE = PriorVariable("notes/m-1@1", "notes/m-1", 1, "The key is under the pot.", "memory_entry")
PROMPT = PriorVariable("0000000000000009:gen_ai.input.0@1", "x", 1, SYSTEM, "prompt")
ANSWER = PriorVariable(
    "0000000000000008:gen_ai.output.0@1", "y", 1, "I don't know.", "llm_response"
)
SAID = PriorVariable("0000000000000007:gen_ai.input.1@1", "z", 1, "I moved to Lisbon.", "message")


def appended(prior: FakePrior, *raw: dict[str, Any]) -> dict[str, Any]:
    records = otlp_records(spans_of(*raw), "r.json", "t", None, prior)
    return {r.id: r for _, r in records if isinstance(r, OperationRecord | VariableRecord)}


def chat(number: int, user: str, reply: str, parent: int = 1) -> dict[str, Any]:
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
        {"role": "user", "parts": [{"type": "text", "content": user}]},
    ]
    output = [{"role": "assistant", "parts": [{"type": "text", "content": reply}]}]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps(output),
    }
    return span(number, "chat", attributes, parent=parent)


def test_a_memory_written_earlier_is_one_variable_by_its_record_id() -> None:
    records = appended(
        FakePrior([NOTE]),
        span(1, "POST /message", {}),
        span(2, "update_memory notes", {
            "gen_ai.operation.name": "update_memory", "gen_ai.memory.store.id": "notes",
            "gen_ai.memory.records": json.dumps([{"id": "m-1", "content": "The key is gone."}]),
        }, parent=1),
    )  # fmt: skip
    update = records["0000000000000002"]
    assert NOTE.id in update.reads and "notes/m-1@2" in update.writes
    assert records["notes/m-1@2"].version == 2 and NOTE.id not in records  # never re-written
    deleted = appended(
        FakePrior([NOTE]),
        span(1, "POST /message", {}),
        span(2, "delete_memory notes", {
            "gen_ai.operation.name": "delete_memory", "gen_ai.memory.store.id": "notes",
            "gen_ai.memory.records": json.dumps([{"id": "m-1"}]),
        }, parent=1),
    )  # fmt: skip
    assert NOTE.id in deleted["0000000000000002"].reads


def test_a_memory_found_without_an_id_is_the_earlier_memory_holding_its_text() -> None:
    records = appended(
        FakePrior([NOTE]),
        span(1, "POST /ask", {}),
        span(2, "retrieve", {
            "openinference.span.kind": "RETRIEVER", "input.value": "Where is the key?",
            "retrieval.documents.0.document.content": NOTE.value,
        }, parent=1),
    )  # fmt: skip
    assert NOTE.id in records["0000000000000002"].reads


def test_an_input_text_is_the_earlier_variable_but_equal_outputs_stay_apart() -> None:
    records = appended(
        FakePrior([PROMPT, ANSWER, SAID]),
        span(1, "POST /ask", {}),
        chat(2, "Where do I live?", ANSWER.value or ""),
    )
    call = records["0000000000000002"]
    assert PROMPT.id in call.reads  # the system prompt sent on every request: one variable
    assert PROMPT.id not in records
    (written,) = call.writes
    assert written != ANSWER.id and records[written].value == ANSWER.value  # its own answer


def test_evidence_said_in_an_earlier_request_is_found_there() -> None:
    """Also when this request's prompt relays a memory holding the words: the one-trace load
    binds the user's own, earlier message, and so does the append."""
    raw = span(1, "POST /ask", {
        "memtrace.case.id": "q-1", "memtrace.case.question": "Where do I live?",
        "memtrace.case.evidence": [SAID.value], "memtrace.case.judge_score": 0.0,
    })  # fmt: skip
    for user in ("Where do I live?", f"Notes: [m-1] {SAID.value}\nWhere do I live?"):
        records = otlp_records(
            spans_of(raw, chat(2, user, "Porto.")), "r.json", "t", None, FakePrior([SAID])
        )
        (case,) = [r for _, r in records if r.type == "case"]
        assert case.evidence == [SAID.id] and case.missing_evidence == []


def codes(findings: list[Any]) -> set[str]:
    return {finding.code for finding in findings}


def test_the_checks_fit_a_timelines_shape() -> None:
    from memtrace.loaders.append import timeline_findings
    from memtrace.loaders.checks import check_records

    message = otlp_records(
        spans_of(span(1, "POST /message", {}), chat(2, "I moved to Lisbon.", "Noted.")),
        "r.json", "t", None,
    )  # fmt: skip
    whole = check_records(record for _, record in message)
    assert "no-cases" in codes(whole)  # a trace of its own without a question: worth saying
    assert "no-cases" not in codes(timeline_findings(message))  # a timeline's message request
    prior = FakePrior([NOTE])
    asked = span(1, "POST /ask", {
        "memtrace.case.id": "q-1", "memtrace.case.question": "Where is the key?",
        "memtrace.case.golden_answers": ["pot"], "memtrace.case.judge_score": 0.0,
    })  # fmt: skip
    search = span(2, "retrieve", {
        "openinference.span.kind": "RETRIEVER", "input.value": "Where is the key?",
        "retrieval.documents.0.document.content": NOTE.value,
    }, parent=1)  # fmt: skip
    question = otlp_records(
        spans_of(asked, search, chat(3, "Where is the key?", "No idea.")), "r.json", "t", None,
        prior,
    )  # fmt: skip
    # the search read a memory an earlier request stored: a memory, not "no memory store"
    assert "no-memories" not in codes(timeline_findings(question, [NOTE]))
    assert "no-memories" in codes(timeline_findings(question))


def test_a_dry_run_groups_files_into_timelines_and_refuses_what_is_not_otlp(
    tmp_path: Path,
) -> None:
    from memtrace.errors import InputError
    from memtrace.loaders.append import append_files
    from memtrace.loaders.load import LoadOptions

    options = LoadOptions(grouping=DEFAULT_GROUPING, dry_run=True)
    for n, (trace, user) in enumerate([("a", "ana"), ("b", "bob"), ("c", "ana")]):
        raw = request(span(n + 1, "POST /message", {"user.id": user}))
        raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = trace * 32
        (tmp_path / f"r{n}.json").write_text(json.dumps(raw))
    summary = append_files(None, [str(tmp_path)], options)
    assert [(f.trace_id, f.requests) for f in summary.files] == [
        ("timeline:user:ana", 2),
        ("timeline:user:bob", 1),
    ]
    native = Path(__file__).parents[1] / "data" / "native"
    with pytest.raises(InputError, match="timelines are made of OTLP requests"):
        append_files(None, [str(next(native.glob("*.jsonl")))], options)
    with pytest.raises(InputError, match="--labels and --trace-id"):
        append_files(None, [str(tmp_path)], LoadOptions(grouping=DEFAULT_GROUPING, trace_id="x"))
