"""Replays of the real Mem0 2.x library: `memtrace run mem0-lib` against a local
OpenAI-compatible server whose replies are valid for Mem0 2.x's additive extraction, then the
run replayed from its trace: with no repair every answer is reproduced with no chat call (also
on another day: the date Mem0 stamps into its prompt is no part of a request's identity), each
repair restores what its planted fault lost, and the replay judge names the planted op and type.

Runs only where mem0ai 2.x is installed (CI: a second virtualenv, see scripts/test.sh)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import (  # noqa: F401
    DroppingMem0Model,
    FakeOpenAI,
    Mem0V2Replies,
    Reply,
    fake_openai_fixture,
)
from mem0_lib_helpers import (
    cli_json,
    recorded_calls,
    repaired_alone,
    replays_identically,
    skip_unless_mem0,
    step_op,
    traced_run,
    use_endpoint,
)

from memtrace.admin import delete_trace
from memtrace.db import Database
from memtrace.replay import make_replayer, read_native
from memtrace.settings import load_settings
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.params import Params
from memtrace.systems.prompts import DEFAULTS, MEM0_CUSTOM_INSTRUCTIONS, QUESTION_ANSWERING

skip_unless_mem0("2.", "memtrace-graph[mem0]")
pytestmark = pytest.mark.integration

DEFAULT_INSTRUCTIONS = DEFAULTS[MEM0_CUSTOM_INSTRUCTIONS].text
BISCUIT = "Farid: I adopted a rabbit named Biscuit yesterday. Biscuit already loves the park."


@pytest.fixture
def endpoint(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Mem0V2Replies:
    replies = Mem0V2Replies()
    fake_openai.responder = replies
    use_endpoint(fake_openai, monkeypatch)
    return replies


def section(body: dict[str, Any], title: str) -> str:
    """One ``## <title>`` section of an additive-extraction request ("" when absent)."""
    prompt = str(body["messages"][-1]["content"])
    _, found, rest = prompt.partition(f"## {title}\n")
    return rest.split("\n## ", 1)[0].split("\n# ", 1)[0] if found else ""


class _Tomorrow(dt.datetime):
    @classmethod
    def now(cls, tz: dt.tzinfo | None = None) -> _Tomorrow:
        return cls.fromtimestamp(dt.datetime.now(tz).timestamp() + 86_400, tz)


