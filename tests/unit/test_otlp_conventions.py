"""Each instrumentation family's spans, written here from that family's published conventions
(docs/trace-format.md names them), read by the OTLP importer: the span's kind, its texts, and the
case around it finding its prediction. Each test reads content that only its convention maps,
so removing that convention's entry from loaders/otlp/conventions CONVENTIONS fails it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from otlp_spans import START, event, request, span

from memtrace.cli.load import load_command
from memtrace.errors import InputError
from memtrace.loaders.checks import check_records
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.loaders.models import AnyRecord, CaseRecord, OperationRecord, VariableRecord
from memtrace.loaders.otlp import read_otlp

NOTES = "Notes: the green bin goes out on Thursday evenings; paper on alternate Mondays."
QUESTION = "Which evening does the green bin go out?"
PROMPT = f"{NOTES}\nQuestion: {QUESTION}"
SYSTEM = "Answer from the household notes only."
ANSWER = "Thursday evening."
CASE = {
    "memtrace.case.id": "bins-1",
    "memtrace.case.question": QUESTION,
    "memtrace.case.golden_answers": ["Thursday"],
}


def around(number: int, name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """A span that encloses the children that follow it (the app's span around its calls)."""
    return span(
        number,
        name,
        attributes,
        startTimeUnixNano=str(START + number * 1000 - 1),
        endTimeUnixNano=str(START + 1_000_000),
    )


@pytest.fixture
def load(tmp_path: Path) -> Callable[..., list[tuple[str, AnyRecord]]]:
    def read(*spans: dict[str, Any]) -> list[tuple[str, AnyRecord]]:
        path = tmp_path / "capture.json"
        path.write_text(json.dumps(request(*spans)))
        return read_otlp(path)

    return read


def ops(records: list[tuple[str, AnyRecord]]) -> dict[str, OperationRecord]:
    return {r.name: r for _, r in records if isinstance(r, OperationRecord)}


def texts(records: list[tuple[str, AnyRecord]]) -> dict[str, VariableRecord]:
    return {r.value: r for _, r in records if isinstance(r, VariableRecord) and r.value}


def the_case(records: list[tuple[str, AnyRecord]]) -> CaseRecord:
    (case,) = [r for _, r in records if isinstance(r, CaseRecord)]
    return case


def predicted(records: list[tuple[str, AnyRecord]]) -> str | None:
    case = the_case(records)
    by_id = {r.id: r for _, r in records if isinstance(r, VariableRecord)}
    return by_id[case.prediction].value if case.prediction else None


def test_openllmetry_indexed_prompt_and_completion(load: Callable[..., Any]) -> None:
    # opentelemetry-instrumentation-openai before the current GenAI attributes: no
    # gen_ai.operation.name, the request type in llm.request.type
    records = load(
        around(1, "answer_question", CASE),
        span(2, "openai.chat", {
            "llm.request.type": "chat", "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": SYSTEM,
            "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": PROMPT,
            "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": ANSWER,
            "gen_ai.completion.0.finish_reason": "stop"}, parent=1),
    )  # fmt: skip
    chat = ops(records)["openai.chat"]
    assert chat.kind == "generation"
    found = texts(records)
    assert found[SYSTEM].category == "prompt" and found[PROMPT].category == "message"
    assert found[ANSWER].category == "llm_response" and found[ANSWER].id in chat.writes
    # the question is inside a prompt, in no variable of its own: the generation inside the
    # case's span answered it
    assert predicted(records) == ANSWER


def test_traceloop_entity_input_and_output(load: Callable[..., Any]) -> None:
    # an OpenLLMetry @workflow / @task: the function's arguments and result as JSON
    records = load(
        around(1, "household_qa.workflow", {
            **CASE, "traceloop.span.kind": "workflow", "traceloop.entity.name": "household_qa",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"question": QUESTION}}),
            "traceloop.entity.output": json.dumps(ANSWER)}),
        span(2, "recall_notes.task", {
            "traceloop.span.kind": "task",
            "traceloop.entity.input": json.dumps({"args": [QUESTION], "kwargs": {}}),
            "traceloop.entity.output": json.dumps(NOTES)}, parent=1),
    )  # fmt: skip
    workflow, task = ops(records)["household_qa.workflow"], ops(records)["recall_notes.task"]
    found = texts(records)
    case = the_case(records)
    assert case.query == found[QUESTION].id  # the argument is the question's variable
    assert found[QUESTION].id in task.reads and found[NOTES].id in task.writes
    assert found[ANSWER].id in workflow.writes


