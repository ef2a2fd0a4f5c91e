"""`bench make`: all five fault types, labels correct by construction, same seed same bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trace_checks import check_trace

from memtrace.bench.make import MANIFEST, BenchOptions, make_bench
from memtrace.cli import cli
from memtrace.loaders.index import build_index
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.loaders.smartcomment import read_smartcomment
from memtrace.systems.core import Fault
from memtrace.systems.locomo import SAMPLE_PATH, Conversation, Subset, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.registry import make_system

KIND_OF_OP = {
    "ExtractionError": "memory_system.extract_facts",
    "UpdateError": "memory_system.update_memory_decision",
    "DeletionError": "memory_system.update_memory_decision",
    "RetrievalError": "memory_system.search_vector_store",
    "ResponseError": "question-answering",
}


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Conversation]]:
    out = tmp_path_factory.mktemp("bench")
    convs = load_locomo(SAMPLE_PATH)
    make_bench(convs, out, BenchOptions(faults=10, seed=3))
    return out, convs


def labelled_cases(path: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    records = check_trace(path)
    ops = {r["id"]: r for r in records if r["type"] == "operation"}
    return [r for r in records if r["type"] == "case" and r.get("labels")], ops


def injected_faults(out: Path) -> dict[str, list[tuple[Fault, str]]]:
    """Faults planted per trace, rebuilt from the labels (with the case each was planted for)."""
    found: dict[str, list[tuple[Fault, str]]] = {}
    for path in sorted(out.glob("*.jsonl")):
        cases, _ = labelled_cases(path)
        for case in cases:
            (lab,) = case["labels"]
            meta = lab["metadata"]
            if lab["source"] == "injected" and not meta["collateral"]:
                fault = Fault(
                    meta["fault_id"],
                    lab["error_type"],
                    meta["planted_for"],
                    meta["anchor"],
                    frozenset(meta["evidence_keys"]),
                )
                found.setdefault(path.name, []).append((fault, case["id"]))
    return found


def test_all_five_types_are_injected_at_the_right_kind_of_operation(
    bench: tuple[Path, list[Conversation]],
) -> None:
    out, _ = bench
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["injected"] == {t: 2 for t in KIND_OF_OP}
    assert manifest["dropped_faults"] == 0
    seen = set()
    for path in sorted(out.glob("*.jsonl")):
        cases, ops = labelled_cases(path)
        for case in cases:
            (lab,) = case["labels"]
            assert case["judge_score"] == 0.0  # only failed cases carry labels
            assert ops[lab["op_id"]]["name"] == KIND_OF_OP[lab["error_type"]]
            seen.add((lab["source"], lab["error_type"]))
    assert {t for s, t in seen if s == "injected"} == set(KIND_OF_OP)


def test_each_injected_fault_is_decisive_on_replay(bench: tuple[Path, list[Conversation]]) -> None:
    out, convs = bench
    by_trace = injected_faults(out)
    assert sum(len(v) for v in by_trace.values()) == 10
    for conv in convs:
        planted = by_trace.get(f"mem0-locomo-{conv.number}.jsonl", [])
        faults = [f for f, _ in planted]
        for fault, case_id in planted:
            with_all = make_system("mem0", OfflineBackend(), faults=faults).run(conv, {case_id})
            others = [f for f in faults if f.id != fault.id]
            without = make_system("mem0", OfflineBackend(), faults=others).run(conv, {case_id})
            assert not with_all.results[0].passed, fault
            assert without.results[0].passed, f"{fault.id} is not decisive for {case_id}"


def test_same_seed_same_bytes_other_seed_other_faults(
    bench: tuple[Path, list[Conversation]], tmp_path: Path
) -> None:
    out, convs = bench
    make_bench(convs, tmp_path / "same", BenchOptions(faults=10, seed=3))
    for path in sorted(out.iterdir()):
        assert (tmp_path / "same" / path.name).read_bytes() == path.read_bytes(), path.name
    make_bench(convs, tmp_path / "other", BenchOptions(faults=10, seed=4))
    assert injected_faults(tmp_path / "other") != injected_faults(out)


def test_smartcomment_format_loads_with_annotations(
    bench: tuple[Path, list[Conversation]], tmp_path: Path
) -> None:
    out, convs = bench
    make_bench(convs, tmp_path, BenchOptions(faults=10, seed=3, format="smartcomment"))
    for path in sorted(tmp_path.glob("*.json")):
        index = build_index(str(path), read_smartcomment(path))
        native_cases, _ = labelled_cases(out / path.with_suffix(".jsonl").name)
        assert index.counts.labels == len(native_cases)
        graph = json.loads(path.read_text())
        native_ops = {op["id"] for op in _records(out / path.with_suffix(".jsonl").name)}
        assert {a["final_op_id"] for a in graph["data"]["annotations"]} <= native_ops


def _records(path: Path) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "operation"]


def test_locomo_conversation_gets_all_five_types(shared_data: Path, tmp_path: Path) -> None:
    convs = load_locomo(shared_data / "locomo" / "locomo10.json", Subset(conversations=("1",)))
    report = make_bench(convs, tmp_path, BenchOptions(faults=5, seed=0))
    assert report.injected == {t: 1 for t in KIND_OF_OP}
    cases, _ = labelled_cases(report.files[0])
    assert {c["labels"][0]["source"] for c in cases} >= {"injected", "derived"}


def test_bench_make_cli_writes_labelled_traces(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "make",
            "--faults",
            "5",
            "--seed",
            "1",
            "--out",
            str(tmp_path),
            "--json",
            "--conversations",
            "1,2",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["files"] == ["mem0-locomo-1.jsonl", "mem0-locomo-2.jsonl"]
    assert sum(summary["injected"].values()) == 5
    assert json.loads((tmp_path / MANIFEST).read_text())["labels"] == summary["labels"]


def test_same_seed_same_bytes_across_processes(tmp_path: Path) -> None:
    """Hash randomization must not leak into the output (set order, dict order)."""
    for hash_seed in ("1", "2"):
        subprocess.run(
            [
                str(Path(sys.executable).parent / "memtrace"),
                "bench",
                "make",
                "--faults",
                "5",
                "--seed",
                "9",
                "--out",
                str(tmp_path / hash_seed),
                "--json",
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
    for path in sorted((tmp_path / "1").iterdir()):
        assert (tmp_path / "2" / path.name).read_bytes() == path.read_bytes(), path.name


def test_the_output_folder_loads_as_is(bench: tuple[Path, list[Conversation]]) -> None:
    out, _ = bench
    summary = load_paths(None, [str(out)], LoadOptions(dry_run=True))
    assert sorted(Path(f.path).name for f in summary.files) == sorted(
        p.name for p in out.glob("*.jsonl")
    )