def test_a_replay_without_repairs_reproduces_every_answer_with_no_chat_call(
    endpoint: Mem0V2Replies,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mem0.configs.prompts

    endpoint.drop.add("5k race")  # a failing case or two among the passing ones
    path, answers = traced_run(tmp_path, Params(top_k=3))  # the replay reads top_k back
    recorded = recorded_calls(path)
    assert {o["name"] for o in recorded} == {"memory_system.extract_memories"}
    assert len(recorded) == endpoint.calls == 32
    # the replay runs "tomorrow": Mem0 stamps another date into every extraction prompt
    monkeypatch.setattr(mem0.configs.prompts, "datetime", _Tomorrow)
    replayer = replays_identically(path, answers, fake_openai)
    assert set(replayer.steps().values()) >= {
        "lookup:D1:3", "extract:D1:3", "add:D2:6", "search:locomo-qa-1-7",
    }  # fmt: skip


def test_each_repair_restores_what_its_planted_fault_lost(
    endpoint: Mem0V2Replies, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    endpoint.drop.add("5k race")  # D1:3's extraction returns no memory
    fake_openai.hidden.add("Kyoto")  # D3:3's memory is never found by a search
    path, answers = traced_run(tmp_path)
    replayer = make_replayer(read_native(path), load_settings())
    expected = {
        "locomo-qa-1-1": ("extract:D1:3", "ExtractionError", "added evidence D1:3#0"),
        "locomo-qa-1-7": ("search:locomo-qa-1-7", "RetrievalError", "added "),
    }
    for case, (step, error_type, detail) in expected.items():
        assert not answers[case][0]
        live = [
            (section(r.body, "Existing Memories"), section(r.body, "New Messages"))
            for r in repaired_alone(replayer, fake_openai, case, step, error_type, detail)
        ]
        # D1:3's repaired extraction is answered from the trace (its request is the traced
        # one); a later one goes live only when its lookup found the restored memory
        assert all("5k race" not in new and "5k race" in existing for existing, new in live)
        if step.startswith("search"):
            assert not live
    # a repair of another message's extraction, or of a lookup, leaves the case as it was
    for other in ("extract:D2:3", "lookup:D1:3"):
        again = replayer.replay("locomo-qa-1-1", [step_op(replayer, other)])
        assert (again.passed, again.repaired) == (False, ())


def test_the_add_repair_keeps_an_evidence_text_the_md5_de_dup_dropped(
    endpoint: Mem0V2Replies, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """D4:3's extraction repeats D2:3's memory word for word: Mem0 drops it as a duplicate of
    the memory its lookup found; the add step's repair stores it (Mem0 2.x deletes nothing
    during add(), so the kept copy restores no text: it can only change a search's ranking)."""

    def repeating(body: dict[str, Any]) -> Reply | None:
        reply = endpoint(body)
        if reply is None or "Silent Harbor" not in section(body, "New Messages"):
            return reply
        memories = json.loads(reply.content)["memory"]
        memories.append({"id": str(len(memories)), "text": BISCUIT, "attributed_to": "user"})
        return Reply(json.dumps({"memory": memories}))

    fake_openai.responder = repeating
    path, _ = traced_run(tmp_path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    replayer = make_replayer(read_native(path), load_settings())
    add = next(r for r in records if r.get("id") == step_op(replayer, "add:D4:3"))
    (dropped,) = add["metadata"]["dropped"]
    assert (dropped["text"], dropped["reason"]) == (BISCUIT, "duplicate")
    kept = replayer.replay("locomo-qa-1-3", [step_op(replayer, "add:D4:3")])
    (change,) = kept.repaired
    assert change.step == "add:D4:3" and change.error_type == "ExtractionError"
    assert change.detail.endswith(f"(a duplicate of {dropped['duplicate_of']})")


@pytest.fixture
def traced(db: Database, run_id: str) -> Iterator[str]:
    """Conversation 1's trace id under this test's run id; afterwards every trace whose id starts
    with the run id is deleted (an optimizer run leaves one per configuration it attributed)."""
    yield f"{run_id}-mem0-lib-locomo-1"
    found = db.run("MATCH (t:Trace) WHERE t.id STARTS WITH $p RETURN t.id AS id", p=run_id)
    for row in found:
        delete_trace(db, row["id"])


def test_the_replay_judge_reproduces_the_planted_labels(
    db: Database,
    endpoint: Mem0V2Replies,
    fake_openai: FakeOpenAI,
    traced: str,
    run_id: str,
    tmp_path: Path,
) -> None:
    endpoint.drop.add("5k race")
    fake_openai.hidden.add("Kyoto")
    summary = cli_json(
        "run", "mem0-lib", "--out", str(tmp_path), "--conversations", "1", "--backend", "offline",
        "--trace-prefix", f"{run_id}-", "--deterministic", "--load", "--json",
    )  # fmt: skip
    assert summary["loaded"] == [traced]
    offline = {
        r["case_id"]: r["error_attribution_result"]
        for r in cli_json(
            "attribute", "--trace", traced, "--judge", "offline", "--no-write", "--json"
        )
    }
    records = cli_json("attribute", "--trace", traced, "--judge", "replay", "--no-write", "--json")
    replayed = {r["case_id"]: r for r in records}
    planted = {
        "locomo-qa-1-1": "ExtractionError",
        "locomo-qa-1-2": "ExtractionError",
        "locomo-qa-1-7": "RetrievalError",
        "locomo-qa-1-8": "RetrievalError",
    }
    for case, error_type in planted.items():
        verdict = replayed[case]["error_attribution_result"]
        assert verdict["error_type"] == error_type, (case, replayed[case])
        assert verdict["op_id"] == offline[case]["op_id"]
        assert replayed[case]["replays"] >= 1


def test_dropped_facts_are_extraction_errors_though_the_answerer_stays_weak(
    db: Database,
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    traced: str,
    run_id: str,
    tmp_path: Path,
) -> None:
    # issue 38: the model drops every fact of every 3rd extraction (here D1:3 and D4:3 among
    # them) and answers with the first memory sharing a word with the question; `run mem0-lib`
    # answers and judges on the endpoint it is given (no --backend)
    model = DroppingMem0Model(every=3)
    fake_openai.responder = model
    use_endpoint(fake_openai, monkeypatch)
    summary = cli_json(
        "run", "mem0-lib", "--out", str(tmp_path), "--conversations", "1",
        "--trace-prefix", f"{run_id}-", "--deterministic", "--load", "--json",
    )  # fmt: skip
    assert summary["loaded"] == [traced]
    bodies = [r.body for r in fake_openai.chat_requests]
    answers = [b for b in bodies if str(b["messages"][-1]["content"]).startswith("Memories:")]
    assert len(answers) == 11  # every question answered on the endpoint
    # each memory is shown with the session date it was stored on, as the prompt promises
    shown = [
        line
        for b in answers
        for line in str(b["messages"][-1]["content"]).splitlines()
        if line.startswith("- [")
    ]
    assert shown and all(re.match(r"- \[\d{1,2} [A-Z][a-z]+ 2023\] \S", line) for line in shown)
    # the extraction sees the message's session date as its observation date
    observed = {
        section(b, "Observation Date").strip()
        for b in bodies
        if BISCUIT in section(b, "New Messages")
    }
    assert observed == {"2023-04-13"}
    conv = load_locomo(SAMPLE_PATH)[0]
    said = {f"{t.speaker}: {t.text}": t.dia_id for s in conv.sessions for t in s.turns}
    dropped = {said[line] for line in model.dropped}
    assert {"D1:3", "D4:3"} <= dropped
    records = cli_json("attribute", "--trace", traced, "--judge", "replay", "--no-write", "--json")
    steps = make_replayer(read_native(Path(summary["traces"][0])), load_settings()).steps()
    evidence = {f"locomo-qa-1-{q.number}": set(q.evidence) for q in conv.questions}
    lost = {r["case_id"]: r for r in records if evidence[r["case_id"]] & dropped}
    assert set(lost) == {"locomo-qa-1-1", "locomo-qa-1-2", "locomo-qa-1-9"}
    for case, record in lost.items():
        verdict = record["error_attribution_result"]
        (message,) = evidence[case]
        assert verdict["error_type"] == "ExtractionError", (case, record)
        assert steps[verdict["op_id"]] == f"extract:{message}"


# -- `memtrace optimize mem0-lib --mode prompts` on 2.x ------------------------------------------

KEEP = "Also record every event the speaker took part in."
WORDS = re.compile(r"[a-z0-9]+")
QUESTION_WORDS = {"what", "when", "where", "which", "who", "how", "did", "does", "is", "the"}


def words(text: str) -> set[str]:
    return set(WORDS.findall(text.lower()))


class InstructedModel:
    """Replies like a small model on the local server: Mem0's extraction drops the planted
    messages unless its custom instructions ask for every event (``KEEP``); the answer quotes
    the memory sharing most words with the question; the judge checks the gold answer's words;
    the reflection appends ``KEEP`` to the prompt it is shown."""

    def __init__(self, extraction: Mem0V2Replies) -> None:
        self.extraction = extraction
        self.reflected: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        user = str(body["messages"][-1]["content"])
        if "<prompt>" in user:
            self.reflected.append(user)
            current = user.split("<prompt>\n", 1)[1].split("\n</prompt>", 1)[0]
            return Reply(json.dumps({"prompt": f"{current} {KEEP}"}))
        if user.startswith("Memories:"):
            memories, question = user.split("\n\nQuestion: ", 1)
            lines = [line.split("] ", 1)[-1] for line in memories.splitlines()[1:]]
            asked = words(question.split("\nAnswer:")[0]) - QUESTION_WORDS
            return Reply(max(lines, key=lambda line: len(words(line) & asked), default="?"))
        if user.startswith("Question:") and "Gold answer:" in user:
            gold = user.split("Gold answer: ", 1)[1].split("\n", 1)[0]
            answer = user.split("Generated answer: ", 1)[1]
            label = "CORRECT" if words(gold) <= words(answer) else "WRONG"
            return Reply(json.dumps({"reasoning": "token check", "label": label}))
        dropped = self.extraction.drop
        if KEEP in section(body, "Custom Instructions"):
            self.extraction.drop = set()
        try:
            return self.extraction(body)
        finally:
            self.extraction.drop = dropped


def fresh_model(monkeypatch: pytest.MonkeyPatch, run_id: str) -> None:
    """A model name of this test run: the answer and the judge go through the LLM cache of
    ``$MEMTRACE_HOME``, keyed by model and request, which another run's replies must not serve."""
    monkeypatch.setenv("MEMTRACE_LLM_MODEL", f"fake-{run_id}")


def test_optimize_prompts_rewrites_the_custom_instructions_the_extraction_is_blamed_for(
    db: Database,
    endpoint: Mem0V2Replies,
    fake_openai: FakeOpenAI,
    run_id: str,
    traced: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mem0.configs.base import MemoryConfig

    endpoint.drop.add("5k race")  # conversation 1's D1:3: questions 1 and 2 fail
    fresh_model(monkeypatch, run_id)
    model = InstructedModel(endpoint)
    fake_openai.responder = model
    out = tmp_path / "opt"
    summary = cli_json(
        "optimize", "mem0-lib", "--mode", "prompts", "--train", "1", "--heldout", "2",
        "--questions", "3", "--rounds", "1", "--trials", "2", "--budget", "30",
        "--out", str(out), "--run-id", f"{run_id}-opt", "--json",
    )  # fmt: skip
    (first,) = summary["rounds"]
    # ExtractionError at extract_memories, which reads the custom instructions
    assert first["targets"] == [MEM0_CUSTOM_INSTRUCTIONS], first["classes"]
    assert first["candidate"]["accepted"], first["candidate"]
    assert summary["final"]["train"] > summary["initial"]["train"]
    assert any("named custom-instructions" in r for r in model.reflected)
    accepted = json.loads((out / "accepted" / "mem0_config.json").read_text())
    assert accepted == {"custom_instructions": f"{DEFAULT_INSTRUCTIONS} {KEEP}"}
    assert MemoryConfig(**accepted).custom_instructions.endswith(KEEP)  # from_config's
    search = json.loads((out / "accepted" / "mem0_search.json").read_text())
    assert search == {"top_k": 10, "threshold": 0.1}
    assert KEEP in (out / "accepted" / "prompts.toml").read_text()


def test_a_stale_memory_class_is_routed_to_the_answer_prompt_by_its_replay(
    db: Database,
    endpoint: Mem0V2Replies,
    fake_openai: FakeOpenAI,
    run_id: str,
    traced: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """D2:6's extraction also adds an earlier job that D4:6 contradicts; the answer quotes the
    old memory. The offline judge blames D4:6's extraction (stale-memory); replaying the class
    with that extraction repaired rescues nothing (the newer memory was stored), so the class
    goes to the answer prompt, not to Mem0's custom instructions."""
    endpoint.stale["pottery class"] = "Chloe: I started a new job as a cashier at the mall."
    fresh_model(monkeypatch, run_id)
    fake_openai.responder = InstructedModel(endpoint)
    summary = cli_json(
        "optimize", "mem0-lib", "--mode", "prompts", "--train", "1", "--heldout", "2",
        "--rounds", "1", "--trials", "1", "--budget", "40",
        "--out", str(tmp_path / "opt"), "--run-id", f"{run_id}-stale", "--json",
    )  # fmt: skip
    (first,) = summary["rounds"]
    (stale,) = [c for c in first["classes"] if c["failure_mode"] == "stale-memory"]
    assert stale["op_name"] == "memory_system.extract_memories", stale
    assert stale["targets"] == [QUESTION_ANSWERING] and "rescues none" in stale["rerouted"]
    assert QUESTION_ANSWERING in first["targets"]


def test_optimize_parameters_moves_the_search_settings_the_search_is_blamed_for(
    db: Database,
    endpoint: Mem0V2Replies,
    run_id: str,
    traced: str,
    tmp_path: Path,
) -> None:
    """A search that returns one memory (top_k = 1) misses evidence: the RetrievalError class is
    routed to Mem0's search settings, which Optuna moves; what is accepted is written in Mem0's
    terms (the keyword arguments of ``memory.search``) beside memtrace's TOML."""
    start = tmp_path / "params.toml"
    start.write_text("top_k = 1\n")
    out = tmp_path / "opt"
    summary = cli_json(
        "optimize", "mem0-lib", "--mode", "parameters", "--train", "1", "--heldout", "2",
        "--params", str(start), "--rounds", "1", "--trials", "4", "--budget", "20",
        "--out", str(out), "--run-id", f"{run_id}-search", "--json",
    )  # fmt: skip
    (first,) = summary["rounds"]
    (search,) = [c for c in first["classes"] if c["op_name"] == "memory_system.search_vector_store"]
    assert search["error_type"] == "RetrievalError"
    assert set(search["targets"]) == {"top_k", "search_threshold"}
    accepted = (out / "accepted" / "params.toml").read_text()
    settings = json.loads((out / "accepted" / "mem0_search.json").read_text())
    assert f"top_k = {settings['top_k']}\n" in accepted
    if first["candidate"]["accepted"]:
        assert settings["top_k"] > 1 and summary["final"]["train"] > summary["initial"]["train"]


def test_bench_natural_labels_the_failures_of_mem0_2x_by_execution(
    db: Database, endpoint: Mem0V2Replies, run_id: str, traced: str, tmp_path: Path
) -> None:
    """No planted fault: every failed case of the real Mem0 2.x gets its executed label, which
    goes into the trace as a label of source ``replay``."""
    summary = cli_json(
        "bench", "natural", "--system", "mem0-lib", "--conversations", "1",
        "--out", str(tmp_path), "--trace-prefix", f"{run_id}-", "--json",
    )  # fmt: skip
    assert summary["system"] == "mem0-lib" and summary["failed"] >= 1
    assert summary["errors"] == 0
    assert summary["labeled"] + summary["no_single_decisive"] == summary["failed"]
    (row,) = db.run(
        "MATCH (:Case {trace_id: $t})-[l:LABELED {source: 'replay'}]->() RETURN count(l) AS n",
        t=traced,
    )
    assert row["n"] == summary["labeled"]
