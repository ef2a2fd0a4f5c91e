"""The what-if replayer over the real replay engine (memtrace.replay) on a traced offline mem0
run of LoCoMo conversation 1 (sessions 1-4; a development conversation)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from memtrace.errors import NotReplayableError
from memtrace.patterns import CLASS_COLUMNS
from memtrace.patterns.headroom import BlamedOp, what_if
from memtrace.replay import TraceInputs, TraceReplayer, make_replayer, read_native
from memtrace.replay.graph import TraceFiles
from memtrace.replay.what_if import WhatIfReplayer
from memtrace.settings import LLMSettings, Neo4jSettings, Settings
from memtrace.systems.core import ConversationRun
from memtrace.systems.locomo import Subset, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.registry import make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock


@pytest.fixture(scope="module")
def traced(
    shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ConversationRun, Path]]:
    (conv,) = load_locomo(
        shared_data / "locomo" / "locomo10.json",
        Subset(conversations=("1",), sessions=(1, 2, 3, 4)),
    )
    out = tmp_path_factory.mktemp("traces")
    run, path = run_conversation(make_system("mem0", OfflineBackend()), conv, out, clock=SimClock())
    assert path is not None
    yield run, path


def files(path: Path) -> Callable[[str], TraceReplayer]:
    """The replayer of the one traced file, whatever the trace id asked."""
    replayer = make_replayer(read_native(path))
    return lambda _trace_id: replayer


def derived_classes(run: ConversationRun, inputs: TraceInputs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Classes from the run's own evidence trails (the first loss of each failed case; the
    answer operation when all evidence reached the context), and the blamed op of each case."""
    blamed: list[dict[str, str]] = []
    groups: dict[tuple[str, str], list[str]] = {}
    for result in run.results:
        if result.passed or not result.keys:
            continue
        losses = [loss for loss in result.missing.values() if loss is not None]
        if result.missing and not losses:
            continue
        op_id = losses[0].op_id if losses else result.qa_op
        error_type = str(losses[0].type) if losses else "ResponseError"
        blamed.append({"trace_id": inputs.trace_id, "case_id": result.case_id, "op_id": op_id})
        groups.setdefault((inputs.operations[op_id][0], error_type), []).append(result.case_id)
    rows = []
    for (op_name, kind), cases in sorted(groups.items()):
        refs = [[inputs.trace_id, c] for c in sorted(cases)]
        rows.append(
            {column: None for column in CLASS_COLUMNS}
            | {"system": "mem0", "op_name": op_name, "error_type": kind}
            | {"inputs": [], "cases": len(cases), "case_refs": refs}
        )
    return pd.DataFrame(rows, columns=list(CLASS_COLUMNS)), pd.DataFrame(blamed)


def test_class_what_if_over_the_engine(traced: tuple[ConversationRun, Path]) -> None:
    run, path = traced
    inputs = read_native(path)
    classes, blamed = derived_classes(run, inputs)
    kinds = {(r["op_name"], r["error_type"]): r for r in classes.to_dict("records")}
    retrieval = kinds[("memory_system.search_vector_store", "RetrievalError")]
    answer = kinds[("question-answering", "ResponseError")]
    assert retrieval["cases"] >= 5 and answer["cases"] >= 5
    replayer = WhatIfReplayer(files(path))
    result = what_if(classes, blamed, replayer, fix_alone=True, joint_top=3)
    rows = {(r["op_name"], r["error_type"]): r for r in result.classes.to_dict("records")}

    # the answer step's oracle is the gold answer, judged for real: every case, no run
    got = rows[("question-answering", "ResponseError")]
    assert (got["rescued"], got["broken"], got["replays"]) == (answer["cases"], 0, 0)
    assert got["fix_alone_share"] == 1.0

    # retrieval: a repaired search changes only its own question, so the class repair rescues
    # exactly the cases each repair rescues alone, and those agree with the engine's own
    # per-case replay; the cases it leaves wrong had their evidence in the context
    got = rows[("memory_system.search_vector_store", "RetrievalError")]
    engine = make_replayer(inputs)
    by_case = blamed.set_index("case_id")["op_id"]
    alone = [
        engine.replay(case_id, [by_case[case_id]]).passed for _, case_id in retrieval["case_refs"]
    ]
    assert got["fix_alone"] == sum(alone) == got["rescued"]
    assert got["broken"] == 0 and got["also_rescued"] == 0
    assert got["rescued"] < retrieval["cases"]  # retrieving the evidence is not always enough
    assert set(got["still_lost"]) == {"ResponseError"}
    assert got["why"].startswith(f"retrieval fixes would rescue {got['rescued']} of")
    # one run per replay: the class, and each case alone, and the engine's one run that maps
    # op ids to steps, paid by the first class measured that re-runs the system (the extraction
    # class, when a case is blamed on extraction)
    extraction = rows.get(("memory_system.extract_facts", "ExtractionError"))
    assert got["replays"] == (extraction is None) + 1 + retrieval["cases"]
    if extraction is not None:
        assert extraction["replays"] == 1 + 1 + extraction["cases"]
    assert result.replays == replayer.runs
    assert result.total_cases == len(run.results)
    assert len(result.joint_keys) == min(3, len(classes))