def test_traceloop_langchain_entity_inputs(load: Callable[..., Any]) -> None:
    # OpenLLMetry's LangChain spans: {"inputs": ..., "tags": ..., "metadata": ...}
    records = load(
        span(1, "RunnableSequence.workflow", {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps(
                {"inputs": {"question": QUESTION}, "tags": [], "metadata": {}, "kwargs": {}}),
            "traceloop.entity.output": json.dumps({"outputs": ANSWER, "kwargs": {}})}),
    )  # fmt: skip
    chain = ops(records)["RunnableSequence.workflow"]
    found = texts(records)
    assert chain.reads == [found[QUESTION].id] and chain.writes == [found[ANSWER].id]


def test_openlit_content_events(load: Callable[..., Any]) -> None:
    # OpenLit / GenAI before v1.28: the whole prompt and completion as one text each, in events
    records = load(
        around(1, "answer_question", CASE),
        span(2, "chat gpt-4o-mini", {
            "gen_ai.operation.name": "chat", "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini"}, parent=1,
            events=[event("gen_ai.content.prompt", {"gen_ai.prompt": f"user: {PROMPT}"}),
                    event("gen_ai.content.completion", {"gen_ai.completion": ANSWER})]),
    )  # fmt: skip
    chat = ops(records)["chat gpt-4o-mini"]
    assert chat.kind == "generation" and len(chat.reads) == 1
    assert predicted(records) == ANSWER


def test_openlit_content_as_attributes(load: Callable[..., Any]) -> None:
    records = load(
        span(1, "chat gpt-4o-mini", {
            "gen_ai.operation.name": "chat", "gen_ai.prompt": PROMPT, "gen_ai.completion": ANSWER,
            **CASE}),
    )  # fmt: skip
    assert predicted(records) == ANSWER


def test_gen_ai_current_messages_with_parts(load: Callable[..., Any]) -> None:
    # OTel GenAI v1.37+: JSON messages with typed parts, system instructions apart
    records = load(
        around(1, "answer_question", CASE),
        span(2, "chat gpt-4o-mini", {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
            "gen_ai.input.messages": json.dumps([
                {"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]),
            "gen_ai.output.messages": json.dumps([
                {"role": "assistant", "finish_reason": "stop",
                 "parts": [{"type": "tool_call", "name": "lookup", "arguments": {}},
                           {"type": "text", "content": ANSWER}]}])}, parent=1),
    )  # fmt: skip
    found = texts(records)
    assert found[SYSTEM].category == "prompt" and found[PROMPT].category == "message"
    assert predicted(records) == ANSWER


def test_gen_ai_operation_details_event(load: Callable[..., Any]) -> None:
    # the same attributes on the event gen_ai.client.inference.operation.details
    details = {
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
        ),
    }
    records = load(
        span(
            1,
            "chat",
            {"gen_ai.operation.name": "chat", **CASE},
            events=[event("gen_ai.client.inference.operation.details", details)],
        )
    )
    assert PROMPT in texts(records) and predicted(records) == ANSWER


def test_gen_ai_message_and_choice_events(load: Callable[..., Any]) -> None:
    # OTel GenAI v1.28-v1.36: one event per message; the choice's message an object
    records = load(
        around(1, "answer_question", CASE),
        span(2, "chat gpt-4o-mini", {"gen_ai.operation.name": "chat"}, parent=1, events=[
            event("gen_ai.system.message", {"content": SYSTEM, "role": "system"}),
            event("gen_ai.user.message", {"content": PROMPT}),
            event("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": ANSWER}})]),
    )  # fmt: skip
    found = texts(records)
    assert found[SYSTEM].category == "prompt" and found[PROMPT].category == "message"
    assert predicted(records) == ANSWER


def test_strands_flattened_parts(load: Callable[..., Any]) -> None:
    # Strands: Bedrock-style content lists, flattened into indexed attributes
    records = load(
        around(1, "invoke_agent household", {**CASE, "gen_ai.operation.name": "invoke_agent"}),
        span(2, "chat", {
            "gen_ai.operation.name": "chat",
            "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content.0.text": NOTES,
            "gen_ai.prompt.0.content.1.text": f"Question: {QUESTION}",
            "gen_ai.completion.0.text": ANSWER}, parent=1),
    )  # fmt: skip
    assert f"{NOTES}\nQuestion: {QUESTION}" in texts(records)
    assert ops(records)["invoke_agent household"].kind == "other"
    assert predicted(records) == ANSWER


