"""The LLM judge end to end: real Neo4j, real openai client, a local scripted HTTP server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import SecretStr

from memtrace.admin import delete_trace
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.llm_judge import PROMPT_VERSION, LLMJudge
from memtrace.attribution.pipeline import Options, analyse_case, attribute_cases
from memtrace.attribution.store import AttributionStore
from memtrace.db import Database
from memtrace.llm import LLMClient
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.settings import LLMSettings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def trace_id(db: Database, shared_data: Path) -> Iterator[str]:
    trace = f"t{uuid.uuid4().hex[:10]}-llm"
    load_paths(
        db,
        [str(shared_data / "smartcomment" / "locomo_locomo-2.json")],
        LoadOptions(trace_id=trace),
    )
    yield trace
    delete_trace(db, trace)


def verdict_json(faulty: bool, error_type: str | None = None) -> str:
    return json.dumps(
        {"faulty": faulty, "decisive": faulty, "error_type": error_type,
         "reason": "scripted", "confidence": 0.7}
    )  # fmt: skip


def judge(server: FakeOpenAI, cache: Path | None, **kwargs: object) -> LLMJudge:
    settings = LLMSettings(base_url=server.base_url, api_key=SecretStr("k"), model="m",
                           timeout_seconds=2.0)  # fmt: skip
    client = LLMClient(settings, cache, sleep=lambda _: None, **kwargs)  # type: ignore[arg-type]
    return LLMJudge(client)


def retrieval_case(db: Database, trace_id: str) -> tuple[str, int, str]:
    """A case labeled RetrievalError, the index of its retrieval candidate and that op's id."""
    rows = db.run(
        "MATCH (c:Case {trace_id: $t})-[l:LABELED {error_type: 'RetrievalError'}]->(o) "
        "RETURN c.id AS case_id, o.id AS op_id ORDER BY case_id LIMIT 1",
        t=trace_id,
    )
    case_id, op_id = rows[0]["case_id"], rows[0]["op_id"]
    analysis = analyse_case(AttributionStore(db), OfflineJudge(), trace_id, case_id, Options())
    index = [c.op.id for c in analysis.candidates].index(op_id)
    return case_id, index, op_id


def test_linear_walk_stops_at_the_first_decisive_op_and_caches(
    fake_openai: FakeOpenAI, db: Database, trace_id: str, tmp_path: Path
) -> None:
    case_id, index, op_id = retrieval_case(db, trace_id)
    replies = [Reply(content=verdict_json(False)) for _ in range(index)]
    fake_openai.script(
        *replies, Reply(content="{not json"), Reply(content=verdict_json(True, "RetrievalError"))
    )
    llm = judge(fake_openai, tmp_path)
    verdict = analyse_case(AttributionStore(db), llm, trace_id, case_id, Options()).verdict
    assert verdict.op_id == op_id and verdict.error_type == "RetrievalError"
    assert verdict.llm_calls == index + 2  # one repair round for the malformed reply
    assert verdict.tokens_in == 11 * (index + 2) and verdict.tokens_out == 7 * (index + 2)
    assert verdict.judge == "llm" and verdict.model == "m"
    first = fake_openai.chat_requests[0].body["messages"]
    assert PROMPT_VERSION in first[0]["content"]
    assert "operation" in first[1]["content"] and "Question:" in first[1]["content"]
    sent = len(fake_openai.chat_requests)
    again = analyse_case(AttributionStore(db), judge(fake_openai, tmp_path), trace_id, case_id,
                         Options()).verdict  # fmt: skip
    assert (again.op_id, again.error_type, again.llm_calls) == (op_id, "RetrievalError", 0)
    assert len(fake_openai.chat_requests) == sent  # the re-run made zero calls


def test_binary_search_asks_log_n_questions(
    fake_openai: FakeOpenAI, db: Database, trace_id: str
) -> None:
    case_id, index, op_id = retrieval_case(db, trace_id)
    analysis = analyse_case(AttributionStore(db), OfflineJudge(), trace_id, case_id, Options())
    n = len(analysis.candidates)

    def intact(position: int) -> Reply:
        return Reply(content=json.dumps({"intact": position < index, "reason": "scripted"}))

    # Replay the binary search's probe order to script the replies.
    low, high, probes = 0, n - 1, []
    while low <= high:
        middle = (low + high) // 2
        probes.append(middle)
        low, high = (middle + 1, high) if middle < index else (low, middle - 1)
    fake_openai.script(
        *(intact(p) for p in probes), Reply(content=verdict_json(True, "RetrievalError"))
    )
    verdict = analyse_case(AttributionStore(db), judge(fake_openai, None), trace_id, case_id,
                           Options(strategy="binary")).verdict  # fmt: skip
    assert verdict.op_id == op_id and verdict.error_type == "RetrievalError"
    assert verdict.llm_calls == len(probes) + 1 <= n.bit_length() + 1


def test_llm_failures_are_recorded_per_case_and_the_run_goes_on(
    fake_openai: FakeOpenAI, db: Database, trace_id: str
) -> None:
    case_id, _, _ = retrieval_case(db, trace_id)
    fake_openai.script(Reply(status=429), Reply(status=500), Reply(status=500))
    fake_openai.default = Reply(content=verdict_json(True, "ResponseError"))
    llm = judge(fake_openai, None, max_retries=1)
    cases = [(trace_id, case_id), (trace_id, case_id)]
    verdicts = attribute_cases(AttributionStore(db), llm, cases, Options(), workers=1)
    assert verdicts[0].error is not None and "HTTP 500" in verdicts[0].error
    assert verdicts[0].op_id is None
    # The failed case still records what it sent (the 429 and its retry) and what it checked.
    assert verdicts[0].llm_calls == 2 and len(verdicts[0].checked) == 1
    assert verdicts[1].error is None and verdicts[1].error_type == "ResponseError"


def test_timeouts_become_case_errors(fake_openai: FakeOpenAI, db: Database, trace_id: str) -> None:
    case_id, _, _ = retrieval_case(db, trace_id)
    fake_openai.default = Reply(content=verdict_json(False), delay=3.0)
    llm = judge(fake_openai, None, max_retries=0)
    [verdict] = attribute_cases(
        AttributionStore(db), llm, [(trace_id, case_id)], Options(), workers=1
    )
    assert verdict.error is not None and "timed out" in verdict.error


def test_a_model_that_never_commits_still_gets_a_verdict_with_what_it_checked(
    fake_openai: FakeOpenAI, db: Database, trace_id: str
) -> None:
    """Constant replies (faulty but never decisive; intact everywhere) end at the answer op."""
    case_id, _, _ = retrieval_case(db, trace_id)
    analysis = analyse_case(AttributionStore(db), OfflineJudge(), trace_id, case_id, Options())
    answer = analysis.anchor.answer
    assert answer is not None
    fake_openai.responder = lambda body: Reply(
        content=json.dumps({"intact": True, "reason": "fine"})
        if "still intact" in json.dumps(body["messages"])
        else json.dumps({"faulty": True, "decisive": False})
    )
    for strategy in ("linear", "binary"):
        verdict = analyse_case(AttributionStore(db), judge(fake_openai, None), trace_id,
                               case_id, Options(strategy=strategy)).verdict  # fmt: skip
        assert (verdict.op_id, verdict.error_type) == (answer.id, "ResponseError"), strategy
        assert verdict.confidence == 0.0 and "last step" in verdict.reason
        assert verdict.checked and len(verdict.checked) == verdict.llm_calls
