"""Attribution against the real Neo4j on the labeled smartcomment files (real traces, labels)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from queries import benchmark_query

from memtrace.admin import delete_trace
from memtrace.attribution.evaluate import score
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.model import Verdict
from memtrace.attribution.pipeline import Options, analyse_case, attribute_cases, evaluation_rows
from memtrace.attribution.records import memtrace_record
from memtrace.attribution.store import AttributionStore
from memtrace.cypher import all_queries, get_query
from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths

pytestmark = pytest.mark.integration

FILES = ("locomo_locomo-1.json", "locomo_locomo-2.json")


@pytest.fixture(scope="module")
def traces(db: Database, shared_data: Path) -> Iterator[list[str]]:
    scope = f"t{uuid.uuid4().hex[:10]}"
    ids = [f"{scope}-{name.removesuffix('.json')}" for name in FILES]
    for name, trace_id in zip(FILES, ids, strict=True):
        path = shared_data / "smartcomment" / name
        load_paths(db, [str(path)], LoadOptions(trace_id=trace_id))
    yield ids
    for trace_id in ids:
        delete_trace(db, trace_id)


def labels(db: Database, trace_id: str) -> list[dict[str, Any]]:
    return db.run(
        "MATCH (c:Case {trace_id: $t})-[l:LABELED]->(o:Operation) "
        "RETURN c.id AS case_id, o.id AS op_id, l.error_type AS error_type",
        t=trace_id,
    )


def sample_params(db: Database, trace_id: str, run_id: str) -> dict[str, Any]:
    reader = AttributionStore(db)
    case_id = labels(db, trace_id)[0]["case_id"]
    anchor = reader.anchor(trace_id, case_id)
    assert anchor is not None and anchor.answer is not None
    return {
        "trace_id": trace_id,
        "case_id": case_id,
        "answer_op": anchor.answer.id,
        "query_id": anchor.query_id,
        "evidence_ids": list(anchor.evidence_ids),
        "ids": list(anchor.evidence_ids),
        "message_ids": list(anchor.evidence_ids),
        "max_seq": anchor.answer.seq,
        "max_depth": 12,
        "max_hops": 3,
        "run_id": run_id,
        "rows": [],
        "op_id": anchor.answer.id,
        "op_ids": [anchor.answer.id],
        "trace_ids": [trace_id],
        "budget": 200,
        "sources": None,
    }


def test_every_attribution_query_explains_and_runs(
    db: Database, traces: list[str], run_id: str
) -> None:
    params = sample_params(db, traces[0], run_id)
    # One attribution of this run, so the result queries have something to read.
    verdicts = attribute_cases(
        AttributionStore(db), OfflineJudge(), [(traces[0], params["case_id"])], Options()
    )
    AttributionStore(db).write_attributions(run_id, verdicts)
    queries = [q for q in all_queries() if q.name.startswith("attribution/")]
    queries.sort(key=lambda q: q.name == "attribution/delete_attributions")  # cleanup last
    assert len(queries) >= 10
    for query in queries:
        values = {name: params[name] for name in query.params}
        db.run("EXPLAIN " + query.text, **values)
        rows = db.run(query, **values)
        if query.columns and query.name not in {"attribution/write_attributions"}:
            assert rows, f"{query.name} returned nothing on a real trace"
            assert set(rows[0]) == set(query.columns), query.name
    assert not db.run("MATCH (a:Attribution {run_id: $r}) RETURN a", r=run_id)


def test_candidate_query_holds_the_labeled_ops(db: Database, traces: list[str]) -> None:
    reader = AttributionStore(db)
    found = total = 0
    for trace_id in traces:
        for label in labels(db, trace_id):
            anchor = reader.anchor(trace_id, label["case_id"])
            assert anchor is not None and anchor.answer is not None
            rows = db.run(
                get_query("attribution/candidates"),
                trace_id=trace_id,
                answer_op=anchor.answer.id,
                query_id=anchor.query_id,
                evidence_ids=list(anchor.evidence_ids),
                max_depth=12,
            )
            seqs = [row["seq"] for row in rows]
            assert seqs == sorted(seqs)
            assert {"answer", "retrieval"} <= {row["role"] for row in rows}
            total += 1
            found += label["op_id"] in {row["op_id"] for row in rows}
    # Every label is found by the graph query alone (docs/performance.md): one that is not
    # fails here, no margin.
    assert (found, total) == (46, 46)


def test_backward_reachability_variants(db: Database, traces: list[str]) -> None:
    params = sample_params(db, traces[0], "unused")
    results = {}
    for name in ("backward_depends_on", "backward_flows_to", "backward_qpp"):
        query = benchmark_query(name)
        rows = db.run(query, **{k: params[k] for k in query.params})
        results[name] = {row["op_id"] for row in rows}
    assert params["answer_op"] in results["backward_depends_on"]
    # The qpp and FLOWS_TO walks see op-level lineage that DEPENDS_ON summarizes.
    assert results["backward_qpp"] <= results["backward_depends_on"]
    assert results["backward_flows_to"]


@pytest.mark.parametrize("strategy", ["linear", "binary"])
def test_offline_accuracy_on_labeled_shared_files(
    db: Database, traces: list[str], strategy: str
) -> None:
    reader = AttributionStore(db)
    judge = OfflineJudge()
    total = op_ok = type_ok = 0
    for trace_id in traces:
        for label in labels(db, trace_id):
            options = Options(strategy=strategy)  # type: ignore[arg-type]
            verdict = analyse_case(reader, judge, trace_id, label["case_id"], options).verdict
            total += 1
            op_ok += verdict.op_id == label["op_id"]
            type_ok += verdict.error_type == label["error_type"]
            assert verdict.llm_calls == 0
    # docs/performance.md: 100% / 100% on the 46 labeled cases; one regressed case fails
    assert (op_ok, type_ok, total) == (46, 46, 46)


def test_attribute_writes_idempotent_results_and_eval_scores_them(
    db: Database, traces: list[str], run_id: str
) -> None:
    trace_id = traces[1]
    cases = AttributionStore(db).failed_cases(trace_id)
    assert len(cases) == 24
    cases_plus_broken = [*cases, (trace_id, "no-such-case")]
    seen: list[str] = []
    verdicts = attribute_cases(
        AttributionStore(db),
        OfflineJudge(),
        cases_plus_broken,
        Options(),
        on_done=lambda v: seen.append(v.case_id),
    )
    assert len(seen) == 25
    broken = verdicts[-1]
    assert broken.error is not None and broken.op_id is None  # recorded, and the run went on
    for _ in range(2):  # re-running the same run id replaces, never duplicates
        assert (
            AttributionStore(db).write_attributions(run_id, verdicts) == 24
        )  # no Case node for the broken id
    counts = db.run(
        "MATCH (c:Case {trace_id: $t})-[:HAS_ATTRIBUTION]->(a:Attribution {run_id: $r}) "
        "OPTIONAL MATCH (a)-[:BLAMES]->(o:Operation) RETURN count(a) AS a, count(o) AS o",
        t=trace_id,
        r=run_id,
    )[0]
    assert counts == {"a": 24, "o": 24}  # the broken case has no Case node to hang on
    rows = evaluation_rows(AttributionStore(db), run_id, trace_id)
    assert rows.attrs["run_id"] == run_id
    assert (rows["flat_tokens"] > 1000).all()  # the whole trace, one size query for all traces
    scores = score(rows)
    ours = scores.summary.iloc[0]
    assert (ours["cases"], ours["op_accuracy"]) == (19, 1.0)
    baseline = scores.summary.iloc[1]
    assert baseline["op_accuracy"] < ours["op_accuracy"]
    assert int(scores.confusion.to_numpy().sum()) == 19
    record = memtrace_record(verdicts[0])
    assert set(record["error_attribution_result"]) == {"error_type", "op_id", "reason"}
    assert AttributionStore(db).delete_attributions(run_id) == 24
    # A run over some cases (--case) is scored on those, not on every labeled case it touched.
    some = [(trace_id, label["case_id"]) for label in labels(db, trace_id)[:2]]
    partial = attribute_cases(AttributionStore(db), OfflineJudge(), some, Options())
    AttributionStore(db).write_attributions(run_id, partial)
    rows = evaluation_rows(AttributionStore(db), run_id, None)
    assert sorted(rows["case_id"]) == sorted(case for _, case in some)
    assert score(rows).summary.iloc[0]["cases"] == 2
    assert AttributionStore(db).delete_attributions(run_id) == 2


def test_retrieved_evidence_finds_the_evidence(db: Database, traces: list[str]) -> None:
    reader = AttributionStore(db)
    trace_id = traces[0]
    results = []
    for label in labels(db, trace_id):
        analysis = analyse_case(
            reader, OfflineJudge(), trace_id, label["case_id"], Options(evidence="retrieved")
        )
        assert all(t.message_id.startswith("U1:") for t in analysis.trails)
        results.append(analysis.verdict.op_id == label["op_id"])
    # every case of this file (docs/performance.md: 95.7% over both files); one miss fails
    assert (sum(results), len(results)) == (27, 27)


def test_messages_carry_the_day_they_were_said(db: Database, traces: list[str]) -> None:
    """The dates retrieved evidence resolves relative dates against, read with the messages."""
    messages = AttributionStore(db).messages(traces[0])
    dates = messages.dates
    assert set(dates) == {message_id for message_id, _ in messages.corpus}
    assert list(messages.seqs) == [message_id for message_id, _ in messages.corpus]
    assert dates["U1:D1:1@1"] == date(2023, 5, 8)  # session 1: 1:56 pm on 8 May, 2023


def test_cli_attribute_eval_explain(traces: list[str], run_id: str, db: Database) -> None:
    from click.testing import CliRunner

    from memtrace.cli import cli

    runner = CliRunner()
    trace_id = traces[0]
    args = ["attribute", "--trace", trace_id, "--judge", "offline", "--run-id", run_id, "--json"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert len(records) == 34
    assert all(r["error_attribution_result"]["op_id"] for r in records)
    result = runner.invoke(cli, ["eval", "--run-id", run_id, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["summary"]
    assert (summary[0]["cases"], summary[0]["op_accuracy"]) == (27, 1.0)
    assert summary[1]["method"] == "baseline:answer-op"
    # The file's labels were planted (injected faults and derived losses): --labels planted keeps
    # every one of them, another source none.
    result = runner.invoke(cli, ["eval", "--run-id", run_id, "--labels", "planted", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"][0]["cases"] == 27
    result = runner.invoke(cli, ["eval", "--run-id", run_id, "--labels", "replay"])
    assert result.exit_code == 1 and "with a replay label" in result.output
    case_id = labels(db, trace_id)[0]["case_id"]
    result = runner.invoke(cli, ["explain", case_id, "--trace", trace_id, "--judge", "offline"])
    assert result.exit_code == 0, result.output
    assert "evidence trails" in result.output and ":param trace_id" in result.output
    result = runner.invoke(cli, ["explain", "no-such-case"])
    assert result.exit_code == 1 and "no complete trace" in result.output
    result = runner.invoke(cli, ["db", "delete", "--run", run_id, "--trace", trace_id])
    assert result.exit_code == 0, result.output
    assert f"run {run_id!r}: deleted 34 attributions" in result.output
    assert not db.run("MATCH (a:Attribution {run_id: $r}) RETURN a", r=run_id)


def test_reloading_or_deleting_a_trace_removes_its_attributions(db: Database, run_id: str) -> None:
    trace_id = f"{run_id}-small"
    small = Path(__file__).parent.parent / "data" / "native" / "small.jsonl"
    verdict = Verdict(trace_id, "q-1", "op-answer", "ResponseError", "test", "offline")

    def attributions() -> int:
        rows = db.run("MATCH (a:Attribution {trace_id: $t}) RETURN count(a) AS n", t=trace_id)
        return int(rows[0]["n"])

    load_paths(db, [str(small)], LoadOptions(trace_id=trace_id))
    assert AttributionStore(db).write_attributions(run_id, [verdict]) == 1
    load_paths(db, [str(small)], LoadOptions(trace_id=trace_id))  # a re-load replaces the trace
    assert attributions() == 0
    assert AttributionStore(db).write_attributions(run_id, [verdict]) == 1
    delete_trace(db, trace_id)
    assert attributions() == 0