def test_strands_events_with_json_content(load: Callable[..., Any]) -> None:
    records = load(
        around(1, "invoke_agent household", CASE),
        span(2, "chat", {"gen_ai.operation.name": "chat"}, parent=1, events=[
            event("gen_ai.user.message", {"content": json.dumps([{"text": PROMPT}])}),
            event("gen_ai.choice", {"message": json.dumps([{"text": ANSWER}]),
                                    "finish_reason": "end_turn"})]),
    )  # fmt: skip
    assert PROMPT in texts(records) and predicted(records) == ANSWER


@pytest.mark.parametrize("operation", ["ai.streamText", "ai.generateText", "ai.streamObject"])
def test_vercel_ai_sdk_spans(load: Callable[..., Any], operation: str) -> None:
    # the Vercel AI SDK: the call and its provider call (.doStream / .doGenerate)
    inner = f"{operation}.doStream" if "stream" in operation else f"{operation}.doGenerate"
    records = load(
        around(1, operation, {
            **CASE, "ai.operationId": operation, "ai.model.id": "gpt-4o-mini",
            "ai.prompt": json.dumps({"system": SYSTEM, "prompt": PROMPT}),
            "ai.response.text": ANSWER}),
        span(2, inner, {
            "ai.operationId": inner, "gen_ai.request.model": "gpt-4o-mini",
            "ai.prompt.messages": json.dumps([
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": [{"type": "text", "text": PROMPT}]}]),
            "ai.response.text": ANSWER}, parent=1),
    )  # fmt: skip
    found = ops(records)
    assert found[operation].kind == found[inner].kind == "generation"
    assert texts(records)[PROMPT].category == "message"
    assert predicted(records) == ANSWER


def test_pydantic_ai_events_attribute_and_tools(load: Callable[..., Any]) -> None:
    # pydantic-ai (instrumentation version 1, events as one attribute), Logfire's agent run
    events = [
        {"event.name": "gen_ai.system.message", "role": "system", "content": SYSTEM},
        {"event.name": "gen_ai.user.message", "role": "user", "content": PROMPT},
        {"event.name": "gen_ai.choice", "index": 0,
         "message": {"role": "assistant", "content": ANSWER}},
    ]  # fmt: skip
    records = load(
        around(1, "agent run", {**CASE, "gen_ai.agent.name": "household",
                                "final_result": ANSWER}),
        span(2, "running tool", {"gen_ai.tool.name": "read_notes",
                                 "tool_arguments": json.dumps({"topic": "bins"}),
                                 "tool_response": NOTES}, parent=1),
        span(3, "chat gpt-4o-mini", {"gen_ai.operation.name": "chat",
                                     "events": json.dumps(events)}, parent=1),
    )  # fmt: skip
    found = texts(records)
    tool = ops(records)["running tool"]
    assert found[NOTES].id in tool.writes and found[PROMPT].category == "message"
    trace = records[0][1]
    assert trace.metadata["unknown_kind_spans"] == 0  # the agent run and the tool are known
    assert predicted(records) == ANSWER


def test_logfire_openai_request_and_response(load: Callable[..., Any]) -> None:
    request_data = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]}
    response_data = {"message": {"role": "assistant", "content": ANSWER}}
    records = load(
        span(1, "Chat Completion with 'gpt-4o-mini'", {
            **CASE, "request_data": json.dumps(request_data),
            "response_data": json.dumps(response_data)}),
    )  # fmt: skip
    assert ops(records)["Chat Completion with 'gpt-4o-mini'"].kind == "generation"
    assert predicted(records) == ANSWER


