"""`bench make` on naive RAG, long-context and EverMemOS-style: the fault types each pipeline can
have, planted at the right operation, decisive on replay, deterministic; a type a system cannot
have is an error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_bench import injected_faults, labelled_cases

from memtrace.bench.make import MANIFEST, BenchOptions, make_bench
from memtrace.cli import cli
from memtrace.errors import ConfigError
from memtrace.systems.locomo import SAMPLE_PATH, Conversation, Subset, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.registry import make_system

OP_OF_TYPE = {
    "rag": {
        "RetrievalError": {"memory_system.retrieve"},
        "ResponseError": {"question-answering"},
    },
    "long-context": {
        "UpdateError": {"memory_system.memory_update"},
        "ResponseError": {"question-answering"},
    },
    "evermemos": {
        "ExtractionError": {"memory_system.extract_memory"},
        "RetrievalError": {"memory_system.hybrid_retrieval", "memory_system.agentic_final_rerank"},
        "ResponseError": {"question-answering"},
    },
}


@pytest.fixture(scope="module", params=sorted(OP_OF_TYPE))
def bench(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, list[Conversation]]:
    system: str = request.param
    out = tmp_path_factory.mktemp(system)
    convs = load_locomo(SAMPLE_PATH)
    make_bench(convs, out, BenchOptions(system=system, faults=6, seed=3))
    return system, out, convs


def test_only_the_systems_fault_types_at_the_right_operation(
    bench: tuple[str, Path, list[Conversation]],
) -> None:
    system, out, _ = bench
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["system"] == system
    assert manifest["fault_types"] == list(OP_OF_TYPE[system])
    assert manifest["injected"] == {t: 6 // len(OP_OF_TYPE[system]) for t in OP_OF_TYPE[system]}
    assert manifest["dropped_faults"] == 0
    for path in sorted(out.glob("*.jsonl")):
        assert path.name.startswith(f"{system}-locomo-")
        cases, ops = labelled_cases(path)
        for case in cases:
            (lab,) = case["labels"]
            assert case["judge_score"] == 0.0
            assert ops[lab["op_id"]]["name"] in OP_OF_TYPE[system][lab["error_type"]]


def test_each_injected_fault_is_decisive_on_replay(
    bench: tuple[str, Path, list[Conversation]],
) -> None:
    system, out, convs = bench
    by_trace = injected_faults(out)
    assert sum(len(v) for v in by_trace.values()) == 6
    for conv in convs:
        planted = by_trace.get(f"{system}-locomo-{conv.number}.jsonl", [])
        faults = [f for f, _ in planted]
        for fault, case_id in planted:
            with_all = make_system(system, OfflineBackend(), faults=faults).run(conv, {case_id})
            others = [f for f in faults if f.id != fault.id]
            without = make_system(system, OfflineBackend(), faults=others).run(conv, {case_id})
            assert not with_all.results[0].passed, fault
            assert without.results[0].passed, f"{fault.id} is not decisive for {case_id}"


def _holds_message(records: list[dict[str, Any]], var_id: str, dia_id: str) -> bool:
    """A window version (a list of "[date] speaker: text" lines) holds the message ``dia_id``;
    values are JSON text."""
    (text,) = [
        json.loads(r["value"])["content"]
        for r in records
        if r.get("category") == "message" and r["name"].split(":", 1)[1] == dia_id
    ]
    value = next(r["value"] for r in records if r.get("id") == var_id)
    return any(line.endswith(text) for line in json.loads(value))


def test_a_long_context_update_fault_trims_a_window_that_held_the_evidence(
    tmp_path: Path,
) -> None:
    convs = load_locomo(SAMPLE_PATH)
    options = BenchOptions(system="long-context", faults=4, seed=1, types=("UpdateError",))
    make_bench(convs, tmp_path, options)
    checked = 0
    for path in sorted(tmp_path.glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        ops = {r["id"]: r for r in records if r["type"] == "operation"}
        cases, _ = labelled_cases(path)
        for case in cases:
            (lab,) = case["labels"]
            assert lab["error_type"] == "UpdateError"
            op = ops[lab["op_id"]]
            (written,) = [v for v in op["writes"] if v.startswith("context-window")]
            (previous,) = [v for v in op["reads"] if v.startswith("context-window")]
            dia_id = lab["metadata"]["evidence_keys"][0].split("#")[0]
            assert _holds_message(records, previous, dia_id)  # the window held it
            assert not _holds_message(records, written, dia_id)  # this update dropped it
            checked += 1
    assert checked >= 4


def test_same_seed_same_bytes(bench: tuple[str, Path, list[Conversation]], tmp_path: Path) -> None:
    system, out, convs = bench
    make_bench(convs, tmp_path, BenchOptions(system=system, faults=6, seed=3))
    for path in sorted(out.iterdir()):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_smartcomment_output_keeps_the_labels(
    bench: tuple[str, Path, list[Conversation]], tmp_path: Path
) -> None:
    system, out, convs = bench
    make_bench(
        convs, tmp_path, BenchOptions(system=system, faults=6, seed=3, format="smartcomment")
    )
    for path in sorted(tmp_path.glob("*.json")):
        native, _ = labelled_cases(out / path.with_suffix(".jsonl").name)
        annotations = json.loads(path.read_text())["data"]["annotations"]
        assert sorted((a["final_op_id"], a["final_error_type"]) for a in annotations) == sorted(
            (c["labels"][0]["op_id"], c["labels"][0]["error_type"]) for c in native
        )


@pytest.mark.parametrize(
    ("system", "kind"),
    [
        ("rag", "UpdateError"),
        ("rag", "ExtractionError"),
        ("long-context", "RetrievalError"),
        ("long-context", "DeletionError"),
        ("evermemos", "UpdateError"),
        ("evermemos", "DeletionError"),
    ],
)
def test_a_fault_type_the_system_cannot_have_is_an_error(
    system: str, kind: str, tmp_path: Path
) -> None:
    convs = load_locomo(SAMPLE_PATH, Subset(conversations=("1",)))
    with pytest.raises(ConfigError, match=f"system '{system}' cannot have a {kind}"):
        make_bench(convs, tmp_path, BenchOptions(system=system, types=(kind,)))
    assert not list(tmp_path.iterdir())  # nothing written


def test_cli_types_option(tmp_path: Path) -> None:
    base = ["bench", "make", "--system", "rag", "--conversations", "1", "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, [*base, "--types", "ResponseError", "--faults", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["injected"] == {"ResponseError": 2}
    result = CliRunner().invoke(cli, [*base, "--types", "DeletionError"])
    assert result.exit_code == 1
    assert "cannot have a DeletionError" in result.output
    result = CliRunner().invoke(cli, [*base, "--types", "NoSuchError"])
    assert result.exit_code == 2
    assert "unknown error type 'NoSuchError'" in result.output
