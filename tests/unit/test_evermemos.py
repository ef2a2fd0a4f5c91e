"""The EverMemOS-style system: the graph it writes, its boundaries, its agentic search and where
it says evidence was lost."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from trace_checks import check_trace

from memtrace.errors import ConfigError
from memtrace.loaders.kinds import derive_kind
from memtrace.systems.core import RERANK_ANCHOR, Fault
from memtrace.systems.evermemos import EverMemOSSystem
from memtrace.systems.evermemos_steps import OfflineEpisodeSteps, Said, Sufficiency
from memtrace.systems.locomo import SAMPLE_PATH, Conversation, Subset, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.params import RANGES, Params
from memtrace.systems.rankers import BM25Ranker, TrigramRanker
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

OPS = (
    "memory_system.message_buffer_update",
    "evermemos.boundary_detection",
    "memory_system.finalize_memory_unit",
    "memory_system.extract_memory",
    "memory_system.hybrid_retrieval",
    "memory_system.agentic_round1_bundle",
    "memory_system.agentic_round2_bundle",
    "memory_system.agentic_final_rerank",
    "question-answering",
    "llm-judge",
)


def traced(tmp_path: Path, conv: Conversation, **params: Any) -> list[dict[str, Any]]:
    system = EverMemOSSystem(OfflineBackend(), params=Params(**params))
    _, path = run_conversation(system, conv, tmp_path, clock=SimClock())
    assert path is not None
    return check_trace(path)


def sample(conversation: str = "1") -> Conversation:
    (conv,) = load_locomo(SAMPLE_PATH, Subset(conversations=(conversation,)))
    return conv


def by_name(records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == "operation" and r["name"] == name]


def variables(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in records if r["type"] == "variable"}


def test_message_memcell_episode_event_log_unit_chain(tmp_path: Path) -> None:
    conv = sample()
    records = traced(tmp_path, conv, sufficiency_threshold=1.0)
    assert {r["name"] for r in records if r["type"] == "operation"} == set(OPS)
    found = variables(records)
    messages = [v for v in found.values() if v.get("category") == "message"]
    cells = by_name(records, "memory_system.finalize_memory_unit")
    into_cells = Counter(
        source
        for op in cells
        for source, target in op["edges"]
        if source in {m["id"] for m in messages}
    )
    # every message goes into exactly one MemCell (no overlap by default)
    assert sorted(into_cells) == sorted(m["id"] for m in messages)
    assert set(into_cells.values()) == {1}
    extracts = by_name(records, "memory_system.extract_memory")
    assert len(extracts) == len(cells) >= 2
    for cell_op, extract in zip(cells, extracts, strict=True):
        (cell,) = [w for w in cell_op["writes"] if w.startswith("memcell-")]
        assert cell in extract["reads"]
        written = {found[w].get("class_name") or found[w]["category"] for w in extract["writes"]}
        assert written == {"episode", "event_log", "memory_entry"}
        (unit,) = [w for w in extract["writes"] if w.startswith("memory-unit-")]
        sources = {s for s, t in extract["edges"] if t == unit}
        assert {found[s]["class_name"] for s in sources} == {"episode", "event_log"}
        value = json.loads(found[unit]["value"])  # header, episode, event log: a line each
        assert value[0].startswith(f"{unit.split('@')[0]}: ") and len(value) > 2
    units = [v for v in found.values() if v["name"].startswith("memory-unit-")]
    assert all(u["version"] == 1 for u in units)  # never updated
    assert not any(
        "delete_marker" in t
        for r in records
        if r["type"] == "operation"
        for _, t in r.get("edges", [])
    )


def test_each_case_runs_the_agentic_rounds_and_answers_from_their_context(tmp_path: Path) -> None:
    records = traced(tmp_path, sample(), sufficiency_threshold=1.0)  # every case goes to round 2
    found = variables(records)
    ops = [r for r in records if r["type"] == "operation"]
    cases = [r for r in records if r["type"] == "case"]
    answers = by_name(records, "question-answering")
    assert len(answers) == len(cases)
    names = [o["name"] for o in ops if o["category"] in ("retrieval", "evaluation")]
    rounds = " ".join(names).split("llm-judge")[:-1]  # one search per case, then its answer
    two = "hybrid_retrieval agentic_round1_bundle agentic_round2_bundle agentic_final_rerank"
    one = "hybrid_retrieval agentic_round1_bundle"
    shapes = Counter(
        " ".join(n.split(".")[-1] for n in r.split() if n != "question-answering") for r in rounds
    )
    assert set(shapes) <= {one, two} and shapes[two] >= len(cases) // 2
    last_search: dict[str, Any] = {}
    for op in ops:  # the answer reads the context its case's last retrieval step wrote
        if op["category"] == "retrieval":
            last_search = op
        elif op["name"] == "question-answering":
            (context,) = [
                w for w in last_search["writes"] if found[w].get("class_name") == "context"
            ]
            assert context in op["reads"]
            assert "evermemos-answer-prompt@1" in op["reads"]
    for round2 in by_name(records, "memory_system.agentic_round2_bundle"):
        assert any(":sufficiency:" in r for r in round2["reads"])
        assert any(w.startswith("refined_queries:") for w in round2["writes"])
        assert "evermemos-query-refinement-prompt@1" in round2["reads"]


def test_a_sufficient_round_one_is_the_context(tmp_path: Path) -> None:
    records = traced(tmp_path, sample(), sufficiency_threshold=0.0)
    assert not by_name(records, "memory_system.agentic_round2_bundle")
    found = variables(records)
    for bundle in by_name(records, "memory_system.agentic_round1_bundle"):
        assert any(found[w].get("class_name") == "context" for w in bundle["writes"])
        assert "evermemos-sufficiency-prompt@1" in bundle["reads"]


def test_hard_limit_and_overlap(tmp_path: Path) -> None:
    conv = sample()
    records = traced(tmp_path / "a", conv, boundary_max_messages=3, boundary_topic_overlap=0.0)
    found = variables(records)
    cells = [json.loads(v["value"]) for v in found.values() if v.get("category") == "memcell"]
    assert max(map(len, cells)) == 3
    reasons = [
        json.loads(v["value"])["reasoning"]
        for v in found.values()
        if v.get("class_name") == "boundary_decision"
    ]
    assert "hard limit: 3 messages" in reasons
    records = traced(tmp_path / "b", conv, boundary_max_messages=3, boundary_overlap=1)
    found = variables(records)
    cells = [json.loads(v["value"]) for v in found.values() if v.get("category") == "memcell"]
    for first, second in itertools.pairwise(cells):
        assert first[-1] == second[0]  # a split keeps the last message


def test_planted_faults_are_lost_where_they_were_applied() -> None:
    conv = sample()
    params = Params(sufficiency_threshold=1.0)
    base = EverMemOSSystem(OfflineBackend(), params=params).run(conv)
    target = next(r for r in base.results if r.passed and r.keys)
    keys = frozenset(target.keys)
    dia_id = next(iter(keys)).split("#")[0]
    faults = {
        "ExtractionError": Fault("f-1", "ExtractionError", target.case_id, dia_id, keys),
        "hybrid": Fault("f-2", "RetrievalError", target.case_id, target.case_id, keys),
        "rerank": Fault(
            "f-3", "RetrievalError", target.case_id, f"{RERANK_ANCHOR}{target.case_id}", keys
        ),
    }
    for name, fault in faults.items():
        run = EverMemOSSystem(OfflineBackend(), params=params, faults=[fault]).run(
            conv, {target.case_id}
        )
        (result,) = run.results
        (applied,) = run.applied
        assert result.missing, name
        losses = [(loss.type, loss.op_id) if loss else None for loss in result.missing.values()]
        assert set(losses) == {(fault.type, applied.op_id)}, name


def test_offline_sufficiency_and_query_refinement() -> None:
    steps = OfflineEpisodeSteps()
    params = Params(sufficiency_threshold=0.75)
    check = steps.sufficiency(
        "", "Where did Ana buy the red bike?", ["Ana: I bought a bike."], params
    )
    assert not check.sufficient
    assert check.missing == ("buy", "red")  # "bought" is not "buy" to the lexical check
    full = steps.sufficiency(
        "", "Where did Ana buy the bike?", ["Ana buys the bike in Porto where she lives"], params
    )
    assert full.sufficient
    queries = steps.refine(
        "", "Where did Ana buy the red bike?", ["Ana: I bought a bike."], check, Params()
    )
    assert queries[0] == " ".join(check.missing) and len(queries) == len(set(queries)) <= 3


def test_offline_boundaries_split_at_a_time_gap_and_a_topic_shift() -> None:
    steps = OfflineEpisodeSteps()
    history = [
        Said(f"D1:{i}", "Ana", "We painted the fence and the garden shed.", "8 May 2023")
        for i in range(5)
    ]
    same = Said("D1:6", "Ben", "The fence painting looks great, the shed too.", "8 May 2023")
    shift = Said(
        "D1:7", "Ben", "My sister moved to Lisbon for a new engineering job.", "8 May 2023"
    )
    params = Params()
    assert not steps.boundary("", history, same, "", params).should_end
    assert steps.boundary("", history, shift, "", params).should_end
    assert steps.boundary("", history[:1], same, "new session, 3 days later", params).should_end


def test_kinds_ranges_and_backends() -> None:
    kinds = {name: derive_kind(name, None) for name in OPS}
    assert kinds == {
        "memory_system.message_buffer_update": "update",
        "evermemos.boundary_detection": "other",
        "memory_system.finalize_memory_unit": "extraction",
        "memory_system.extract_memory": "extraction",
        "memory_system.hybrid_retrieval": "retrieval",
        "memory_system.agentic_round1_bundle": "retrieval",
        "memory_system.agentic_round2_bundle": "retrieval",
        "memory_system.agentic_final_rerank": "retrieval",
        "question-answering": "generation",
        "llm-judge": "judge",
    }
    assert {
        "boundary_overlap",
        "rrf_k",
        "refined_queries",
        "final_rerank",
        "hybrid_candidates",
    } <= set(RANGES)

    class Other(OfflineBackend):
        name = "elsewhere"

    with pytest.raises(ConfigError, match="no episode steps for backend 'elsewhere'"):
        EverMemOSSystem(Other())


def test_sufficiency_as_json_names_its_fields() -> None:
    assert Sufficiency(False, "r", ("x",)).as_json() == {
        "is_sufficient": False,
        "reasoning": "r",
        "missing_information": ["x"],
    }


def test_the_trigram_stand_in_matches_word_pieces_bm25_misses() -> None:
    docs = ["Ben: I moved to Oslo last year.", "Ana: We looked at an adoption agency."]
    assert TrigramRanker().rank("Who wants to adopt?", docs) == [1, 0]
    assert BM25Ranker().rank("Who wants to adopt?", docs) == [0, 1]  # no shared word: a tie
    assert TrigramRanker().rank("anything", []) == []
