"""The loader against a real Neo4j: round trips, idempotency, malformed input, crash recovery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from membase_stages import STAGES, write_traced_data
from synthetic import write_synthetic_trace

from memtrace.admin import delete_trace
from memtrace.cli import cli
from memtrace.db import Database
from memtrace.errors import InputError
from memtrace.loaders.load import LoadOptions, load_paths

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parent.parent / "data"
SMALL = DATA / "native" / "small.jsonl"
SMARTCOMMENT_FILES = {
    "locomo_locomo-1.json": {"operations": 319, "variables": 841, "edges": 1832, "cases": 35},
    "locomo_locomo-2.json": {"operations": 292, "variables": 788, "edges": 1545, "cases": 25},
}
FAILED_AND_LABELS = {"locomo_locomo-1.json": (34, 27), "locomo_locomo-2.json": (24, 19)}

COUNT_TRACE = """
MATCH (n) WHERE n.trace_id = $trace_id
WITH count(n) AS nodes
OPTIONAL MATCH (a)-[r]->() WHERE a.trace_id = $trace_id
RETURN nodes, count(r) AS relationships
"""
COUNT_BY_TYPE = """
MATCH (a)-[r]->() WHERE a.trace_id = $trace_id
RETURN type(r) AS type, count(*) AS n
"""
COUNT_BY_LABEL = """
MATCH (n) WHERE n.trace_id = $trace_id
RETURN labels(n)[0] AS label, count(*) AS n
"""


@pytest.fixture
def cleanup(db: Database) -> Iterator[list[str]]:
    trace_ids: list[str] = []
    yield trace_ids
    for trace_id in trace_ids:
        delete_trace(db, trace_id)


def _by(db: Database, query: str, key: str, trace_id: str) -> dict[str, int]:
    return {row[key]: row["n"] for row in db.run(query, trace_id=trace_id)}


def _totals(db: Database, trace_id: str) -> tuple[int, int]:
    row = db.run(COUNT_TRACE, trace_id=trace_id)[0]
    return int(row["nodes"]), int(row["relationships"])


def test_membase_traced_data_loads_each_user_once_from_its_last_stage(
    db: Database, tmp_path: Path, cleanup: list[str]
) -> None:
    traced = write_traced_data(tmp_path)  # real smartcomment, exported after every stage
    users = sorted(traced.iterdir())
    evaluation = {json.loads((u / STAGES[2]).read_text())["graph_id"]: u / STAGES[2] for u in users}
    cleanup.extend(evaluation)
    result = CliRunner().invoke(cli, ["load", str(traced), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert {f["trace_id"]: f["path"] for f in summary["files"]} == {
        trace_id: str(path) for trace_id, path in evaluation.items()
    }
    line = "2 traces are each in several cumulative stage files (6 files): each loaded once"
    assert [row for row in result.stderr.splitlines() if line in row] == [
        f"{line}, from its most complete stage ({STAGES[2]} x2)"
    ]
    for trace_id, path in evaluation.items():
        graph = json.loads(path.read_text())
        trace = db.run("MATCH (t:Trace {id: $id}) RETURN t", id=trace_id)[0]["t"]
        assert (trace["system"], trace["dataset"], trace["user_id"]) == (
            "mem0", "locomo", graph["user_id"],
        )  # fmt: skip
        assert trace["source_file"] == str(path.resolve())
        assert trace["n_operations"] == len(graph["data"]["operations"])
        queries = [n for n in graph["data"]["nodes"] if n["class_name"] == "query"]
        cases = db.run(
            "MATCH (c:Case {trace_id: $t}) RETURN c.id AS id, c.judge_score AS score",
            t=trace_id,
        )
        assert sorted(c["id"] for c in cases) == sorted(q["name"] for q in queries)
        assert all(c["score"] in (0.0, 1.0) for c in cases)  # the evaluation stage's scores


def test_native_round_trip(db: Database, run_id: str, cleanup: list[str]) -> None:
    cleanup.append(run_id)
    summary = load_paths(db, [str(SMALL)], LoadOptions(trace_id=run_id, batch_size=3))
    assert summary.files[0].trace_id == run_id
    labels = _by(db, COUNT_BY_LABEL, "label", run_id)
    assert labels == {"Session": 2, "Operation": 7, "Variable": 10, "Case": 1}
    types = _by(db, COUNT_BY_TYPE, "type", run_id)
    assert types == {
        "READS": 12,
        "WRITES": 7,
        "IN_SESSION": 7,
        "FLOWS_TO": 4,
        "DELETES": 1,
        "NEXT_VERSION": 1,
        "DEPENDS_ON": 7,
        "QUERY": 1,
        "PREDICTION": 1,
        "EVIDENCE": 1,
        "LABELED": 1,
    }
    trace = db.run("MATCH (t:Trace {id: $id}) RETURN t", id=run_id)[0]["t"]
    assert trace["load_state"] == "complete"
    assert (trace["system"], trace["dataset"], trace["source"]) == ("mem0", "locomo", "native")
    assert (trace["n_operations"], trace["n_variables"], trace["n_failed_cases"]) == (7, 10, 1)
    assert trace["meta_tags"] == ["a", "b"]
    assert nodes_of(db, run_id, "Session", "HAS_SESSION") == 2
    ops = db.run(
        "MATCH (o:Operation {trace_id: $t}) RETURN o.id AS id, o.kind AS kind, o.seq AS seq "
        "ORDER BY o.seq",
        t=run_id,
    )
    assert [(o["id"], o["kind"]) for o in ops] == [
        ("op-extract", "extraction"),
        ("op-add", "embedding"),
        ("op-update", "update"),
        ("op-delete", "deletion"),
        ("op-search", "retrieval"),
        ("op-answer", "generation"),
        ("op-judge", "judge"),
    ]
    case = db.run(
        "MATCH (c:Case {trace_id: $t, id: 'q-1'})-[l:LABELED]->(o:Operation) "
        "MATCH (c)-[:EVIDENCE]->(e) RETURN c, properties(l) AS l, o.id AS op, e.id AS evidence",
        t=run_id,
    )[0]
    assert case["c"]["failed"] is True
    assert case["c"]["query"] == "When did Caroline go to the support group?"
    assert case["c"]["prediction"] == "In June."
    assert case["c"]["golden_answers"] == ["7 May"]
    assert (case["op"], case["evidence"]) == ("op-answer", "msg-1@1")
    assert (case["l"]["error_type"], case["l"]["source"]) == ("ResponseError", "human")
    assert case["l"]["meta_annotator"] == "ann-1"
    deleted = db.run(
        "MATCH (o:Operation {trace_id: $t})-[:DELETES]->(v) RETURN o.id AS op, v.id AS var",
        t=run_id,
    )
    assert deleted == [{"op": "op-delete", "var": "mem-1@2"}]
    upstream = db.run(
        "MATCH (:Operation {trace_id: $t, id: 'op-answer'})-[:DEPENDS_ON*]->(u) "
        "RETURN collect(DISTINCT u.id) AS ids",
        t=run_id,
    )[0]["ids"]
    assert sorted(upstream) == ["op-add", "op-extract", "op-search"]


def test_a_new_trace_written_together_is_the_graph_the_per_trace_write_makes(
    db: Database, run_id: str, cleanup: list[str]
) -> None:
    """A new small trace goes through ``write_new_traces`` (one transaction, the
    ``create_new_*`` queries); one over the batch size through the per-trace batches: the
    same nodes, relationships and trace properties, and the summary counts what was written."""
    together, alone = f"{run_id}-together", f"{run_id}-alone"
    cleanup += [together, alone]
    load_paths(db, [str(SMALL)], LoadOptions(trace_id=alone, batch_size=3))
    summary = load_paths(db, [str(SMALL)], LoadOptions(trace_id=together))
    for query, key in ((COUNT_BY_LABEL, "label"), (COUNT_BY_TYPE, "type")):
        assert _by(db, query, key, together) == _by(db, query, key, alone)
    assert nodes_of(db, together, "Session", "HAS_SESSION") == 2
    traces = {
        row["id"]: row["t"]
        for row in db.run(
            "MATCH (t:Trace) WHERE t.id IN $ids WITH t.id AS id, properties(t) AS p "
            "RETURN id, p { .*, id: null, loaded_at: null } AS t",
            ids=[together, alone],
        )
    }
    assert traces[together] == traces[alone]
    assert traces[together]["load_state"] == "complete"
    nodes, relationships = _totals(db, together)
    labels = _by(db, COUNT_BY_LABEL, "label", together)
    written = summary.total("nodes_written"), summary.total("relationships_written")
    # the Trace node and its HAS_SESSION / HAS_CASE links, which _totals leaves out, too
    assert written == (nodes + 1, relationships + labels["Session"] + labels["Case"])


def test_new_traces_refused_together_are_written_one_by_one(
    db: Database, run_id: str, cleanup: list[str]
) -> None:
    """A node left under a trace id with no Trace node (an interrupted delete) makes the
    together transaction fail on the key constraint; the load writes the trace on its own,
    which deletes the leftover first."""
    cleanup.append(run_id)
    db.run("CREATE (:Operation {trace_id: $t, id: 'op-extract', name: 'leftover'})", t=run_id)
    load_paths(db, [str(SMALL)], LoadOptions(trace_id=run_id))
    labels = _by(db, COUNT_BY_LABEL, "label", run_id)
    assert labels == {"Session": 2, "Operation": 7, "Variable": 10, "Case": 1}
    names = db.run(
        "MATCH (o:Operation {trace_id: $t, id: 'op-extract'}) RETURN o.name AS name", t=run_id
    )
    assert [row["name"] for row in names] != ["leftover"]


def nodes_of(db: Database, trace_id: str, label: str, rel: str) -> int:
    query = {
        ("Session", "HAS_SESSION"): "MATCH (:Trace {id: $t})-[:HAS_SESSION]->(s:Session) "
        "RETURN count(s) AS n",
    }[(label, rel)]
    return int(db.run(query, t=trace_id)[0]["n"])


def test_reload_is_idempotent(db: Database, run_id: str, cleanup: list[str]) -> None:
    cleanup.append(run_id)
    load_paths(db, [str(SMALL)], LoadOptions(trace_id=run_id))
    first = (_totals(db, run_id), _by(db, COUNT_BY_TYPE, "type", run_id))
    load_paths(db, [str(SMALL)], LoadOptions(trace_id=run_id, batch_size=2))
    second = (_totals(db, run_id), _by(db, COUNT_BY_TYPE, "type", run_id))
    assert first == second
    assert db.run("MATCH (t:Trace {id: $id}) RETURN count(t) AS n", id=run_id)[0]["n"] == 1


def test_malformed_files_write_nothing(db: Database, run_id: str, cleanup: list[str]) -> None:
    cleanup.append(run_id)
    files = sorted((DATA / "malformed").iterdir())
    assert len(files) >= 15
    for path in files:
        with pytest.raises(InputError) as caught:
            load_paths(db, [str(path)], LoadOptions(trace_id=run_id))
        assert str(path) in str(caught.value)
        assert _totals(db, run_id) == (0, 0), path.name
        assert db.run("MATCH (t:Trace {id: $id}) RETURN count(t) AS n", id=run_id)[0]["n"] == 0


def test_bad_file_in_a_batch_stops_everything(
    db: Database, run_id: str, cleanup: list[str], tmp_path: Path
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(SMALL.read_text().replace('"id": "small"', f'"id": "{run_id}"'))
    cleanup.append(run_id)
    with pytest.raises(InputError):
        load_paths(db, [str(good), str(DATA / "malformed" / "bad_timestamp.jsonl")], LoadOptions())
    assert _totals(db, run_id) == (0, 0)


@pytest.mark.parametrize("name", sorted(SMARTCOMMENT_FILES))
def test_smartcomment_files_load_with_every_label_resolved(
    db: Database, run_id: str, cleanup: list[str], shared_data: Path, name: str
) -> None:
    path = shared_data / "smartcomment" / name
    cleanup.append(run_id)
    summary = load_paths(db, [str(path)], LoadOptions(trace_id=run_id))
    expected = SMARTCOMMENT_FILES[name]
    labels = _by(db, COUNT_BY_LABEL, "label", run_id)
    assert labels["Operation"] == expected["operations"]
    assert labels["Variable"] == expected["variables"]
    assert labels["Case"] == expected["cases"]
    types = _by(db, COUNT_BY_TYPE, "type", run_id)
    assert types["FLOWS_TO"] == expected["edges"]
    failed, n_labels = FAILED_AND_LABELS[name]
    assert summary.files[0].failed_cases == failed
    assert types["LABELED"] == n_labels
    failed_in_graph = db.run(
        "MATCH (c:Case {trace_id: $t}) WHERE c.failed RETURN count(c) AS n", t=run_id
    )[0]["n"]
    assert failed_in_graph == failed
    annotations = json.loads(path.read_text())["data"]["annotations"]
    for annotation in annotations:
        case_id = annotation["query_id"].removeprefix("query:").removesuffix("@1")
        row = db.run(
            "MATCH (c:Case {trace_id: $t, id: $case})-[l:LABELED]->(o:Operation) "
            "MATCH (c)-[:QUERY]->(q:Variable) "
            "OPTIONAL MATCH (c)-[:EVIDENCE]->(e:Variable) "
            "RETURN o.id AS op, l.error_type AS type, q.id AS query, collect(e.id) AS evidence",
            t=run_id,
            case=case_id,
        )
        assert len(row) == 1, case_id
        assert row[0]["op"] == annotation["final_op_id"]
        assert row[0]["type"] == annotation["final_error_type"]
        assert row[0]["query"] == annotation["query_id"]
        assert sorted(row[0]["evidence"]) == sorted(annotation["source_evidence_ids"])
    # every memory deletion in the file is explicit
    deletes = db.run(
        "MATCH (o:Operation {trace_id: $t})-[:DELETES]->(v:Variable) RETURN count(*) AS n",
        t=run_id,
    )[0]["n"]
    markers = sum(
        1
        for edge in json.loads(path.read_text())["data"]["edges"]
        if edge["target_full_node_id"].startswith("delete_marker:")
    )
    assert deletes == markers > 0


def test_killed_load_is_completed_by_a_rerun(
    db: Database, run_id: str, cleanup: list[str], tmp_path: Path
) -> None:
    cleanup.append(run_id)
    path = tmp_path / "big.jsonl"
    counts = write_synthetic_trace(path, run_id, messages=6000)
    env = {**os.environ, "NEO4J_URI": db.settings.uri, "NEO4J_DATABASE": db.database}
    if db.settings.password is not None:
        env["NEO4J_PASSWORD"] = db.settings.password.get_secret_value()
    env["NEO4J_USER"] = db.settings.user
    command = "from memtrace.cli.load import load_command; load_command()"
    process = subprocess.Popen(
        [sys.executable, "-c", command, str(path), "--batch-size", "200", "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            written = db.run(
                "MATCH (v:Variable {trace_id: $t}) WHERE v.id IS NOT NULL RETURN count(v) AS n",
                t=run_id,
            )[0]["n"]
            if written >= 1000:
                break
            assert process.poll() is None, "the load finished before it could be killed"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    state = db.run("MATCH (t:Trace {id: $id}) RETURN t.load_state AS s", id=run_id)[0]["s"]
    assert state == "loading"
    partial = _totals(db, run_id)
    load_paths(db, [str(path)], LoadOptions())
    state = db.run("MATCH (t:Trace {id: $id}) RETURN t.load_state AS s", id=run_id)[0]["s"]
    assert state == "complete"
    labels = _by(db, COUNT_BY_LABEL, "label", run_id)
    assert labels["Operation"] == counts["operations"]
    assert labels["Variable"] == counts["variables"]
    assert labels["Case"] == counts["cases"]
    assert _by(db, COUNT_BY_TYPE, "type", run_id)["FLOWS_TO"] == counts["edges"]
    assert _totals(db, run_id) > partial
    duplicates = db.run(
        "MATCH (v:Variable {trace_id: $t}) WHERE v.id IS NOT NULL "
        "WITH v.id AS id, count(*) AS n WHERE n > 1 RETURN count(*) AS dups",
        t=run_id,
    )[0]["dups"]
    assert duplicates == 0
    # and a clean re-run gives exactly the same graph
    before = (_totals(db, run_id), _by(db, COUNT_BY_TYPE, "type", run_id))
    load_paths(db, [str(path)], LoadOptions())
    assert (_totals(db, run_id), _by(db, COUNT_BY_TYPE, "type", run_id)) == before