def test_a_precise_search_oracle_rescues_what_distractors_cost(
    traced: tuple[ConversationRun, Path],
) -> None:
    # conversation 1 (development): the same-size oracle puts the evidence among as many results
    # as the system shows, where the answer step can still quote a better-matching distractor;
    # the precise one shows only what holds the evidence, so it rescues those cases too
    run, path = traced
    classes, blamed = derived_classes(run, read_native(path))
    key = ("memory_system.search_vector_store", "RetrievalError")
    rescued = {}
    for precise in (False, True):
        replayer = WhatIfReplayer(files(path), precise_search=precise)
        result = what_if(classes, blamed, replayer, fix_alone=False, joint_top=0)
        rows = {(r["op_name"], r["error_type"]): r for r in result.classes.to_dict("records")}
        rescued[precise] = (rows[key]["rescued"], rows[key]["broken"])
    assert rescued[True][0] > rescued[False][0] and rescued[True][1] == 0


def test_replaying_with_no_repair_of_a_construction_step_leaves_answers_as_recorded(
    traced: tuple[ConversationRun, Path],
) -> None:
    run, path = traced
    replayer = WhatIfReplayer(files(path))
    inputs = read_native(path)
    # an extraction repair for a passing case: the answers it re-runs match the recorded ones
    # except where the restored evidence changes them (none must break)
    passing = next(r for r in run.results if r.passed and r.keys)
    extract = next(op for op, (name, _) in inputs.operations.items() if "extract" in name)
    outcomes = replayer.replay(
        inputs.trace_id, [BlamedOp(inputs.trace_id, passing.case_id, extract)]
    )
    assert set(outcomes) == set(inputs.cases)
    assert outcomes[passing.case_id].passed


def test_an_imported_trace_is_not_replayable(tmp_path: Path) -> None:
    path = tmp_path / "otlp.json"
    path.write_text('{"resourceSpans": []}\n', encoding="utf-8")

    replayer = WhatIfReplayer(TraceFiles({"otlp": path}).for_trace)
    why = replayer.replayable("otlp")
    assert why is not None and "cannot be replayed" in why
    with pytest.raises(NotReplayableError):
        read_native(path)


def test_trace_files_give_a_reference_systems_trace_to_the_engine_with_the_settings(
    traced: tuple[ConversationRun, Path], tmp_path: Path
) -> None:
    """A trace of a system memtrace runs is the engine's, whatever ``--replayer`` names (the
    factory is for other systems), and the engine gets the settings (mem0-lib's endpoint)."""
    _, path = traced
    inputs = read_native(path)
    settings = Settings(home=tmp_path, neo4j=Neo4jSettings(), llm=LLMSettings())
    files = TraceFiles({inputs.trace_id: path}, settings, "memtrace.replay.hook:read_records")
    replayer = files.for_trace(inputs.trace_id)
    assert isinstance(replayer, TraceReplayer) and replayer.settings is settings
    assert replayer.inputs == inputs
    what_if_ = WhatIfReplayer(files.for_trace)  # asks the trace's own replayer, by its id
    assert what_if_.baseline(inputs.trace_id) == replayer.recorded()
    extract = next(op for op, (name, _) in inputs.operations.items() if "extract" in name)
    case_id = next(iter(inputs.cases))
    repairs = [BlamedOp(inputs.trace_id, case_id, extract)]
    assert what_if_.cost(inputs.trace_id, repairs) == replayer.joint_cost({case_id: {extract}})


def test_a_class_replay_asks_the_named_traces_replayer_for_the_cases_asked(
    traced: tuple[ConversationRun, Path],
) -> None:
    run, path = traced
    inputs = read_native(path)
    replayer = WhatIfReplayer(TraceFiles({inputs.trace_id: path}).for_trace)
    passing = next(r for r in run.results if r.passed and r.keys)
    extract = next(op for op, (name, _) in inputs.operations.items() if "extract" in name)
    repairs = [BlamedOp(inputs.trace_id, passing.case_id, extract)]
    outcomes = replayer.replay(inputs.trace_id, repairs, cases=[passing.case_id])
    assert set(outcomes) == {passing.case_id} and outcomes[passing.case_id].passed
    assert replayer.runs == 2  # the step map's run and the repaired conversation
