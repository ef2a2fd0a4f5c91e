"""Registries by name: the CLI offers exactly what they hold, unknown names fail clearly, and
factories get their settings passed in."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from memtrace.attribution.counterfactual import CaseReplayer
from memtrace.attribution.hybrid import HybridJudge
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.llm_judge import LLMJudge
from memtrace.attribution.registry import (
    JUDGES,
    choose_judge,
    default_judge,
    embedder,
    make_judge,
)
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.cli import cli
from memtrace.cli.options import choice
from memtrace.errors import ConfigError
from memtrace.settings import LLMSettings, Neo4jSettings, Settings
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.params import Params
from memtrace.systems.rankers import BM25Ranker
from memtrace.systems.registry import (
    BACKENDS,
    FAULT_TYPES,
    RANKERS,
    REFERENCE_SYSTEMS,
    SYSTEM_SPELLINGS,
    SYSTEMS,
    make_backend,
    make_ranker,
    make_system,
)


def settings(base_url: str | None = None) -> Settings:
    return Settings(
        home=Path("/nonexistent"),
        neo4j=Neo4jSettings(),
        llm=LLMSettings(base_url=base_url, embedding_model="my-embedder"),
    )


def choices(command: str, option: str) -> list[str]:
    resolved = cli.get_command(click.Context(cli), command)
    assert resolved is not None
    [param] = [p for p in resolved.params if p.name == option]
    assert isinstance(param.type, click.Choice)
    return list(param.type.choices)


def test_the_cli_offers_what_the_registries_hold() -> None:
    run = cli.get_command(click.Context(cli), "run")
    assert run is not None
    [system] = [p for p in run.params if p.name == "system"]
    assert isinstance(system.type, click.Choice)
    assert sorted(system.type.choices) == sorted(SYSTEMS)
    assert choices("run", "backend") == list(BACKENDS)
    assert choices("run", "retriever") == list(RANKERS)
    assert choices("attribute", "judge") == ["auto", *JUDGES]
    assert choices("explain", "judge") == ["auto", *JUDGES]


def test_the_registries_derive_from_what_each_system_class_declares() -> None:
    assert set(SYSTEM_SPELLINGS.values()) == set(SYSTEMS)
    assert (
        SYSTEM_SPELLINGS["naiverag"] == "rag" and SYSTEM_SPELLINGS["long-context"] == "long-context"
    )
    assert {n: c.fault_types for n, c in SYSTEMS.items() if c.fault_types} == FAULT_TYPES
    assert "mem0-lib" not in FAULT_TYPES and "mem0-lib" not in REFERENCE_SYSTEMS
    assert all(c.answer_op == "question-answering" for c in SYSTEMS.values())


def test_make_system_passes_keyword_options_to_the_factory() -> None:
    params = Params()
    system = make_system("mem0", OfflineBackend(), params=params, faults=())
    assert isinstance(system, Mem0System) and system.params is params


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: make_system("no-such", OfflineBackend()), "unknown system 'no-such'"),
        (lambda: make_backend("no-such"), "unknown backend 'no-such'"),
        (lambda: make_ranker("no-such"), "unknown retriever 'no-such'"),
        (lambda: make_judge("no-such", settings()), "unknown judge 'no-such'"),
    ],
)
def test_unknown_names_list_the_known_ones(make: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        make()  # type: ignore[operator]
    assert "expected one of" in str(raised.value)


def test_endpoint_factories_need_settings_passed_in() -> None:
    with pytest.raises(ConfigError, match="openai backend needs settings"):
        make_backend("openai")
    with pytest.raises(ConfigError, match="embeddings needs settings"):
        make_ranker("embeddings")
    assert isinstance(make_backend("offline"), OfflineBackend)
    assert isinstance(make_ranker("bm25"), BM25Ranker)
    ranker = make_ranker("embeddings", settings("http://127.0.0.1:9/v1"))
    assert getattr(ranker, "model", None) == "my-embedder"  # from the settings, not the env


def test_the_default_judge_follows_the_endpoint_setting() -> None:
    assert default_judge(settings()) == "offline"
    assert isinstance(make_judge(None, settings()), OfflineJudge)
    assert default_judge(settings("http://127.0.0.1:9/v1")) == "hybrid"
    judge = make_judge(None, settings("http://127.0.0.1:9/v1"))
    assert isinstance(judge, HybridJudge) and judge.reads_operations
    assert isinstance(judge.llm, LLMJudge) and isinstance(judge.offline, OfflineJudge)
    assert isinstance(make_judge("llm", settings("http://127.0.0.1:9/v1")), LLMJudge)


def test_auto_replays_where_every_trace_of_the_run_can_be_replayed() -> None:
    asked: list[str] = []

    def refusal(trace_id: str) -> str | None:
        asked.append(trace_id)
        return None if trace_id.startswith("mem0") else f"trace {trace_id!r} is imported"

    chosen = choose_judge("auto", settings(), ["mem0-1", "mem0-2"], refusal)
    assert (chosen.name, asked) == ("replay", ["mem0-1", "mem0-2"])
    assert "every trace of the run can be replayed" in chosen.why
    assert choose_judge(None, settings(), ["mem0-1"], refusal).name == "replay"


def test_auto_falls_back_to_hybrid_with_an_endpoint_else_offline_and_says_why() -> None:
    def refusal(trace_id: str) -> str | None:
        return None if trace_id.startswith("mem0") else f"trace {trace_id!r} is imported"

    offline = choose_judge("auto", settings(), ["mem0-1", "otlp-1"], refusal)
    assert offline.name == "offline"
    assert offline.why == "no replay (trace 'otlp-1' is imported); no LLM endpoint"
    hybrid = choose_judge("auto", settings("http://127.0.0.1:9/v1"), ["otlp-1"], refusal)
    assert hybrid.name == "hybrid" and "an LLM endpoint is configured" in hybrid.why
    assert choose_judge("auto", settings(), [], refusal).name == "offline"  # nothing to replay


def test_a_named_judge_is_used_as_asked_without_asking_the_replay_side() -> None:
    def refusal(trace_id: str) -> str | None:
        raise AssertionError("a named judge needs no replay check")

    assert choose_judge("offline", settings(), ["mem0-1"], refusal).name == "offline"
    assert choose_judge("replay", settings(), ["otlp-1"], refusal).why == "asked for"


def test_choice_types_a_checked_value() -> None:
    assert choice("binary", ("linear", "binary")) == "binary"
    with pytest.raises(click.BadParameter, match="'x' is not one of linear, binary"):
        choice("x", ("linear", "binary"))


def test_case_needs_trace_is_a_usage_error_before_any_connection() -> None:
    result = CliRunner().invoke(cli, ["attribute", "--case", "c1", "--uri", "bolt://127.0.0.1:1"])
    assert result.exit_code == 2 and "--case needs --trace" in result.output


def test_run_load_uses_the_connection_options(tmp_path: Path) -> None:
    """The traces are written; the load goes to the --uri given (nothing listens there)."""
    args = ["run", "rag", "--conversations", "1", "--questions", "2", "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, "--load", "--uri", "bolt://127.0.0.1:1"])
    assert result.exit_code == 1, result.output
    assert "bolt://127.0.0.1:1" in result.output and "Traceback" not in result.output
    assert [p.name for p in tmp_path.glob("*.jsonl")] == ["rag-locomo-1.jsonl"]


def test_the_replay_judge_gets_the_replayers_it_is_handed_and_needs_them() -> None:
    class NoReplayers:
        def for_trace(self, trace_id: str) -> CaseReplayer:
            raise AssertionError("a factory replays nothing")

    replayers = NoReplayers()
    judge = make_judge("replay", settings(), replayers)
    assert isinstance(judge, ReplayJudge) and judge.replayers is replayers
    with pytest.raises(ConfigError) as raised:
        make_judge("replay", settings())
    assert str(raised.value) == "the replay judge needs the traces' replayers (none were passed)"
    with pytest.raises(ConfigError) as unknown:
        make_judge("no-such", settings())
    assert (
        str(unknown.value)
        == "unknown judge 'no-such' (expected one of offline, llm, hybrid, replay)"
    )


def test_the_hybrid_judge_asks_the_reading_questions_through_its_own_client() -> None:
    judge = make_judge("hybrid", settings("http://127.0.0.1:9/v1"))
    assert isinstance(judge, HybridJudge) and isinstance(judge.llm, LLMJudge)
    assert judge.client is judge.llm.client


def test_auto_says_which_trace_it_replays_and_why_it_does_not() -> None:
    def refusal(trace_id: str) -> str | None:
        return None

    one = choose_judge("auto", settings(), ["mem0-1"], refusal)
    assert one.why == "trace 'mem0-1' can be replayed: executed counterfactuals"
    nothing = choose_judge("auto", settings("http://127.0.0.1:9/v1"), [], refusal)
    assert nothing.why == "no trace to replay; an LLM endpoint is configured"


def test_dense_evidence_retrieval_embeds_with_the_configured_model(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    configured = Settings(
        home=tmp_path,
        neo4j=Neo4jSettings(),
        llm=LLMSettings(base_url=fake_openai.base_url, embedding_model="my-embedder"),
    )
    assert embedder(configured, "bm25") is None
    embed = embedder(configured, "dense")
    assert embed is not None
    vectors = embed(["alpha beta", "gamma"])
    assert len(vectors) == 2 and vectors[0] != vectors[1]
    [request] = [r for r in fake_openai.requests if r.path.endswith("/embeddings")]
    assert request.body["model"] == "my-embedder"
    assert request.body["input"] == ["alpha beta", "gamma"]
