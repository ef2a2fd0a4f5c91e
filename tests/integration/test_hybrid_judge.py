"""The hybrid judge end to end: real Neo4j, real openai client, a local scripted HTTP server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import SecretStr

from memtrace.admin import delete_trace
from memtrace.attribution.hybrid import HybridJudge
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.llm_judge import LLMJudge
from memtrace.attribution.pipeline import Options, analyse_case, attribute_cases
from memtrace.attribution.records import memtrace_record
from memtrace.attribution.store import AttributionStore
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.llm import LLMClient
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.settings import LLMSettings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def trace_id(db: Database, shared_data: Path) -> Iterator[str]:
    trace = f"t{uuid.uuid4().hex[:10]}-hybrid"
    load_paths(
        db,
        [str(shared_data / "smartcomment" / "locomo_locomo-2.json")],
        LoadOptions(trace_id=trace),
    )
    yield trace
    db.run("MATCH (a:Attribution {trace_id: $t}) DETACH DELETE a", t=trace)
    delete_trace(db, trace)


def hybrid(server: FakeOpenAI, **kwargs: Any) -> HybridJudge:
    settings = LLMSettings(base_url=server.base_url, api_key=SecretStr("k"), model="small",
                           timeout_seconds=2.0)  # fmt: skip
    return HybridJudge(LLMJudge(LLMClient(settings, None, sleep=lambda _: None, **kwargs)))


def check(faulty: bool, decisive: bool, **extra: Any) -> Reply:
    reply = {"faulty": faulty, "decisive": decisive, "error_type": None, "reason": "scripted",
             "confidence": 0.9, **extra}  # fmt: skip
    return Reply(content=json.dumps({k: v for k, v in reply.items() if v is not ...}))


def labeled(db: Database, trace_id: str) -> list[dict[str, Any]]:
    return db.run(
        "MATCH (c:Case {trace_id: $t})-[l:LABELED]->(o) "
        "RETURN c.id AS case_id, o.id AS op_id, l.error_type AS error_type ORDER BY case_id",
        t=trace_id,
    )


def retrieval_case(db: Database, trace_id: str) -> tuple[str, list[str]]:
    """A RetrievalError case and its candidates' op ids (the offline judge blames the label)."""
    case = next(r for r in labeled(db, trace_id) if r["error_type"] == "RetrievalError")
    analysis = analyse_case(
        AttributionStore(db), OfflineJudge(), trace_id, case["case_id"], Options()
    )
    assert analysis.verdict.op_id == case["op_id"]
    return case["case_id"], [c.op.id for c in analysis.candidates]


def test_an_uninformative_model_leaves_every_offline_verdict_standing(
    fake_openai: FakeOpenAI, db: Database, trace_id: str
) -> None:
    # What Qwen2.5-Coder-0.5B answered to everything: faulty, never decisive.
    fake_openai.default = check(True, False, confidence=...)
    store = AttributionStore(db)
    cases = [(trace_id, r["case_id"]) for r in labeled(db, trace_id)]
    offline = attribute_cases(store, OfflineJudge(), cases, Options(), workers=2)
    mixed = attribute_cases(store, hybrid(fake_openai), cases, Options(), workers=2)
    assert [(v.op_id, v.error_type) for v in mixed] == [(v.op_id, v.error_type) for v in offline]
    assert all(v.error is None and v.overridden_from is None for v in mixed)
    assert all(1 <= v.llm_calls <= 3 and v.tokens_in > 0 for v in mixed)  # proposal + rivals
    assert all(v.judge == "hybrid" and v.model == "small" for v in mixed)


