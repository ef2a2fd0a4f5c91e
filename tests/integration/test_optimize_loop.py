"""The optimizer end to end: real systems, real Neo4j (attribution, classes, lineage) and, for the
prompt mode, a local OpenAI-compatible server whose replies depend on the prompt text."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from pydantic import SecretStr

from memtrace.admin import delete_trace
from memtrace.attribution.judges import OfflineJudge
from memtrace.cli import cli
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.llm import LLMClient
from memtrace.optimize import OptimizeOptions, prompt_proposer, route, run_optimization
from memtrace.optimize.feedback import GraphFeedback
from memtrace.optimize.reference import ReferenceSystem
from memtrace.optimize.scoring import Budget, Evaluator
from memtrace.optimize.store import LineageStore
from memtrace.report.build import make_report
from memtrace.settings import LLMSettings
from memtrace.systems.config import SystemConfig
from memtrace.systems.locomo import SAMPLE_PATH, Conversation, Subset, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.openai_backend import OpenAIBackend
from memtrace.systems.prompts import QUESTION_ANSWERING

pytestmark = pytest.mark.integration

# A planted misconfiguration: one memory in the answer context starves the offline answers.
STARVED = SystemConfig().with_params(top_k=1)
SESSIONS = (1, 2, 3, 4)


def mem0(convs: Any, base: SystemConfig | None = STARVED) -> ReferenceSystem:
    """The reference mem0 offline on ``convs`` (a dict by number or a list), from ``base``."""
    listed = list(convs.values()) if isinstance(convs, dict) else list(convs)
    return ReferenceSystem("mem0", OfflineBackend(), listed, base=base)


def small_locomo(shared_data: Path) -> dict[int, Conversation]:
    """LoCoMo conversations 1-3, sessions 1-4, only the questions whose evidence they hold."""
    convs = load_locomo(
        shared_data / "locomo" / "locomo10.json",
        Subset(conversations=("1", "2", "3"), sessions=SESSIONS),
    )

    def held(evidence: str) -> bool:
        session = evidence.split(":")[0].removeprefix("D")
        return session.isdigit() and int(session) in SESSIONS

    return {
        c.number: replace(
            c, questions=tuple(q for q in c.questions if q.evidence and all(map(held, q.evidence)))
        )
        for c in convs
    }


def cleanup(db: Database, out: Path, run_id: str) -> None:
    for trace in out.rglob("traces/*/*.jsonl"):
        delete_trace(db, trace.stem)
    db.run(
        "MATCH (a:Attribution) WHERE a.run_id STARTS WITH $run_id DETACH DELETE a", run_id=run_id
    )
    LineageStore(db).delete(run_id)


@pytest.fixture
def opt_run(db: Database, run_id: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield run_id, tmp_path
    cleanup(db, tmp_path, run_id)


def test_routing_from_the_classes_of_a_seeded_graph(
    db: Database, opt_run: tuple[str, Path], shared_data: Path
) -> None:
    run_id, out = opt_run
    system = mem0([small_locomo(shared_data)[2]])
    starved = system.configuration()
    evaluator = Evaluator(system, {"train": ["2"]}, Budget(10), out / "evaluations.jsonl")
    feedback = GraphFeedback(
        db, OfflineJudge(), evaluator, out, run_id, budget=evaluator.budget, max_cases=100, seed=0
    )
    classes = feedback.classes(starved)
    failed = evaluator.cached(starved, "train")
    assert failed is not None and classes["cases"].sum() == len(failed.failed) > 0
    routing = route(classes, "parameters")
    by_op = {(c.op_name, c.error_type): c for c in routing.classes}
    retrieval = by_op[("memory_system.search_vector_store", "RetrievalError")]
    assert retrieval.targets == ("top_k",)  # it read top_k and the retriever (no range)
    for cls in routing.classes:  # a class's targets are only what its blamed op read
        row = classes[
            (classes["op_name"] == cls.op_name) & (classes["error_type"] == cls.error_type)
        ]
        assert set(cls.targets) <= set(row.iloc[0]["parameters"])
        assert cls.targets or cls.why_not
    prompts = route(classes, "prompts")
    answer = [c for c in prompts.classes if c.op_name == "question-answering"]
    assert all(c.targets == (QUESTION_ANSWERING,) for c in answer)
    # the classes are kept: asking again costs no attribution and no new system run
    made = evaluator.budget.runs_made
    columns = ["op_name", "error_type", "cases", "parameters", "case_ids"]
    again = feedback.classes(starved)
    assert again[columns].to_dict("records") == classes[columns].to_dict("records")
    assert evaluator.budget.runs_made == made


def test_the_offline_parameter_loop_raises_held_out_accuracy_and_records_lineage(
    db: Database, opt_run: tuple[str, Path], shared_data: Path
) -> None:
    run_id, out = opt_run
    convs = small_locomo(shared_data)
    options = OptimizeOptions("mem0", run_id, rounds=2, trials=4, budget=40, max_cases=100)
    result = run_optimization(options, mem0(convs), ["2"], ["1", "3"], out, db=db)
    assert result.final["heldout"] > result.initial["heldout"]
    assert result.final["train"] > result.initial["train"]
    assert result.budget_spent <= 40
    first = result.rounds[0]
    assert "top_k" in first.targets
    assert first.candidate is not None and first.candidate.accepted
    assert result.config.params["top_k"] > 1

    lineage = LineageStore(db).lineage(run_id)
    top_k = lineage[lineage["name"] == "top_k"].iloc[0]
    assert (top_k["kind"], top_k["version"], top_k["parent"], top_k["round"]) == (
        "parameter",
        2,
        1,
        1,
    )
    assert bool(top_k["accepted"]) and top_k["score_heldout"] > result.initial["heldout"]
    assert "mem0/memory_system.search_vector_store/RetrievalError" in top_k["classes"]
    labels = db.run(
        "MATCH (v:ConfigVersion {run_id: $r, name: 'top_k', version: 2}) RETURN labels(v) AS l",
        r=run_id,
    )
    assert "ParameterVersion" in labels[0]["l"]
    run = LineageStore(db).run(run_id)
    assert run is not None and run["final_heldout"] == result.final["heldout"]
    # the diagnostic report of the starting point gains the run's before/after section
    report = make_report(db, f"{run_id}-{STARVED.key()}", out / "report", optimization_run=run_id)
    html = next(p for p in report.files if p.suffix == ".html").read_text()
    assert f"Optimization {run_id}: before and after" in html
    before, after = result.initial["heldout"], result.final["heldout"]
    assert f"{before:.1%} -&gt; {after:.1%}" in html or f"{before:.1%} -> {after:.1%}" in html
    updates = json.loads((out / "update_results.json").read_text())
    assert updates["top_k@2"]["accepted"] is True
    assert updates["top_k@2"]["derived_from"] == "top_k@1"
    # every bundled optimizer query parses and the Browser line names its params
    assert get_query("optimizer/lineage").params == ("run_id",)


def test_routed_by_headroom_the_replays_are_paid_and_recorded(
    db: Database, opt_run: tuple[str, Path], shared_data: Path
) -> None:
    run_id, out = opt_run
    convs = small_locomo(shared_data)
    options = OptimizeOptions(
        "mem0", run_id, rounds=1, trials=3, budget=40, max_cases=100, route_by="headroom"
    )
    result = run_optimization(options, mem0(convs), ["2"], ["1", "3"], out, db=db)
    (first,) = result.rounds
    # the engine's step map and one replay per class with a target that is not the answer
    assert result.replays >= 2 and first.replays == result.replays
    assert result.budget_spent <= 40
    measured = [c for c in first.classes if c["headroom"] is not None]
    assert measured and all(c["headroom_why"] for c in measured)
    assert all(not c["targets"] for c in first.classes if (c["headroom"] or 0) <= 0)
    assert set(first.targets) == {t for c in first.classes for t in c["targets"]}
    stored = db.run(
        "MATCH (:OptimizationRun {id: $r})-[:FOUND]->(c:FailureClass) "
        "RETURN c.routed_by AS by, c.headroom AS headroom, c.why_not AS why_not",
        r=run_id,
    )
    assert {row["by"] for row in stored} == {"headroom"}
    assert any(row["headroom"] is not None for row in stored)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["replays"] == result.replays
    # a second run over the same classes cache reads the headroom without replaying, but pays it
    again = run_optimization(
        replace(options, run_id=f"{run_id}-again"), mem0(convs), ["2"], ["1", "3"],
        out / "again", db=db, classes_cache=out / "classes",
    )  # fmt: skip
    assert again.replays == result.replays
    LineageStore(db).delete(f"{run_id}-again")
    # the precise search oracle measures other headroom: replayed anew, cached apart, paid
    precise = run_optimization(
        replace(options, run_id=f"{run_id}-precise", search_repair="precise"), mem0(convs),
        ["2"], ["1", "3"], out / "precise", db=db, classes_cache=out / "classes",
    )  # fmt: skip
    LineageStore(db).delete(f"{run_id}-precise")
    assert precise.replays >= 1 and list((out / "classes").glob("*.headroom.precise.json"))
    by_key = {c["op_name"]: c for c in precise.rounds[0].classes}
    same = {c["op_name"]: c for c in first.classes}
    search = "memory_system.search_vector_store"
    # the oracle that drops distractors rescues at least as many
    assert by_key[search]["rescued"] >= same[search]["rescued"] >= 0


def test_cli_optimize_writes_files_memtrace_run_reads_and_resumes(
    db: Database, opt_run: tuple[str, Path], shared_data: Path
) -> None:
    run_id, out = opt_run
    (out / "base.toml").write_text("top_k = 1\n")
    args = [
        "optimize", "mem0", "--data", str(shared_data / "locomo" / "locomo10.json"),
        "--sessions", "1,2,3,4", "--questions", "20",
        "--train", "2", "--heldout", "1,3", "--test", "4", "--rounds", "1", "--trials", "3",
        "--budget", "30", "--params", str(out / "base.toml"), "--out", str(out / "run"),
        "--run-id", run_id, "--max-cases", "100", "--json",
    ]  # fmt: skip
    runner = CliRunner()
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert summary["final"]["heldout"] >= summary["initial"]["heldout"]
    assert "top_k" in summary["rounds"][0]["targets"]
    # the test split is reported after the round, and is not in the budget (1 + 2 runs initially)
    assert 0 <= summary["initial"]["test"] <= 1 and summary["rounds"][0]["test_after"] is not None
    assert summary["budget_spent"] == 3 + sum(
        (1 + len(r["trials"]) + (r["candidate"]["heldout"] is not None) * 2)
        for r in summary["rounds"]
    )
    (stored,) = db.run(
        "MATCH (r:OptimizationRun {id: $r}) RETURN r.final_test AS test, r.final_heldout AS held",
        r=run_id,
    )
    assert (stored["test"], stored["held"]) == (
        summary["final"]["test"],
        summary["final"]["heldout"],
    )
    again = runner.invoke(cli, args)
    assert again.exit_code == 0, again.output
    resumed = json.loads(again.stdout)
    assert resumed["runs_made"] == 0 and resumed["final"] == summary["final"]
    accepted = out / "run" / "accepted"
    replay = runner.invoke(
        cli,
        [
            "run", "mem0", "--out", str(out / "replay"), "--json",
            "--prompts", str(accepted / "prompts.toml"), "--params", str(accepted / "params.toml"),
        ],
    )  # fmt: skip
    assert replay.exit_code == 0, replay.output
    other = runner.invoke(cli, [*args, "--seed", "7"])
    assert other.exit_code == 1 and "other options (seed)" in other.output


# -- the prompt mode against a local server ----------------------------------------------------

QUOTE = "Quote the memory that answers the question, word for word."
WORDS = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return set(WORDS.findall(text.lower()))


class PromptDependentSystem:
    """Replies like a small model that follows its system prompt: it answers from the memories
    only when told to quote them. Reflection: the first request (and its repair) gets prose,
    later ones a prompt that adds the quoting instruction."""

    def __init__(self) -> None:
        self.reflections = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = next(m["content"] for m in messages if m["role"] == "user")
        if "<prompt>" in user:
            return self.reflect(user, repair=len(messages) > 2)
        if user.startswith("Memories:"):
            return Reply(self.answer(system, user))
        if user.startswith("Question:") and "Gold answer:" in user:
            gold = user.split("Gold answer: ", 1)[1].split("\n", 1)[0]
            answer = user.split("Generated answer: ", 1)[1]
            label = "CORRECT" if words(gold) <= words(answer) else "WRONG"
            return Reply(json.dumps({"reasoning": "token check", "label": label}))
        if user.startswith("{") and "new_fact" in user:
            return Reply(json.dumps({"actions": [{"event": "ADD", "id": None, "text": None}]}))
        return Reply(json.dumps({"facts": [user.split(": ", 1)[-1]]}))

    def answer(self, system: str, user: str) -> str:
        if "quote" not in system.lower():
            return "I am not sure."
        memories, question = user.split("\n\nQuestion: ", 1)
        lines = [line.split("] ", 1)[-1] for line in memories.splitlines()[1:]]
        asked = words(question.split("\nAnswer:")[0])
        return max(lines, key=lambda line: len(words(line) & asked), default="I am not sure.")

    def reflect(self, user: str, *, repair: bool) -> Reply:
        self.reflections += 1
        if self.reflections <= 2:  # the first reply and its repair: prose, not JSON
            return Reply("I would make the prompt clearer.")
        current = user.split("<prompt>\n", 1)[1].split("\n</prompt>", 1)[0]
        return Reply(json.dumps({"prompt": f"{current} {QUOTE}"}))


def test_the_prompt_path_end_to_end_against_a_local_server(
    db: Database, opt_run: tuple[str, Path], fake_openai: FakeOpenAI
) -> None:
    run_id, out = opt_run
    fake_openai.responder = PromptDependentSystem()
    settings = LLMSettings(
        base_url=fake_openai.base_url, api_key=SecretStr("k"), model="m", timeout_seconds=5.0
    )

    def run() -> Any:
        client = LLMClient(settings, out / "llm-cache", sleep=lambda _: None)
        convs = load_locomo(SAMPLE_PATH, Subset(questions=4))
        options = OptimizeOptions(
            "mem0", run_id, mode="prompts", rounds=1, trials=6, budget=80, max_cases=100
        )
        system = ReferenceSystem("mem0", OpenAIBackend(client), convs)
        ids = system.case_ids()
        return run_optimization(
            options, system, ids[:1], ids[1:], out / "run", db=db, proposer=prompt_proposer(client)
        )

    result = run()
    first = result.rounds[0]
    assert first.targets == [QUESTION_ANSWERING]  # ResponseError at question-answering
    assert first.candidate is not None and first.candidate.accepted, first.candidate
    assert result.final["heldout"] > result.initial["heldout"]
    assert result.config.prompts[QUESTION_ANSWERING].endswith(QUOTE)
    accepted = (out / "run" / "accepted" / "prompts.toml").read_text()
    assert "version = 2" in accepted and QUOTE in accepted
    reflections = [r for r in fake_openai.chat_requests if "<prompt>" in json.dumps(r.body)]
    # the malformed reply was answered with a repair request, then given up on; the next
    # reflection's proposal was parsed and kept
    assert any("That reply was invalid" in json.dumps(r.body) for r in reflections)
    assert len(reflections) >= 3
    assert 0 < first.llm_calls <= len(fake_openai.chat_requests) and first.tokens_in > 0
    lineage = LineageStore(db).lineage(run_id)
    qa = lineage[lineage["name"] == QUESTION_ANSWERING].iloc[0]
    assert qa["kind"] == "prompt" and bool(qa["accepted"]) and qa["value"].endswith(QUOTE)
    assert "mem0/question-answering/ResponseError" in qa["classes"]
    updates = json.loads((out / "run" / "update_results.json").read_text())
    assert f"{QUESTION_ANSWERING}@2" in updates

    calls = len(fake_openai.chat_requests)
    again = run()  # a re-run of the same directory: everything comes from the caches
    assert len(fake_openai.chat_requests) == calls
    assert again.final == result.final and again.config == result.config
