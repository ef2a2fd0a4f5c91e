"""memtrace.llm against a real local HTTP server, through the real openai client."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import BaseModel, SecretStr

from memtrace import llm
from memtrace.errors import LLMError
from memtrace.llm import LLMClient, Usage, parse_json_reply, run_concurrently
from memtrace.settings import LLMSettings


class Verdict(BaseModel):
    faulty: bool
    reason: str


GOOD = json.dumps({"faulty": True, "reason": "dropped the fact"})


def make_client(
    server: FakeOpenAI, tmp_path: Path | None = None, timeout: float = 5.0, **kwargs: object
) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    settings = LLMSettings(
        base_url=server.base_url,
        api_key=SecretStr("sk-secret-test-key"),
        model="judge-model",
        timeout_seconds=timeout,
    )
    client = LLMClient(settings, tmp_path, sleep=sleeps.append, **kwargs)  # type: ignore[arg-type]
    return client, sleeps


def test_text_completion_counts_tokens(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(content="hello", prompt_tokens=20, completion_tokens=3))
    client, _ = make_client(fake_openai)
    result = client.complete("say hello", system="be brief", temperature=0)
    assert result.text == "hello"
    assert result.usage == Usage(calls=1, tokens_in=20, tokens_out=3)
    body = fake_openai.chat_requests[0].body
    assert body["model"] == "judge-model"
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["temperature"] == 0
    assert fake_openai.chat_requests[0].headers["authorization"] == "Bearer sk-secret-test-key"


@pytest.fixture(autouse=True)
def forget_output_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's server is a new endpoint, but ports get reused: start with no memory."""
    monkeypatch.setattr(llm, "_known_modes", {})


def test_structured_output_is_validated(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(content=f"```json\n{GOOD}\n```"), Reply(content=GOOD))
    client, _ = make_client(fake_openai)
    result = client.complete_json("judge this", Verdict)
    assert result.value == Verdict(faulty=True, reason="dropped the fact")
    body = fake_openai.chat_requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == Verdict.model_json_schema()
    assert '"faulty": boolean, "reason": string' in body["messages"][0]["content"]
    client.complete_json("judge that", Verdict)  # the mode is known: no second probe
    assert [r.body["response_format"]["type"] for r in fake_openai.chat_requests] == [
        "json_schema",
        "json_schema",
    ]
    assert client.output_mode() == "json_schema"