def test_a_decisive_well_formed_rival_moves_the_verdict_and_is_recorded(
    fake_openai: FakeOpenAI, db: Database, trace_id: str
) -> None:
    case_id, ops = retrieval_case(db, trace_id)
    offline = analyse_case(AttributionStore(db), OfflineJudge(), trace_id, case_id, Options())
    assert offline.verdict.op_id is not None
    proposed = ops.index(offline.verdict.op_id)
    # Asked in order: the proposal, the candidate before it, the one after it.
    fake_openai.script(
        check(False, False, reason="the retrieved context holds it"),
        check(True, True, error_type="ExtractionError", reason="the fact was never stored"),
        check(True, True),
    )
    verdict = analyse_case(
        AttributionStore(db), hybrid(fake_openai), trace_id, case_id, Options()
    ).verdict
    assert verdict.op_id == ops[proposed - 1] and verdict.error_type == "ExtractionError"
    assert verdict.overridden_from == ops[proposed]
    assert verdict.overridden_type == "RetrievalError"
    assert "the fact was never stored" in verdict.reason and verdict.llm_calls == 3
    record = memtrace_record(verdict)
    assert record["overridden_from"] == {"op_id": ops[proposed], "error_type": "RetrievalError"}


@pytest.mark.parametrize(
    ("proposal", "rival"),
    [
        # the rival's reply lacks its confidence: not well-formed enough to override
        (check(False, False), check(True, True, confidence=...)),
        # the rival is decisive but unsure
        (check(False, False), check(True, True, confidence=0.6)),
        # the model also confirms the proposal: nothing to move
        (check(True, True), check(True, True)),
        # an invalid reply twice: the offline verdict stands
        (Reply(content="no idea"), Reply(content="still no idea")),
    ],
)
def test_anything_short_of_a_decisive_answer_keeps_the_offline_verdict(
    fake_openai: FakeOpenAI, db: Database, trace_id: str, proposal: Reply, rival: Reply
) -> None:
    case_id, _ = retrieval_case(db, trace_id)
    offline = analyse_case(AttributionStore(db), OfflineJudge(), trace_id, case_id, Options())
    fake_openai.script(proposal, rival)
    fake_openai.default = check(False, False)
    verdict = analyse_case(
        AttributionStore(db), hybrid(fake_openai), trace_id, case_id, Options()
    ).verdict
    assert (verdict.op_id, verdict.error_type) == (
        offline.verdict.op_id,
        offline.verdict.error_type,
    )
    assert verdict.overridden_from is None and verdict.error is None
    assert verdict.llm_calls >= 2  # spent, and counted, even when the LLM changed nothing


def test_a_failing_endpoint_keeps_the_offline_verdict_and_counts_the_requests(
    fake_openai: FakeOpenAI, db: Database, trace_id: str
) -> None:
    case_id, _ = retrieval_case(db, trace_id)
    offline = analyse_case(AttributionStore(db), OfflineJudge(), trace_id, case_id, Options())
    fake_openai.default = Reply(status=503)
    verdict = analyse_case(
        AttributionStore(db), hybrid(fake_openai, max_retries=2), trace_id, case_id, Options()
    ).verdict
    assert verdict.op_id == offline.verdict.op_id and verdict.error is None
    assert "LLM check failed" in verdict.reason and "HTTP 503" in verdict.reason
    assert verdict.llm_calls == 3  # the first request and its two retries


def test_cli_defaults_to_hybrid_with_an_endpoint_and_takes_llm_flags(
    fake_openai: FakeOpenAI,
    db: Database,
    trace_id: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    case_id, _ = retrieval_case(db, trace_id)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("MEMTRACE_LLM_CONCURRENCY", "9")
    # a model name of its own: the home's LLM cache must not answer for the scripted server
    monkeypatch.setenv("MEMTRACE_LLM_MODEL", f"scripted-{trace_id}")
    fake_openai.default = check(True, False)
    args = ["attribute", "--trace", trace_id, "--case", case_id, "--no-write", "--json",
            "--llm-timeout", "5", "--llm-concurrency", "1"]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.output)
    assert record["judge"] == "hybrid" and record["llm_calls"] >= 1
    bad = CliRunner().invoke(cli, [*args[:-1], "0"])
    assert bad.exit_code == 2 and "--llm-concurrency" in bad.output