def test_openinference_langchain_chain_retriever_llm(load: Callable[..., Any]) -> None:
    # LangChain through OpenInference: a chain around a retriever and a chat model
    records = load(
        around(1, "RunnableSequence", {
            **CASE, "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": QUESTION}), "output.value": ANSWER}),
        span(2, "VectorStoreRetriever", {
            "openinference.span.kind": "RETRIEVER", "input.value": QUESTION,
            "retrieval.documents.0.document.id": "note-3",
            "retrieval.documents.0.document.content": NOTES}, parent=1),
        span(3, "ChatOpenAI", {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": PROMPT,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": ANSWER}, parent=1),
    )  # fmt: skip
    found = ops(records)
    assert [found[n].kind for n in ("RunnableSequence", "VectorStoreRetriever", "ChatOpenAI")] == [
        "other",
        "retrieval",
        "generation",
    ]
    case = the_case(records)
    assert case.query in found["VectorStoreRetriever"].reads  # the question, asked as such
    assert predicted(records) == ANSWER


# -- status, ids, what could not be read -------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, "UNSET"),
        (1, "OK"),
        (2, "ERROR"),
        ("STATUS_CODE_ERROR", "ERROR"),
        ("STATUS_CODE_OK", "OK"),
    ],
)
def test_status_in_one_vocabulary(load: Callable[..., Any], code: object, status: str) -> None:
    records = load(span(1, "step", {}, status={"code": code, "message": "boom"}))
    metadata = ops(records)["step"].metadata
    assert metadata["otel_status"] == status and metadata["otel_status_message"] == "boom"


def test_unknown_status_code_is_refused(load: Callable[..., Any]) -> None:
    with pytest.raises(InputError, match=r"spans\[0\].status.code: unknown status code 7"):
        load(span(1, "step", {}, status={"code": 7}))


@pytest.mark.parametrize(
    ("field", "zero"),
    [("traceId", "0" * 32), ("spanId", "0" * 16), ("spanId", "AAAAAAAAAAA=")],
)
def test_all_zero_ids_are_refused(load: Callable[..., Any], field: str, zero: str) -> None:
    with pytest.raises(InputError, match=rf"spans\[0\].{field}: .*all-zero id is invalid"):
        load({**span(1, "step", {}), field: zero})


def test_an_all_zero_parent_is_no_parent(load: Callable[..., Any]) -> None:
    records = load(span(1, "step", {}, parentSpanId="0" * 16))
    assert "otel_parent_span_id" not in ops(records)["step"].metadata


def counting_spans() -> list[dict[str, Any]]:
    return [
        span(1, "GET /notes", {"myapp.cache_hits": 3}),  # unknown kind, no content
        span(2, "remember", {"myapp.prompt_text": PROMPT, "myapp.reply": ANSWER}),  # unread
        span(3, "chat", {"gen_ai.operation.name": "chat", "gen_ai.prompt": PROMPT}),  # read
        span(4, "handle question", CASE),  # known: a case span; its question is no lost content
    ]


