"""Headroom end to end on Neo4j: a traced offline mem0 conversation (LoCoMo conversation 1,
sessions 1-4, a development conversation) with two planted extraction faults, loaded, attributed
by hand into a large retrieval class whose repair rescues nothing and a smaller extraction class
whose repair rescues every case; the what-if replays from the graph, is stored, routes the
optimizer to the smaller class, and shows in the CLI, the Browser query and the report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from patterns_seed import seed, unseed

from memtrace import patterns
from memtrace.admin import delete_trace
from memtrace.bench.verify import precheck
from memtrace.cli import cli
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.optimize import route
from memtrace.patterns.reader import pattern_query
from memtrace.replay.graph import LoadedTraces
from memtrace.replay.what_if import WhatIfReplayer
from memtrace.report.build import make_report
from memtrace.systems.core import Fault
from memtrace.systems.locomo import Conversation, Subset, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.registry import make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Seeded:
    run_id: str
    trace_id: str
    retrieval: list[str]  # case ids of the retrieval class
    extraction: list[str]  # the planted cases


def _planted(conv_path: Path) -> tuple[Conversation, list[Fault]]:
    (conv,) = load_locomo(conv_path, Subset(conversations=("1",), sessions=(1, 2, 3, 4)))
    backend = OfflineBackend()
    clean = make_system("mem0", backend).run(conv)
    faults: list[Fault] = []
    used: set[str] = set()
    for result in clean.results:
        anchors = {key.split("#")[0] for key in result.keys}
        if not result.passed or len(anchors) != 1 or anchors & used:
            continue
        (anchor,) = anchors
        fault = Fault(f"f{len(faults)}", "ExtractionError", result.case_id, anchor,
                      frozenset(result.keys))  # fmt: skip
        if precheck("mem0", backend, conv, fault):
            faults.append(fault)
            used.add(anchor)
        if len(faults) == 2:
            break
    assert len(faults) == 2
    return conv, faults


@pytest.fixture(scope="module")
def seeded(
    db: Database, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Seeded]:
    run_id = "wi" + tmp_path_factory.mktemp("scope").name[-8:].replace("_", "")
    conv, faults = _planted(shared_data / "locomo" / "locomo10.json")
    planted = [
        {"id": f.id, "type": f.type, "target": f.target, "anchor": f.anchor,
         "sources": sorted(f.sources)}
        for f in faults
    ]  # fmt: skip
    out = tmp_path_factory.mktemp("trace")
    run, path = run_conversation(
        make_system("mem0", OfflineBackend(), faults=faults), conv, out, prefix=f"{run_id}-",
        clock=SimClock(), metadata={"bench": {"planted": planted}},
    )  # fmt: skip
    assert path is not None
    load_paths(db, [str(path)], LoadOptions())
    results = {r.case_id: r for r in run.results}
    extract_op = {a.fault_id: a.op_id for a in run.applied}
    extraction = [f.target for f in faults]
    assert all(not results[c].passed for c in extraction)
    # every other failed case whose evidence the store held: blamed on its search
    retrieval = sorted(
        r.case_id
        for r in run.results
        if not r.passed and r.case_id not in extraction and r.missing
        and all(loss is not None and loss.type == "RetrievalError" for loss in r.missing.values())
    )  # fmt: skip
    assert len(retrieval) > len(extraction)
    search_op = {
        r.case_id: loss.op_id
        for r in run.results
        for loss in r.missing.values()
        if loss is not None and loss.type == "RetrievalError"
    }
    rows = [
        {"trace_id": run.trace_id, "case_id": c, "op_id": search_op[c],
         "props": {"trace_id": run.trace_id, "case_id": c, "error_type": "RetrievalError",
                   "judge": "test", "reason": "hand verdict"}}
        for c in retrieval
    ] + [
        {"trace_id": run.trace_id, "case_id": f.target, "op_id": extract_op[f.id],
         "props": {"trace_id": run.trace_id, "case_id": f.target,
                   "error_type": "ExtractionError", "judge": "test", "reason": "planted"}}
        for f in faults
    ]  # fmt: skip
    db.run(get_query("attribution/write_attributions"), run_id=run_id, rows=rows)
    yield Seeded(run_id, run.trace_id, retrieval, extraction)
    db.run("MATCH (a:Attribution {run_id: $run_id}) DETACH DELETE a", run_id=run_id)
    db.run(
        "MATCH (w:WhatIf {run_id: $run_id}) OPTIONAL MATCH (w)-[:HAS_CLASS]->(c) "
        "DETACH DELETE w, c",
        run_id=run_id,
    )
    delete_trace(db, run.trace_id)


def test_the_largest_class_has_no_headroom_and_routing_picks_the_smaller(
    db: Database, seeded: Seeded
) -> None:
    result = patterns.what_if(
        db, seeded.run_id, WhatIfReplayer(LoadedTraces(db).for_trace), joint_top=2
    )
    rows = {r["error_type"]: r for r in result.classes.to_dict("records")}
    retrieval, extraction = rows["RetrievalError"], rows["ExtractionError"]
    assert retrieval["cases"] == len(seeded.retrieval) > extraction["cases"] == 2
    assert (retrieval["rescued"], retrieval["net"]) == (0, 0)
    assert (extraction["rescued"], extraction["broken"], extraction["fix_alone"]) == (2, 0, 2)
    assert extraction["why"] == "extraction fixes would rescue 2 of 2"
    assert "the answer step (the evidence reached it) also misses" in retrieval["why"]
    assert result.not_replayable == {}

    classes = patterns.failure_classes(db, seeded.run_id)
    assert classes.iloc[0]["error_type"] == "RetrievalError"  # the largest by count
    assert route(classes, "parameters").targets(largest=1) == ("top_k",)
    by_headroom = route(classes, "parameters", headroom=result.classes)
    assert by_headroom.targets() == ("min_content_words",)
    (skipped,) = [c for c in by_headroom.classes if c.error_type == "RetrievalError"]
    assert skipped.why_not.startswith("no trials: no headroom (net +0 cases; retrieval fixes")

    # stored: the Browser query reads it back with its declared columns, largest net first
    query = pattern_query("class_headroom")
    stored = db.run(query, run_id=seeded.run_id)
    assert stored and list(stored[0]) == list(query.columns)
    assert [r["error_type"] for r in stored] == ["ExtractionError", "RetrievalError"]
    assert stored[0]["rescued"] == 2 and stored[0]["fix_alone_share"] == 1.0
    assert stored[0]["joint_keys"] == list(result.joint_keys)
    summary = patterns.what_if_summary(db, seeded.run_id)
    assert summary is not None and summary["replays"] == result.replays > 0


def test_report_has_the_section_and_chart(db: Database, seeded: Seeded, tmp_path: Path) -> None:
    patterns.what_if(db, seeded.run_id, WhatIfReplayer(LoadedTraces(db).for_trace), joint_top=2)
    make_report(db, seeded.run_id, tmp_path)
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## What fixing each class would buy", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| mem0")]
    cells = {line.split("|")[3].strip(): [c.strip() for c in line.split("|")] for line in table}
    assert set(cells) == {"ExtractionError", "RetrievalError"}
    assert cells["ExtractionError"][4:9] == ["2", "2", "0", "0", "2"]
    assert cells["RetrievalError"][5] == "0"
    assert f"retrieval fixes would rescue 0 of {len(seeded.retrieval)}" in section
    assert "top 2 classes repaired together: 2 rescued, 0 broken" in section.replace("*", "")
    assert "(charts/headroom.png)" in markdown
    assert (tmp_path / "charts" / "headroom.png").stat().st_size > 1000


def test_cli_what_if_prints_strict_json_and_shows_the_stored_one(
    db: Database, seeded: Seeded
) -> None:
    args = ["patterns", "--run", seeded.run_id, "--what-if", "--format", "json"]
    result = CliRunner().invoke(cli, [*args, "--rerun"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["stored_at"] is None  # replayed just now
    rows = {r["error_type"]: r for r in document["classes"]}
    assert rows["ExtractionError"]["rescued"] == 2 and rows["RetrievalError"]["net"] == 0
    assert document["joint"]["joint_rescued"] == 2
    # without --rerun: the stored what-if, the same figures, no replay
    again = json.loads(CliRunner().invoke(cli, args).output)
    assert again["stored_at"] is not None
    stored = {r["error_type"]: r for r in again["classes"]}
    assert stored["ExtractionError"]["rescued"] == 2 and stored["RetrievalError"]["net"] == 0
    assert again["joint"]["joint_rescued"] == 2
    table = CliRunner().invoke(cli, args[:-2], env={"COLUMNS": "100"}).output
    assert "stored what-if of" in table and "--rerun replays again" in table
    assert "memory_system.extract_facts" in table
    lonely = CliRunner().invoke(cli, ["patterns", "--run", seeded.run_id, "--rerun"])
    assert lonely.exit_code == 2 and "--rerun" in lonely.output
    refused = CliRunner().invoke(cli, ["patterns", "--run", seeded.run_id, "--what-if",
                                       "--view", "funnel"])  # fmt: skip
    assert refused.exit_code == 2 and "--what-if" in refused.output


def test_hand_built_traces_are_not_replayed_and_the_command_says_so(
    db: Database, tmp_path: Path
) -> None:
    s = seed(db, tmp_path, "w" + tmp_path.name[-10:].replace("_", ""))
    try:
        result = CliRunner().invoke(cli, ["patterns", "--run", s.run1, "--what-if"])
        assert result.exit_code == 1
        assert f"no class of run '{s.run1}' could be replayed" in result.output
        assert "no LoCoMo sessions" in result.output
        assert result.output.count("replayed") == 1  # the reason once, not per class and trace
        stored = patterns.headroom(db, s.run1)
        assert len(stored) == 3 and not stored["replayable"].any()
        assert all(why.startswith("cannot be replayed (trace ") for why in stored["why"])
    finally:
        db.run(
            "MATCH (w:WhatIf {run_id: $run_id}) OPTIONAL MATCH (w)-[:HAS_CLASS]->(c) "
            "DETACH DELETE w, c",
            run_id=s.run1,
        )
        unseed(db, s)
