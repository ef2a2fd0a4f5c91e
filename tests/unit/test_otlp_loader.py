"""Offline tests of the OTLP JSON importer: detection, validation messages, attribute mapping."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from otlp_spans import request, span, value

from memtrace.cli.load import locomo_labels
from memtrace.errors import InputError
from memtrace.loaders.formats import detect
from memtrace.loaders.index import build_index
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.loaders.models import (
    AnyRecord,
    CaseRecord,
    OperationRecord,
    TraceRecord,
    VariableRecord,
)
from memtrace.loaders.otlp import read_otlp
from memtrace.systems.locomo import SAMPLE_PATH

MESSAGE = "Caroline: I went to a LGBTQ support group yesterday."
FACT = "Caroline went to a LGBTQ support group on 7 May 2023"
QUESTION = "When did Caroline go to the LGBTQ support group?"


def pipeline() -> list[dict[str, Any]]:
    """An OpenInference-instrumented memory system: extract, store, retrieve, answer, judge."""
    return [
        span(1, "agent.turn", {"openinference.span.kind": "AGENT", "session.id": "conv-1"}),
        span(
            2,
            "memory_system.extract_facts",
            {
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Extract facts as JSON.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": MESSAGE,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": json.dumps([FACT]),
            },
            parent=1,
        ),
        span(
            3,
            "mem0.add",
            {
                "openinference.span.kind": "CHAIN",
                "input.value": json.dumps([FACT]),
                "output.value": json.dumps(
                    {"results": [{"id": "m-1", "memory": FACT, "event": "ADD"}]}
                ),
            },
            parent=1,
        ),
        span(
            4,
            "vector_search",
            {
                "openinference.span.kind": "RETRIEVER",
                "input.value": QUESTION,
                "retrieval.documents.0.document.id": "m-1",
                "retrieval.documents.0.document.content": FACT,
                "retrieval.documents.0.document.score": 0.9,
                "output.value": FACT,
            },
            parent=1,
        ),
        span(
            5,
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [
                        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
                        {"role": "user", "parts": [{"type": "text", "content": FACT}]},
                    ]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "In June."}]}]
                ),
            },
            parent=1,
        ),
        span(
            6,
            "correctness",
            {
                "openinference.span.kind": "EVALUATOR",
                "input.value": "In June.",
                "output.value": "0.0",
            },
            parent=1,
        ),
        span(
            7,
            "case",
            {
                "memtrace.case.id": "q-1",
                "memtrace.case.question": QUESTION,
                "memtrace.case.golden_answers": ["7 May 2023"],
                "memtrace.case.evidence": ["I went to a LGBTQ support group yesterday."],
            },
            parent=1,
        ),
    ]


@pytest.fixture
def write(tmp_path: Path) -> Callable[[Any, str], Path]:
    def writer(data: Any, name: str = "trace.json") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
        return path

    return writer


def by_type(records: list[tuple[str, AnyRecord]], kind: type[Any]) -> list[Any]:
    return [r for _, r in records if isinstance(r, kind)]


def test_spans_become_operations_variables_and_cases(write: Callable[[Any, str], Path]) -> None:
    records = read_otlp(write(request(*pipeline()), "run.json"))
    trace = records[0][1]
    assert isinstance(trace, TraceRecord) and trace.id == "otlp-run" and trace.system == "my-memory"
    ops = {op.name: op for op in by_type(records, OperationRecord)}
    kinds = {name: op.kind for name, op in ops.items()}
    assert kinds == {
        "agent.turn": "other",
        "memory_system.extract_facts": "extraction",  # the name rule is more specific than LLM
        "mem0.add": "embedding",
        "vector_search": "retrieval",
        "chat gpt-4o": "generation",  # gen_ai.operation.name
        "correctness": "judge",
        "case": "other",
    }
    variables = {v.id: v for v in by_type(records, VariableRecord)}
    extract, store, search = (
        ops[n] for n in ("memory_system.extract_facts", "mem0.add", "vector_search")
    )
    message = next(v for v in variables.values() if v.value == MESSAGE)
    assert message.category == "message" and message.id in extract.reads
    prompt = next(v for v in variables.values() if v.value == "Extract facts as JSON.")
    assert prompt.category == "prompt"
    # the facts extraction wrote are what the store read (same value = same variable)
    (facts,) = extract.writes
    assert store.reads == [facts]
    assert store.writes == ["m-1@1"] and variables["m-1@1"].category == "memory_entry"
    assert "m-1@1" in search.reads  # the retrieved document is the stored one
    (case,) = by_type(records, CaseRecord)
    query = variables[case.query]
    assert query.value == QUESTION and query.category == "message & query"
    assert query.id in search.reads and query.id in ops["chat gpt-4o"].reads
    assert variables[case.prediction].value == "In June."
    assert case.judge_score == 0.0 and case.is_failed  # from the EVALUATOR span's output
    assert case.evidence == [message.id] and case.golden_answers == ["7 May 2023"]


def test_updates_and_deletes_version_documents(write: Callable[[Any, str], Path]) -> None:
    def results(*items: dict[str, str]) -> dict[str, Any]:
        return {"output.value": json.dumps({"results": list(items)})}

    spans = [
        span(
            1, "add", {"input.value": "a", **results({"id": "m", "memory": "v1", "event": "ADD"})}
        ),
        span(
            2,
            "add",
            {"input.value": "b", **results({"id": "m", "memory": "v2", "event": "UPDATE"})},
        ),
        span(
            3,
            "add",
            {"input.value": "c", **results({"id": "m", "memory": "v2", "event": "DELETE"})},
        ),
    ]
    records = read_otlp(write(request(*spans), "t.json"))
    ops = by_type(records, OperationRecord)
    assert ops[1].writes == ["m@2"] and ops[1].reads[-1] == "m@1"  # the old version flows in
    assert ops[2].reads[-1] == "m@2"
    assert ops[2].writes == ["delete_marker:deleted@1"]
    index = build_index("t.json", iter(records))  # the records pass the native checks
    try:
        assert index.counts.next_versions == 1
    finally:
        index.close()


def test_detection_and_json_lines(write: Callable[[Any, str], Path], tmp_path: Path) -> None:
    pretty = write(request(*pipeline()), "pretty.json")
    lines = write("\n".join(json.dumps(request(s)) for s in pipeline()) + "\n", "collector.jsonl")
    assert detect(pretty).format == detect(lines).format == "otlp"
    assert [r for _, r in read_otlp(lines)][1:] == [r for _, r in read_otlp(pretty)][1:]


def test_base64_ids_from_protobuf_json_are_read(write: Callable[[Any, str], Path]) -> None:
    spans = pipeline()
    for s in spans:
        s["traceId"] = base64.b64encode(bytes.fromhex(s["traceId"])).decode()
        s["spanId"] = base64.b64encode(bytes.fromhex(s["spanId"])).decode()
        if "parentSpanId" in s:
            s["parentSpanId"] = base64.b64encode(bytes.fromhex(s["parentSpanId"])).decode()
        s["kind"] = "SPAN_KIND_INTERNAL"
    records = read_otlp(write(request(*spans), "b64.json"))
    assert [op.id for op in by_type(records, OperationRecord)][1] == f"{2:016x}"


def test_labels_file_supplies_cases(write: Callable[[Any, str], Path]) -> None:
    sample = json.loads(SAMPLE_PATH.read_text())[0]
    qa = sample["qa"][0]
    turns = {
        t["dia_id"]: t
        for k, v in sample["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for t in v
    }
    evidence_text = turns[qa["evidence"][0]]["text"]
    spans = [
        span(
            1,
            "extract",
            {
                "session.id": sample["sample_id"],
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": evidence_text,
                "output.value": "facts",
            },
        ),
        span(
            2,
            "search",
            {
                "openinference.span.kind": "RETRIEVER",
                "input.value": qa["question"],
                "output.value": "ctx",
            },
        ),
        span(
            3,
            "answer",
            {
                "openinference.span.kind": "LLM",
                "input.value": qa["question"],
                "llm.input_messages.0.message.content": "ctx",
                "output.value": "no idea",
            },
        ),
        span(
            4,
            "judge",
            {"openinference.span.kind": "EVALUATOR", "input.value": "no idea", "output.value": "0"},
        ),
    ]
    records = read_otlp(write(request(*spans), "l.json"), locomo_labels(SAMPLE_PATH))
    (case,) = by_type(records, CaseRecord)
    assert case.id == f"{sample['sample_id']}-qa-1" and case.golden_answers == [str(qa["answer"])]
    assert case.is_failed and len(case.evidence) == 1
    with pytest.raises(InputError, match="no conversation's sample_id matches"):
        other = [span(1, "x", {"session.id": "nobody", "input.value": "q"})]
        read_otlp(write(request(*other), "n.json"), locomo_labels(SAMPLE_PATH))


BAD: list[tuple[str, Any, str | None, str]] = [
    ("empty", "  \n", None, "empty file"),
    ("not json", "{nope\n", "1", "malformed JSON"),
    (
        "no resourceSpans",
        {"resourceSpans": "x"},
        "$",
        "resourceSpans: Input should be a valid list",
    ),
    ("no spans", {"resourceSpans": []}, None, "no spans"),
    (
        "bad span id",
        request(span(1, "a", {}, spanId="xyz")),
        "resourceSpans[0].scopeSpans[0].spans[0].spanId",
        "expected 16 hex digits, got 'xyz'",
    ),
    (
        "ends before start",
        request(span(1, "a", {}, endTimeUnixNano="5")),
        "resourceSpans[0].scopeSpans[0].spans[0].endTimeUnixNano",
        "ends before it starts",
    ),
    (
        "missing name",
        request({k: v for k, v in span(1, "a", {}).items() if k != "name"}),
        "resourceSpans[0].scopeSpans[0].spans[0]",
        "name: required field is missing",
    ),
    (
        "bad attribute value",
        request({**span(1, "a", {}), "attributes": [{"key": "k", "value": {"intValue": "ten"}}]}),
        "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value",
        "not an OTLP AnyValue",
    ),
    (
        "duplicate span",
        request(span(1, "a", {}), span(1, "b", {})),
        "resourceSpans[0].scopeSpans[0].spans[1]",
        "appears twice",
    ),
    (
        "case without question",
        request(span(1, "a", {"memtrace.case.id": "q"})),
        "resourceSpans[0].scopeSpans[0].spans[0]",
        "a case needs string attributes memtrace.case.id and memtrace.case.question",
    ),
    (
        "bad judge score",
        request(
            span(
                1,
                "a",
                {
                    "memtrace.case.id": "q",
                    "memtrace.case.question": "?",
                    "memtrace.case.judge_score": "high",
                },
            )
        ),
        "resourceSpans[0].scopeSpans[0].spans[0]",
        "memtrace.case.judge_score: expected a number",
    ),
]


@pytest.mark.parametrize(
    ("content", "location", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_files_are_named_precisely(
    write: Callable[[Any, str], Path], content: Any, location: str | None, problem: str
) -> None:
    path = write(content, "bad.json")
    with pytest.raises(InputError) as caught:
        read_otlp(path)
    assert caught.value.location == location
    assert problem in caught.value.problem


def test_one_bad_otlp_file_stops_the_whole_load(write: Callable[[Any, str], Path]) -> None:
    good = write(request(*pipeline()), "good.json")
    bad = write(request(span(1, "a", {}, spanId="xyz")), "bad.json")
    with pytest.raises(InputError, match="spanId"):
        load_paths(None, [str(good), str(bad)], LoadOptions(dry_run=True))
    summary = load_paths(None, [str(good)], LoadOptions(dry_run=True))
    assert summary.files[0].format == "otlp" and summary.files[0].cases == 1


def test_mem0_search_results_on_a_retriever_are_read_not_stored(
    write: Callable[[Any, str], Path],
) -> None:
    results = json.dumps({"results": [{"id": "m-1", "memory": FACT, "score": 0.8}]})
    spans = [
        span(1, "mem0.add", {"input.value": MESSAGE, "output.value": json.dumps(
            {"results": [{"id": "m-1", "memory": FACT, "event": "ADD"}]})}),
        span(2, "mem0.search", {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION,
                                "output.value": results}),
    ]  # fmt: skip
    records = read_otlp(write(request(*spans), "s.json"))
    store, search = by_type(records, OperationRecord)
    assert store.writes == ["m-1@1"]
    assert "m-1@1" in search.reads and "m-1@1" not in search.writes
    (context,) = search.writes
    variables = {v.id: v for v in by_type(records, VariableRecord)}
    assert variables[context].value == results and variables[context].category == "context"


def test_labels_without_an_otlp_file_are_refused() -> None:
    native = str(Path(__file__).parents[1] / "data" / "native" / "small.jsonl")
    with pytest.raises(InputError, match="no file here is OTLP"):
        load_paths(None, [native], LoadOptions(dry_run=True, labels=locomo_labels(SAMPLE_PATH)))
    assert load_paths(None, [native], LoadOptions(dry_run=True)).files[0].format == "native"


# -- OTel GenAI memory spans (gen_ai.operation.name = *_memory) --------------------------------


def memory(number: int, operation: str, store: str = "prefs", **attributes: Any) -> dict[str, Any]:
    """A GenAI memory span named as the conventions say: ``{operation} {store}``."""
    found = {"gen_ai.operation.name": operation, "gen_ai.memory.store.id": store}
    found.update({f"gen_ai.memory.{k.replace('__', '.')}": v for k, v in attributes.items()})
    return span(number, f"{operation} {store}", found)


def records(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


def test_memory_spans_alone_version_records_per_id_within_their_store(
    write: Callable[[Any, str], Path],
) -> None:
    spans = [
        memory(1, "create_memory_store"),
        memory(2, "create_memory", records=records({"id": "r1", "content": "likes tea"})),
        memory(3, "create_memory", store="other", records=records({"id": "r1", "content": "x"})),
        memory(4, "update_memory", records=records({"id": "r1", "content": "likes coffee"})),
        memory(5, "upsert_memory", records=records(
            {"id": "r1", "content": "likes coffee, not tea"},
            {"id": "r2", "content": "has a cat"})),
        memory(6, "search_memory", query__text="what does the user drink?", records=records(
            {"id": "r1", "content": "likes coffee, not tea", "score": 0.9})),
        memory(7, "delete_memory", record__id="r2"),
        memory(8, "delete_memory_store", store="other"),
    ]  # fmt: skip
    loaded = read_otlp(write(request(*spans), "m.json"))
    ops = {op.id: op for op in by_type(loaded, OperationRecord)}
    kinds = [op.kind for op in ops.values()]
    assert (
        kinds
        == ["other", "embedding", "embedding", "update", "update", "retrieval"] + ["deletion"] * 2
    )
    op = list(ops.values())
    assert op[1].writes == ["prefs/r1@1"] and op[2].writes == ["other/r1@1"]  # one id, two stores
    assert op[3].writes == ["prefs/r1@2"] and "prefs/r1@1" in op[3].reads
    assert op[4].writes == ["prefs/r1@3", "prefs/r2@1"]  # upsert: a new version and a create
    search = op[5]
    assert "prefs/r1@3" in search.reads and search.metadata["scores"] == {"prefs/r1": 0.9}
    variables = {v.id: v for v in by_type(loaded, VariableRecord)}
    query = next(v for v in variables.values() if v.value == "what does the user drink?")
    assert query.id in search.reads
    (context,) = search.writes  # no output attribute: the context is the records returned
    assert json.loads(variables[context].value or "") == ["likes coffee, not tea"]
    assert variables[context].category == "context"
    assert op[6].reads == ["prefs/r2@1"] and op[6].writes == ["delete_marker:deleted@1"]
    assert op[7].reads == ["other/r1@1"] and op[7].category == "delete_memory_store"
    assert op[7].metadata["gen_ai.memory.store.id"] == "other"
    index = build_index("m.json", iter(loaded))  # the records pass the native checks
    try:
        assert index.counts.next_versions == 2
    finally:
        index.close()


def test_memory_spans_mixed_with_llm_spans_link_by_text(
    write: Callable[[Any, str], Path],
) -> None:
    spans = [
        span(1, "chat extract", {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([{"role": "user", "content": MESSAGE}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": FACT}])}),
        memory(2, "create_memory", records=records({"id": "m-1", "content": FACT})),
        memory(3, "search_memory", query__text=QUESTION,
               records=[{"id": "m-1", "content": FACT, "score": 0.7}]),  # an OTLP kvlist array
        span(4, "chat gpt-4o", {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([{"role": "user", "content": QUESTION},
                                                 {"role": "user", "content": json.dumps([FACT])}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": "In June."}])}),
        span(5, "case", {"memtrace.case.id": "q-1", "memtrace.case.question": QUESTION,
                         "memtrace.case.golden_answers": ["7 May 2023"],
                         "memtrace.case.judge_score": 0.0}),
    ]  # fmt: skip
    spans[1]["attributes"].append({"key": "input.value", "value": value(FACT)})
    loaded = read_otlp(write(request(*spans), "mixed.json"))
    extract, store, search, answer, _ = by_type(loaded, OperationRecord)
    kinds = [extract.kind, store.kind, search.kind, answer.kind]
    assert kinds == ["extraction", "embedding", "retrieval", "generation"]  # name rules first
    assert store.reads == extract.writes  # the fact the chat wrote is what the store read
    assert store.writes == ["prefs/m-1@1"] and "prefs/m-1@1" in search.reads
    assert set(search.writes) <= set(answer.reads)  # the context flows into the answer
    (case,) = by_type(loaded, CaseRecord)
    assert case.query in search.reads and case.query in answer.reads and case.is_failed


BAD_MEMORY: list[tuple[str, dict[str, Any], str]] = [
    ("records not JSON", {"records": "[{"}, "gen_ai.memory.records: malformed JSON"),
    ("records an object", {"records": '{"id": "a"}'}, "expected a JSON array of records"),
    ("record id a number", {"records": '[{"id": 5}]'}, "gen_ai.memory.records[0].id: expected a"),
    ("content a list", {"records": '[{"id": "a", "content": ["x"]}]'}, "records[0].content"),
    ("score a string", {"records": '[{"id": "a", "score": "high"}]'}, "records[0].score"),
    ("unknown event", {"records": '[{"id": "a", "event": "MERGE"}]'}, "records[0].event"),
    ("store id a number", {"store__id": 7}, "gen_ai.memory.store.id: expected a string, got int"),
    ("record id a bool", {"record__id": True}, "gen_ai.memory.record.id: expected a string"),
]


@pytest.mark.parametrize(
    ("attributes", "problem"), [b[1:] for b in BAD_MEMORY], ids=[b[0] for b in BAD_MEMORY]
)
def test_bad_memory_attributes_name_the_span_and_attribute_and_write_nothing(
    write: Callable[[Any, str], Path], attributes: dict[str, Any], problem: str
) -> None:
    bad = memory(2, "create_memory", **attributes)
    if "store__id" in attributes:  # memory() set the store first: keep only the bad one
        bad["attributes"] = [a for a in bad["attributes"] if a["value"] != value("prefs")]
    path = write(request(memory(1, "create_memory_store"), bad), "bad-memory.json")
    with pytest.raises(InputError) as caught:
        read_otlp(path)
    key = caught.value.problem.split(": ")[1].partition("[")[0]
    attribute = next(i for i, a in enumerate(bad["attributes"]) if a["key"] == key)
    assert (
        caught.value.location == f"resourceSpans[0].scopeSpans[0].spans[1].attributes[{attribute}]"
    )
    assert caught.value.problem.startswith(f"span '{bad['name']}': ")
    assert problem in caught.value.problem
    good = write(request(*pipeline()), "good.json")
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        load_paths(None, [str(good), str(path)], LoadOptions(dry_run=True))


def test_equal_answers_of_two_cases_are_two_variables(write: Callable[[Any, str], Path]) -> None:
    """Values are not texts: two questions answered "I don't know." answer separately, so each
    case's prediction is its own generation's output; a judge reads the latest one."""

    def asked(first: int, question: str) -> list[dict[str, Any]]:
        return [
            span(
                first,
                "chat",
                {
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": question,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "I don't know.",
                },
            ),
            span(
                first + 1,
                "correctness",
                {
                    "openinference.span.kind": "EVALUATOR",
                    "input.value": "I don't know.",
                    "output.value": "0.0",
                },
            ),
            span(
                first + 2,
                "case",
                {"memtrace.case.id": f"q-{first}", "memtrace.case.question": question},
            ),
        ]

    spans = [*asked(1, "Where does Ann live?"), *asked(4, "What is Ann's dog called?")]
    records = read_otlp(write(request(*spans), "two.json"))
    ops = by_type(records, OperationRecord)
    first_chat, second_chat = (op for op in ops if op.name == "chat")
    first_judge, second_judge = (op for op in ops if op.name == "correctness")
    assert first_chat.writes != second_chat.writes
    assert first_judge.reads == first_chat.writes and second_judge.reads == second_chat.writes
    first_case, second_case = sorted(by_type(records, CaseRecord), key=lambda c: c.id)
    assert [first_case.prediction] == first_chat.writes
    assert [second_case.prediction] == second_chat.writes
