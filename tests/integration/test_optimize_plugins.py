"""``memtrace optimize`` on systems of the tests' own (tests/optsystems) through the system
plugin: real Neo4j (attribution, classes, lineage), the CLI's ``--system module:attr``, and
for the prompt mode a local OpenAI-compatible server whose replies follow the prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from optsystems import concierge, household
from pydantic import SecretStr

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.llm import LLMClient
from memtrace.optimize import OptimizeOptions, prompt_proposer, run_optimization
from memtrace.optimize.store import LineageStore
from memtrace.settings import LLMSettings

pytestmark = pytest.mark.integration

HOUSEHOLD = "optsystems.household:make_system"


@pytest.fixture
def runs(db: Database, run_id: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield run_id, tmp_path
    for trace in tmp_path.rglob("traces/*/*.jsonl"):
        delete_trace(db, trace.stem)
    db.run("MATCH (a:Attribution) WHERE a.run_id STARTS WITH $r DETACH DELETE a", r=run_id)
    for variant in ("guided", "answer-only", "unguided"):
        LineageStore(db).delete(f"{run_id}-{variant}")


def optimize(out: Path, run_id: str, *extra: str) -> dict[str, Any]:
    args = [
        "optimize", "--system", HOUSEHOLD, "--train", "h01,h02,h03,h04",
        "--heldout", "h05,h06,h07,h08", "--test", "h09,h10,h11,h12", "--rounds", "6",
        "--trials", "4", "--budget", "48", "--seed", "0", "--out", str(out), "--run-id", run_id,
        "--json", *extra,
    ]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def test_guided_routes_each_planted_fault_to_its_knob_and_beats_answer_only(
    db: Database, runs: tuple[str, Path]
) -> None:
    run_id, out = runs
    guided = optimize(out / "guided", f"{run_id}-guided")
    answer_only = optimize(
        out / "answer-only", f"{run_id}-answer-only", "--baseline", "answer-only"
    )
    first = guided["rounds"][0]
    # every planted weak default is blamed on the operation that reads it, and routed to it
    routed = {(c["op_name"], c["error_type"]): tuple(c["targets"]) for c in first["classes"]}
    assert routed == {
        ("household.note", "ExtractionError"): ("min_words",),
        ("household.shelve", "DeletionError"): ("keep_last",),
        ("household.lookup", "RetrievalError"): ("top_k",),
        ("household.answer", "ResponseError"): ("answer_words",),
    }
    assert {tuple(r["targets"]) for r in answer_only["rounds"]} == {("answer_words",)}
    for summary in (guided, answer_only):  # never an accepted held-out drop
        for r in summary["rounds"]:
            if r["candidate"] and r["candidate"]["accepted"]:
                assert r["candidate"]["heldout"] >= r["heldout_before"]
    assert guided["final"]["test"] > answer_only["final"]["test"]
    assert guided["final"]["heldout"] > answer_only["final"]["heldout"]
    # the user's own code, given the accepted file, scores what memtrace reported
    accepted = out / "guided" / "accepted" / "household.json"
    assert household.evaluate(accepted, ["h09", "h10", "h11", "h12"]) == guided["final"]["test"]
    assert guided["summary"] == (out / "guided" / "summary.txt").read_text().strip()
    run = LineageStore(db).run(f"{run_id}-answer-only")
    assert run is not None and run["baseline"] == "answer-only" and run["guided"] is False
    lineage = LineageStore(db).lineage(f"{run_id}-guided")
    keep_last = lineage[lineage["name"] == "keep_last"].iloc[0]
    assert "household/household.shelve/DeletionError" in keep_last["classes"]


def test_the_prompt_mode_rewrites_the_prompt_the_blamed_extraction_reads(
    db: Database, runs: tuple[str, Path], fake_openai: FakeOpenAI
) -> None:
    run_id, out = runs
    fake_openai.responder = concierge.Replies()
    settings = LLMSettings(base_url=fake_openai.base_url, api_key=SecretStr("k"), model="m")
    train, heldout, test = ["stay1", "stay2"], ["stay3", "stay4"], ["stay5", "stay6"]

    def run(variant: str, **kind: Any) -> Any:
        options = OptimizeOptions(
            "concierge", f"{run_id}-{variant}", mode="prompts", rounds=2, trials=2, budget=24,
            max_cases=100, **kind,
        )  # fmt: skip
        reflection = LLMClient(settings, out / "llm-cache", sleep=lambda _: None)
        return run_optimization(
            options, concierge.ConciergeSystem(fake_openai.base_url), train, heldout,
            out / variant, db=db, test=test, proposer=prompt_proposer(reflection),
        )  # fmt: skip

    guided = run("guided")
    first = guided.rounds[0]
    assert first.targets == ["extract"]  # ExtractionError at concierge.note, declared read_by
    assert first.candidate is not None and first.candidate.accepted
    assert guided.config.prompts["extract"].endswith(concierge.KEEP)
    answer_only = run("answer-only", guided=False, baseline="answer-only")
    assert {tuple(r.targets) for r in answer_only.rounds} == {("reply",)}
    assert answer_only.final["test"] < guided.final["test"] == 1.0
    accepted = out / "guided" / "accepted" / "concierge.toml"
    assert concierge.evaluate(accepted, test, fake_openai.base_url) == guided.final["test"]


def test_routed_by_headroom_the_users_replayer_measures_each_class(
    db: Database, runs: tuple[str, Path]
) -> None:
    run_id, out = runs
    summary = optimize(
        out / "guided", f"{run_id}-guided", "--route-by", "headroom",
        "--replayer", "optsystems.household:make_replayer",
    )  # fmt: skip
    first = summary["rounds"][0]
    assert first["replays"] > 0 and summary["budget_spent"] <= 48
    measured = {c["op_name"]: c for c in first["classes"]}
    # each memory-side repair is replayed by the household's own oracle: the search's and the
    # answer's rescue all 4 of their cases; the kept wifi note is still forgotten later (the
    # shelve class holds it), so repairing the extraction alone rescues nothing
    assert measured["household.lookup"]["headroom"] == 4
    assert measured["household.note"]["headroom"] == 0 and not measured["household.note"]["targets"]
    assert "min_words" not in first["targets"] and "top_k" in first["targets"]