def test_a_server_refusing_schemas_gets_json_object_once_detected(
    fake_openai: FakeOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.rejected_formats = {"json_schema"}
    fake_openai.script(Reply(content=GOOD), Reply(content=GOOD))
    client, _ = make_client(fake_openai, tmp_path)
    with caplog.at_level(logging.INFO, logger="memtrace.llm"):
        result = client.complete_json("judge this", Verdict)
    assert result.value.faulty is True
    assert result.usage.calls == 2  # the refused request was sent too
    assert "refused response_format json_schema" in caplog.text
    assert "structured output via json_object" in caplog.text
    formats = [r.body["response_format"]["type"] for r in fake_openai.chat_requests]
    assert formats == ["json_schema", "json_object"]
    # Remembered for endpoint + model, also by a new client (a new process) on the same home.
    llm._known_modes.clear()
    again, _ = make_client(fake_openai, tmp_path)
    assert again.output_mode() == "json_object"
    again.complete_json("judge that", Verdict)
    assert fake_openai.chat_requests[-1].body["response_format"] == {"type": "json_object"}
    assert len(fake_openai.chat_requests) == 3


def test_a_500_naming_response_format_is_a_refusal_not_an_outage(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.rejected_formats = {"json_schema"}
    fake_openai.rejected_status = 500
    fake_openai.script(Reply(content=GOOD))
    client, sleeps = make_client(fake_openai)
    assert client.complete_json("judge this", Verdict).usage.calls == 2
    assert sleeps == [] and client.output_mode() == "json_object"  # no retries of the 500


def test_concurrent_first_calls_probe_once(fake_openai: FakeOpenAI) -> None:
    fake_openai.rejected_formats = {"json_schema"}
    fake_openai.default = Reply(content=GOOD, delay=0.05)
    client, _ = make_client(fake_openai)
    results = run_concurrently(lambda i: client.complete_json(f"q{i}", Verdict), range(6), 6)
    assert all(not isinstance(r, LLMError) for r in results)
    formats = [r.body["response_format"]["type"] for r in fake_openai.chat_requests]
    assert formats.count("json_schema") == 1 and formats.count("json_object") == 6


def test_a_server_refusing_every_format_gets_plain_text_and_a_repair(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.rejected_formats = {"json_schema", "json_object"}
    fake_openai.script(Reply(content="The op is faulty."), Reply(content=GOOD))
    client, _ = make_client(fake_openai)
    result = client.complete_json("judge this", Verdict)
    assert result.value.faulty is True and result.usage.calls == 4
    bodies = [r.body for r in fake_openai.chat_requests]
    assert [b.get("response_format", {}).get("type") for b in bodies] == [
        "json_schema",
        "json_object",
        None,
        None,
    ]
    assert "invalid" in bodies[-1]["messages"][-1]["content"]
    assert client.output_mode() == "text"


def test_a_bad_request_in_the_last_mode_is_an_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(status=400))
    client, _ = make_client(fake_openai, output_mode="text")
    with pytest.raises(LLMError, match="HTTP 400") as info:
        client.complete_json("judge this", Verdict)
    assert info.value.usage == Usage(calls=1)


class WithDefaults(BaseModel):
    faulty: bool
    confidence: float = 0.5


def test_missing_fields_with_defaults_are_not_failures(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(content='{"faulty": false}'))
    client, _ = make_client(fake_openai)
    assert client.complete_json("judge", WithDefaults).value == WithDefaults(faulty=False)
    assert "(optional)" in fake_openai.chat_requests[0].body["messages"][0]["content"]


def test_malformed_json_is_repaired_once(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(content="{not json"), Reply(content=GOOD))
    client, _ = make_client(fake_openai)
    result = client.complete_json("judge this", Verdict)
    assert result.value.faulty is True
    assert result.usage.calls == 2
    repair = fake_openai.chat_requests[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": "{not json"}
    assert "invalid" in repair[-1]["content"]


def test_invalid_twice_raises(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(content='{"faulty": "maybe"}'), Reply(content="still no"))
    client, _ = make_client(fake_openai)
    with pytest.raises(LLMError, match="invalid JSON twice") as info:
        client.complete_json("judge this", Verdict)
    assert len(fake_openai.chat_requests) == 2
    assert info.value.usage == Usage(calls=2, tokens_in=22, tokens_out=14)  # counted, not lost


def test_429_then_success_backs_off(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        Reply(status=429), Reply(status=429, headers={"retry-after": "1.5"}), Reply(content="ok")
    )
    client, sleeps = make_client(fake_openai, backoff_seconds=0.25)
    assert client.complete("x").text == "ok"
    assert sleeps == [0.25, 1.5]
    assert len(fake_openai.chat_requests) == 3


def test_500_exhausts_bounded_retries(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*[Reply(status=500)] * 3)
    client, sleeps = make_client(fake_openai, max_retries=2)
    with pytest.raises(LLMError) as info:
        client.complete("x")
    assert "HTTP 500" in str(info.value) and "after 2 retries" in str(info.value)
    assert "sk-secret-test-key" not in str(info.value)
    assert len(fake_openai.chat_requests) == 3
    assert len(sleeps) == 2


def test_client_errors_are_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(status=401))
    client, sleeps = make_client(fake_openai)
    with pytest.raises(LLMError, match="HTTP 401"):
        client.complete("x")
    assert sleeps == [] and len(fake_openai.chat_requests) == 1


def test_timeout_is_retried_then_reported(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(content="late", delay=1.0), Reply(content="late", delay=1.0))
    client, _ = make_client(fake_openai, timeout=0.2, max_retries=1)
    with pytest.raises(LLMError, match="timed out after 1 retries") as info:
        client.complete("x")
    assert "MEMTRACE_LLM_TIMEOUT" in str(info.value) and "--llm-concurrency" in str(info.value)
    assert info.value.usage == Usage(calls=2)


def test_timeout_then_success(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply(content="late", delay=1.0), Reply(content="fast"))
    client, sleeps = make_client(fake_openai, timeout=0.3)
    assert client.complete("x").text == "fast"
    assert len(sleeps) == 1


def test_cache_makes_reruns_free(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.script(Reply(content="{broken"), Reply(content=GOOD))
    client, _ = make_client(fake_openai, tmp_path)
    first = client.complete_json("judge this", Verdict)
    again, _ = make_client(fake_openai, tmp_path)  # a new process would see the same files
    second = again.complete_json("judge this", Verdict)
    assert second.value == first.value
    assert second.usage == Usage(cache_hits=1)
    assert len(fake_openai.chat_requests) == 2  # only the first run's two calls
    fake_openai.script(Reply(content=GOOD))
    other = again.complete_json("judge that", Verdict)  # a different prompt is a miss
    assert other.usage.calls == 1


def test_a_second_server_is_never_served_the_first_ones_cached_replies(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    # one model name, one request, one cache directory, two endpoints (issue 38: a second
    # scripted server got 4 of 24 judge calls, the rest came from the first one's cache)
    fake_openai.script(Reply(content="from the first"))
    first, _ = make_client(fake_openai, tmp_path)
    assert first.complete("judge this").text == "from the first"
    second_server = FakeOpenAI()
    second_server.start()
    try:
        second_server.script(Reply(content="from the second"))
        second, _ = make_client(second_server, tmp_path)
        answer = second.complete("judge this")
        assert (answer.text, answer.usage.calls, answer.usage.cache_hits) == (
            "from the second",
            1,
            0,
        )
        assert len(second_server.chat_requests) == 1
        again = first.complete("judge this")  # each endpoint keeps its own reply
        assert (again.text, again.usage.cache_hits) == ("from the first", 1)
    finally:
        second_server.stop()


def test_concurrency_is_bounded_and_ordered(fake_openai: FakeOpenAI) -> None:
    fake_openai.default = Reply(content="same", delay=0.1)
    client, _ = make_client(fake_openai)
    active = 0
    peak = 0
    lock = threading.Lock()

    def work(i: int) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        try:
            return f"{i}:{client.complete(f'prompt {i}').text}"
        finally:
            with lock:
                active -= 1

    results = run_concurrently(work, list(range(9)), max_workers=3)
    assert results == [f"{i}:same" for i in range(9)]
    assert peak == 3


def test_llm_concurrency_bounds_requests_in_flight_across_threads(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.default = Reply(content="ok", delay=0.15)
    settings = LLMSettings(base_url=fake_openai.base_url, model="m", concurrency=1)
    client = LLMClient(settings, None)
    results = run_concurrently(lambda i: client.complete(f"q{i}").text, list(range(4)), 4)
    assert results == ["ok"] * 4
    assert fake_openai.max_in_flight == 1  # four case workers, one request at a time


def test_concurrent_failures_stay_per_item(fake_openai: FakeOpenAI) -> None:
    client, _ = make_client(fake_openai, max_retries=0)
    fake_openai.default = None  # every call: 500 "script exhausted"
    results = run_concurrently(lambda p: client.complete(p).text, ["a", "b"], max_workers=2)
    assert all(isinstance(r, LLMError) for r in results)


def test_embeddings(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    client, _ = make_client(fake_openai, tmp_path)
    result = client.embed(["alpha beta", "gamma"], model="embedder")
    assert len(result.vectors) == 2 and len(result.vectors[0]) == 8
    assert result.usage.calls == 1
    assert client.embed(["alpha beta", "gamma"], model="embedder").usage.cache_hits == 1


def test_missing_endpoint_is_a_clear_error() -> None:
    with pytest.raises(LLMError, match="OPENAI_BASE_URL"):
        LLMClient(LLMSettings())


def test_parse_json_reply_rejects_prose() -> None:
    with pytest.raises(ValueError):
        parse_json_reply("Sure! here it is", Verdict)