def test_load_summary_counts_unread_content_and_unknown_kinds(tmp_path: Path) -> None:
    path = tmp_path / "app.json"
    path.write_text(json.dumps(request(*counting_spans())))
    summary = load_paths(None, [str(path)], LoadOptions(dry_run=True)).as_dict()
    assert summary["unread_content_spans"] == 1 and summary["unknown_kind_spans"] == 2
    files = summary["files"]
    assert isinstance(files, list)
    file = files[0]
    assert file["unread_content_keys"] == ["myapp.prompt_text", "myapp.reply"]
    assert file["unknown_kind_names"] == ["GET /notes", "remember"]
    result = CliRunner().invoke(load_command, [str(path), "--dry-run", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["unread_content_spans"] == 1
    assert "1 span carries content no convention read (attributes myapp.prompt_text, " in (
        result.stderr
    )


def test_a_refused_file_under_json_prints_a_json_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(request(span(1, "step", {}, traceId="0" * 32))))
    result = CliRunner().invoke(load_command, [str(path), "--dry-run", "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "InputError" and error["path"] == str(path)
    assert error["location"].endswith("spans[0].traceId") and "all-zero" in error["problem"]
    assert "all-zero" in result.stderr


def test_a_json_object_of_no_format_names_every_format(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"spans": [{"name": "chat"}]}))
    with pytest.raises(InputError) as caught:
        load_paths(None, [str(path)], LoadOptions(dry_run=True))
    problem = caught.value.problem
    assert "read as smartcomment because it is one JSON object" in problem
    assert "`--format native`" in problem and "`--format otlp` reads OTLP JSON" in problem


def test_a_case_takes_the_last_generation_inside_its_own_span(load: Callable[..., Any]) -> None:
    def chat(number: int, parent: int, reply: str) -> dict[str, Any]:
        return span(number, "chat", {"gen_ai.operation.name": "chat", "gen_ai.prompt": PROMPT,
                                     "gen_ai.completion": reply}, parent=parent)  # fmt: skip

    first = {**CASE, "memtrace.case.id": "loop"}
    other = {**CASE, "memtrace.case.id": "other", "memtrace.case.question": "And paper?"}
    records = load(
        around(1, "agent turn", first),
        chat(2, 1, "call read_notes"),  # an agent loop: a tool call planned, then the answer
        span(3, "execute_tool read_notes", {"gen_ai.operation.name": "execute_tool"}, parent=1),
        chat(4, 1, ANSWER),
        around(5, "agent turn", other),
        chat(6, 5, "Alternate Mondays."),
    )
    cases = {r.id: r for _, r in records if isinstance(r, CaseRecord)}
    by_id = {r.id: r.value for _, r in records if isinstance(r, VariableRecord)}
    assert by_id[cases["loop"].prediction or ""] == ANSWER
    assert by_id[cases["other"].prediction or ""] == "Alternate Mondays."


def test_gen_ai_tool_calls_and_tool_spans(load: Callable[..., Any]) -> None:
    # OTel GenAI v1.37+: a tool_call part (arguments as the model wrote them), the execute_tool
    # span with gen_ai.tool.call.arguments / .result, the tool_call_response part the next call
    # reads (the spec's `response`); the first call answered nothing, the second did
    call = {"type": "tool_call", "id": "c1", "name": "read_notes", "arguments": '{"topic":"bins"}'}
    records = load(
        around(1, "agent turn", CASE),
        span(2, "chat first", {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([
                {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}])},
            parent=1),
        span(3, "execute_tool read_notes", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_notes",
            "gen_ai.tool.call.arguments": json.dumps({"topic": "bins"}, indent=1),
            "gen_ai.tool.call.result": NOTES}, parent=1),
        span(4, "chat second", {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([
                {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
                {"role": "assistant", "parts": [call]},
                {"role": "tool", "parts": [
                    {"type": "tool_call_response", "id": "c1", "response": NOTES}]}]),
            "gen_ai.output.messages": json.dumps([
                {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}])},
            parent=1),
    )  # fmt: skip
    found, by_name = texts(records), ops(records)
    arguments = found['{"topic": "bins"}']  # the call's and the tool's texts, as one JSON
    assert arguments.id in by_name["chat first"].writes
    assert arguments.id in by_name["execute_tool read_notes"].reads
    assert found[NOTES].id in by_name["execute_tool read_notes"].writes
    assert found[NOTES].id in by_name["chat second"].reads
    assert predicted(records) == ANSWER  # the question is a variable: read by both calls


def test_openinference_tool_calls_and_tool_span(load: Callable[..., Any]) -> None:
    # OpenInference: llm.output_messages.N.message.tool_calls.M.tool_call.function.arguments,
    # a TOOL span whose input.value holds the arguments, the tool's answer as a `tool` message
    def llm(number: int, messages: dict[str, Any]) -> dict[str, Any]:
        return span(number, "ChatCompletion", {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": QUESTION, **messages}, parent=1)  # fmt: skip

    arguments = "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"
    records = load(
        around(1, "agent turn", CASE),
        llm(2, {"llm.output_messages.0.message.role": "assistant",
                arguments: '{"topic":"bins"}'}),
        span(3, "read_notes", {
            "openinference.span.kind": "TOOL", "tool.name": "read_notes",
            "input.value": '{"topic": "bins"}', "output.value": NOTES}, parent=1),
        llm(4, {"llm.input_messages.1.message.role": "tool",
                "llm.input_messages.1.message.content": NOTES,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": ANSWER}),
    )  # fmt: skip
    found = texts(records)
    tool = ops(records)["read_notes"]
    assert found['{"topic": "bins"}'].id in tool.reads and found[NOTES].id in tool.writes
    assert predicted(records) == ANSWER


def test_openai_tool_calls_in_request_messages(load: Callable[..., Any]) -> None:
    # OpenAI's chat format (Logfire's request_data, the Vercel AI SDK's messages): an assistant
    # message's tool_calls[].function.arguments is a text the span reads
    records = load(
        span(1, "Chat Completion with 'gpt-4o-mini'", {"request_data": json.dumps({"messages": [
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "read_notes", "arguments": '{"topic":"bins"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": NOTES}]})}),
    )  # fmt: skip
    assert {QUESTION, '{"topic": "bins"}', NOTES} <= texts(records).keys()


def test_vercel_ai_tool_calls(load: Callable[..., Any]) -> None:
    # the Vercel AI SDK: ai.response.toolCalls on the provider call, the ai.toolCall span's args
    # and result, then the prompt's tool-call / tool-result parts of the next step
    records = load(
        around(1, "ai.generateText", CASE),
        span(2, "ai.generateText.doGenerate", {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.prompt.messages": json.dumps([{"role": "user", "content": QUESTION}]),
            "ai.response.toolCalls": json.dumps([
                {"toolCallType": "function", "toolCallId": "c1", "toolName": "readNotes",
                 "args": '{"topic":"bins"}'}])}, parent=1),
        span(3, "ai.toolCall", {
            "ai.operationId": "ai.toolCall", "ai.toolCall.name": "readNotes",
            "ai.toolCall.args": '{"topic": "bins"}', "ai.toolCall.result": NOTES}, parent=1),
        span(4, "ai.generateText.doGenerate", {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.prompt.messages": json.dumps([
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": [
                    {"type": "tool-call", "toolCallId": "c1", "toolName": "readNotes",
                     "args": {"topic": "bins"}}]},
                {"role": "tool", "content": [
                    {"type": "tool-result", "toolCallId": "c1", "toolName": "readNotes",
                     "result": "sorted"}]}]),
            "ai.response.text": ANSWER}, parent=1),
    )  # fmt: skip
    found = texts(records)
    arguments = found['{"topic": "bins"}']
    tool = ops(records)["ai.toolCall"]
    assert arguments.id in tool.reads and found[NOTES].id in tool.writes
    assert "sorted" in found  # a tool-result part is a text the next step reads
    assert predicted(records) == ANSWER


def test_strands_tool_use_and_tool_result_blocks(load: Callable[..., Any]) -> None:
    # Strands' default span events carry Bedrock Converse content blocks: the model's
    # {"toolUse": {"input"}} in gen_ai.choice, the tool's {"toolResult": {"content": [{"text"}]}}
    # in the next call's gen_ai.tool.message; its agent loop is execute_event_loop_cycle
    use = json.dumps([{"toolUse": {"toolUseId": "t1", "name": "read_notes",
                                   "input": {"topic": "bins"}}}])  # fmt: skip
    result = json.dumps([{"toolResult": {"toolUseId": "t1", "status": "success",
                                         "content": [{"text": NOTES}]}}])  # fmt: skip
    question = event("gen_ai.user.message", {"content": json.dumps([{"text": QUESTION}])})
    records = load(
        around(1, "execute_event_loop_cycle", {**CASE,
               "gen_ai.operation.name": "execute_event_loop_cycle"}),
        span(2, "chat", {"gen_ai.operation.name": "chat"}, parent=1,
             events=[question, event("gen_ai.choice", {"message": use})]),
        span(3, "execute_tool read_notes", {"gen_ai.operation.name": "execute_tool"}, parent=1,
             events=[event("gen_ai.tool.message", {"role": "tool", "content": '{"topic":"bins"}'}),
                     event("gen_ai.choice", {"message": json.dumps([{"text": NOTES}])})]),
        span(4, "chat", {"gen_ai.operation.name": "chat"}, parent=1,
             events=[question, event("gen_ai.tool.message", {"content": result}),
                     event("gen_ai.choice", {"message": json.dumps([{"text": ANSWER}])})]),
    )  # fmt: skip
    found = texts(records)
    tool = ops(records)["execute_tool read_notes"]
    assert found['{"topic": "bins"}'].id in tool.reads and found[NOTES].id in tool.writes
    read_by_answer = [op for _, op in records if isinstance(op, OperationRecord) and
                      found[NOTES].id in op.reads]  # fmt: skip
    assert [op.name for op in read_by_answer] == ["chat"]
    assert ops(records)["execute_event_loop_cycle"].kind == "other"
    (trace,) = [r for kind, r in records if kind == "$"]
    assert trace.metadata["unknown_kind_spans"] == 0
    assert predicted(records) == ANSWER


def test_a_search_tool_returning_a_stored_memory_reads_it(load: Callable[..., Any]) -> None:
    # a GenAI create_memory stores a note; a search tool returns that note's text as its result:
    # the tool found the memory (reads it) and outputs a context; it does not write the memory
    records = load(
        span(1, "remember notes", {
            "gen_ai.operation.name": "create_memory", "gen_ai.memory.store.id": "home",
            "gen_ai.memory.records": json.dumps([{"id": "n1", "content": NOTES}])}),
        span(2, "execute_tool search_notes", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_notes",
            "gen_ai.tool.call.arguments": '{"query": "bins"}',
            "gen_ai.tool.call.result": NOTES}),
    )  # fmt: skip
    tool = ops(records)["execute_tool search_notes"]
    assert tool.kind == "retrieval" and "home/n1@1" in tool.reads
    (written,) = tool.writes
    context = {r.id: r for _, r in records if isinstance(r, VariableRecord)}[written]
    assert context.value == NOTES and context.category == "context"


def test_langfuse_observations(load: Callable[..., Any]) -> None:
    # the Langfuse SDK (v3+, on OpenTelemetry): the observation's type, input and output as
    # JSON, the model, the session and user ids (docs: langfuse.com/integrations/native/
    # opentelemetry, property mapping)
    records = load(
        around(1, "answer question", {**CASE, "langfuse.observation.type": "span",
               "langfuse.session.id": "household-7", "langfuse.user.id": "ana"}),
        span(2, "search notes", {
            "langfuse.observation.type": "retriever",
            "langfuse.observation.input": json.dumps(QUESTION),
            "langfuse.observation.output": json.dumps(NOTES)}, parent=1),
        span(3, "llm call", {
            "langfuse.observation.type": "generation",
            "langfuse.observation.model.name": "gpt-4o-mini",
            "langfuse.observation.input": json.dumps(
                [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]),
            "langfuse.observation.output": json.dumps(
                {"role": "assistant", "content": ANSWER})}, parent=1),
    )  # fmt: skip
    search, call = ops(records)["search notes"], ops(records)["llm call"]
    assert (search.kind, call.kind) == ("retrieval", "generation")
    found = texts(records)
    values = {r.id: r.value for _, r in records if isinstance(r, VariableRecord)}
    assert [values[v] for v in search.reads] == [QUESTION] and found[NOTES].id in search.writes
    assert found[SYSTEM].category == "prompt" and found[PROMPT].category == "message"
    assert found[ANSWER].id in call.writes and predicted(records) == ANSWER
    (trace,) = [r for _, r in records if r.type == "trace"]
    assert trace.metadata["unread_content_spans"] == 0


def test_conversation_ids_of_every_family() -> None:
    from memtrace.loaders.otlp.conventions import conversation_ids
    from memtrace.loaders.otlp.spans import document_spans

    spans = document_spans(request(
        span(1, "a", {"langfuse.session.id": "s-1", "langfuse.user.id": "u-1"}),
        span(2, "b", {"session.id": "s-2", "user.id": "u-2"}),
        span(3, "c", {"gen_ai.conversation.id": "s-3"}),
        span(4, "d", {}),
    ), "ids.json")  # fmt: skip
    assert [conversation_ids(s) for s in spans] == [
        {"session": "s-1", "user": "u-1"},
        {"session": "s-2", "user": "u-2"},
        {"session": "s-3"},
        {},
    ]


def test_cognee_memory_spans_are_kinds_without_content(load: Callable[..., Any]) -> None:
    # cognee 1.6 with COGNEE_TRACING_ENABLED=true: memory.* spans with memory.system /
    # memory.operation and counts, never the content
    records = load(
        span(1, "memory.store", {"memory.system": "cognee", "memory.operation": "store",
                                 "memory.data_count": 3}),
        span(2, "memory.process", {"memory.system": "cognee", "memory.operation": "process",
                                   "memory.dataset_count": 1}),
        span(3, "memory.retrieve", {"memory.system": "cognee", "memory.operation": "retrieve",
                                    "memory.query_type": "GRAPH_COMPLETION",
                                    "memory.result_count": 2}),
        span(4, "memory.delete", {"memory.system": "cognee", "memory.operation": "delete",
                                  "memory.deleted_count": 1}),
    )  # fmt: skip
    kinds = {name: op.kind for name, op in ops(records).items()}
    assert kinds == {
        "memory.store": "embedding",
        "memory.process": "extraction",
        "memory.retrieve": "retrieval",
        "memory.delete": "deletion",
    }
    (trace,) = [r for _, r in records if r.type == "trace"]
    meta = trace.metadata
    assert (meta["unknown_kind_spans"], meta["unread_content_spans"]) == (0, 0)
    assert meta["content_free_spans"] == 4 and "memory.process" in meta["content_free_names"]


def test_http_and_rpc_spans_are_known_transport(load: Callable[..., Any]) -> None:
    # OpenTelemetry's HTTP semantic conventions (v1.23+ http.request.method / http.route, and
    # http.method before them) and RPC's rpc.system: the SERVER root of every request of a
    # traced web service, an outgoing call; known, kind other, no content of their own
    records = load(
        span(1, "POST /ask", {"http.request.method": "POST", "http.route": "/ask",
                              "url.scheme": "https", "http.response.status_code": 200}),
        span(2, "GET", {"http.method": "GET", "http.url": "https://example.org/x"}, parent=1),
        span(3, "notes.Store/Get", {"rpc.system": "grpc", "rpc.service": "notes.Store",
                                    "rpc.method": "Get"}, parent=1),
    )  # fmt: skip
    assert {name: op.kind for name, op in ops(records).items()} == {
        "POST /ask": "other",
        "GET": "other",
        "notes.Store/Get": "other",
    }
    (trace,) = [r for _, r in records if r.type == "trace"]
    assert trace.metadata["unknown_kind_spans"] == 0


CHAT_WITHOUT_CONTENT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}


@pytest.mark.parametrize(
    ("attributes", "scope", "instrumentation", "switch"),
    [
        (CHAT_WITHOUT_CONTENT, "opentelemetry.instrumentation.openai_v2", "OpenTelemetry GenAI",
         "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"),
        ({"openinference.span.kind": "LLM", "llm.model_name": "m"},
         "openinference.instrumentation.openai", "OpenInference", "OPENINFERENCE_HIDE_INPUTS"),
        ({"llm.request.type": "chat", "gen_ai.request.model": "m"},
         "opentelemetry.instrumentation.openai.v1", "OpenLLMetry", "TRACELOOP_TRACE_CONTENT=true"),
        (CHAT_WITHOUT_CONTENT, "pydantic-ai", "pydantic-ai", "include_content=True"),
        ({"ai.operationId": "ai.generateText.doGenerate"}, "ai", "Vercel AI SDK",
         "recordInputs: true"),
    ],
)  # fmt: skip
def test_a_model_call_without_content_names_its_instrumentations_switch(
    tmp_path: Path, attributes: dict[str, Any], scope: str, instrumentation: str, switch: str
) -> None:
    document = request(
        around(1, "ask", CASE),
        span(2, "chat m", attributes, parent=1),
    )
    document["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"] = scope
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(document))
    records = [record for _, record in read_otlp(path)]
    [off] = records[0].metadata["content_off"]
    assert off["instrumentation"].startswith(instrumentation) and off["spans"] == 1
    findings = {f.code: f for f in check_records(records)}
    # the case's answer op is there but reads nothing: the finding says which switch, and the
    # answer finding's fix says it too instead of advice for memtrace's SDK
    assert switch in findings["content-not-captured"].fix
    assert switch in findings["no-answer-operation"].fix
    assert "read(question)" not in findings["no-answer-operation"].fix


def test_openlit_is_told_apart_by_its_resource(load: Callable[..., Any], tmp_path: Path) -> None:
    document = request(around(1, "ask", CASE), span(2, "chat m", CHAT_WITHOUT_CONTENT, parent=1))
    document["resourceSpans"][0]["resource"]["attributes"].append(
        {"key": "telemetry.sdk.name", "value": {"stringValue": "openlit"}}
    )
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(document))
    findings = {f.code: f for f in check_records(record for _, record in read_otlp(path))}
    assert "capture_message_content=True" in findings["content-not-captured"].fix


def test_spans_with_their_content_or_with_none_to_give_ask_for_no_switch(
    load: Callable[..., Any],
) -> None:
    records = load(
        around(1, "ask", CASE),
        span(2, "GET /notes", {"http.request.method": "GET", "url.path": "/notes"}, parent=1),
        span(
            3,
            "chat m",
            {
                **CHAT_WITHOUT_CONTENT,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
                ),
            },
            parent=1,
        ),
    )
    assert records[0][1].metadata["content_off"] == []
    assert "content-not-captured" not in {f.code for f in check_records(r for _, r in records)}
