"""`memtrace load --bulk` on a throwaway managed server: refused unless safe, and the graph it
imports is the graph a Bolt load of the same files writes (counts, every node and relationship
with its typed properties, and the offline attribution verdicts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_managed_server import SMALL as SMALL_MEMORY
from test_managed_server import free_port, throwaway_layout

from memtrace.admin import delete_everything, graph_stats, node_count
from memtrace.attribution.judges import OfflineJudge
from memtrace.attribution.pipeline import Options, attribute_cases
from memtrace.attribution.store import AttributionStore
from memtrace.cli import cli
from memtrace.db import Database, connect
from memtrace.errors import DatabaseNotEmptyError, InputError, MemtraceError, ServerError
from memtrace.loaders.bulk import BulkTarget, bulk_load
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.server import manager
from memtrace.server.config import ServerOptions
from memtrace.server.layout import ServerLayout
from memtrace.settings import LLMSettings, Neo4jSettings, Settings

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parent.parent / "data"
SMALL = DATA / "native" / "small.jsonl"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerLayout]:
    layout = throwaway_layout(tmp_path_factory.mktemp("bulk"))
    options = ServerOptions(
        bolt_port=free_port(), http_port=free_port(), auth=True, memory=SMALL_MEMORY
    )
    manager.start(layout, options)
    yield layout
    manager.stop(layout)


def settings_of(layout: ServerLayout) -> Settings:
    state = layout.read_state()
    assert state is not None
    uri = f"bolt://127.0.0.1:{state.bolt_port}"
    neo4j = Neo4jSettings(uri=uri, password=layout.read_password(), managed=True)
    return Settings(home=layout.home, neo4j=neo4j, llm=LLMSettings())


def target_of(layout: ServerLayout) -> BulkTarget:
    settings = settings_of(layout)
    return BulkTarget(lambda: connect(settings), "neo4j", settings.neo4j.uri, layout)


@pytest.fixture(scope="module")
def files(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """small.jsonl, both shared smartcomment graphs and a fresh `bench make` set."""
    out = tmp_path_factory.mktemp("bench")
    args = ["bench", "make", "--conversations", "1", "--faults", "10", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    smartcomment = sorted((shared_data / "smartcomment").glob("*.json"))
    return [str(SMALL), *map(str, smartcomment), *map(str, sorted(out.glob("*.jsonl")))]


def typed(value: Any) -> Any:
    """A value with its type, so 1 and 1.0 (or [] and null) compare as different."""
    if isinstance(value, list):
        return ("list", tuple(typed(item) for item in value))
    return (type(value).__name__, value)


def snapshot(db: Database) -> dict[str, Any]:
    nodes = db.run(
        "MATCH (n) RETURN labels(n) AS labels, coalesce(n.trace_id, n.id) AS trace, "
        "n.id AS id, properties(n) AS props"
    )
    relationships = db.run(
        "MATCH (a)-[r]->(b) RETURN type(r) AS type, labels(a)[0] AS a_label, a.id AS a, "
        "labels(b)[0] AS b_label, b.id AS b, coalesce(a.trace_id, a.id) AS trace, "
        "properties(r) AS props"
    )
    loaded_at = [row["props"].pop("loaded_at") for row in nodes if row["labels"] == ["Trace"]]
    assert loaded_at and all(type(moment).__name__ == "DateTime" for moment in loaded_at)
    store = AttributionStore(db)
    verdicts = attribute_cases(store, OfflineJudge(), store.failed_cases(None), Options())

    def key(row: dict[str, Any]) -> tuple[str, ...]:
        fixed = tuple(str(value) for name, value in row.items() if name != "props")
        props = tuple(sorted((name, repr(typed(v))) for name, v in row["props"].items()))
        return (*fixed, repr(props))

    stats = graph_stats(db)
    for trace in stats["traces"]:
        trace.pop("loaded_at")
    schema = db.run(
        "SHOW INDEXES YIELD name, type, labelsOrTypes, properties, owningConstraint, state "
        "RETURN collect([name, type, labelsOrTypes, properties, owningConstraint, state]) AS all"
    )[0]["all"]
    return {
        "schema": sorted(map(repr, schema)),
        "stats": stats,
        "elements": len(nodes) + len(relationships),
        "nodes": sorted(map(key, nodes)),
        "relationships": sorted(map(key, relationships)),
        "verdicts": sorted(
            (v.trace_id, v.case_id, str(v.op_id), str(v.error_type)) for v in verdicts
        ),
    }


def test_bad_file_imports_nothing_and_keeps_the_server_up(server: ServerLayout) -> None:
    pid = manager.running_pid(server)
    bad = DATA / "malformed" / "malformed_json.jsonl"
    with pytest.raises(InputError, match=r"malformed_json\.jsonl:"):
        bulk_load(target_of(server), [str(SMALL), str(bad)], LoadOptions())
    assert manager.running_pid(server) == pid
    with connect(settings_of(server)) as db:
        assert node_count(db) == 0


def test_a_failed_import_leaves_an_empty_usable_database(server: ServerLayout) -> None:
    options = manager.restart_options(server)
    manager.stop(server)
    header, data = server.import_dir / "bad-header.csv", server.import_dir / "bad.csv"
    header.write_text(":ID,n:long\n", encoding="utf-8")
    data.write_text("1,not-a-number\n", encoding="utf-8")
    try:
        with pytest.raises(ServerError, match="left empty"):
            manager.import_full(server, "neo4j", [f"--nodes=Bad={header},{data}"])
    finally:
        manager.start(server, options)
    with connect(settings_of(server)) as db:
        assert node_count(db) == 0
        assert db.run("CREATE (n:Probe) RETURN count(n) AS n") == [{"n": 1}]
        delete_everything(db)


def test_an_external_server_is_refused(server: ServerLayout) -> None:
    settings = settings_of(server)
    external = BulkTarget(lambda: connect(settings), "neo4j", "bolt://db.example:7687", None)
    with pytest.raises(MemtraceError, match="not the managed server"):
        bulk_load(external, [str(SMALL)], LoadOptions())


def test_bulk_import_equals_a_bolt_load(server: ServerLayout, files: list[str]) -> None:
    summary = bulk_load(target_of(server), files, LoadOptions())
    assert summary.imported and summary.phases["import"] > 0
    assert manager.running_pid(server) is not None
    with connect(settings_of(server)) as db:
        bulk = snapshot(db)
        # a database that holds data is refused before anything is stopped or written
        pid = manager.running_pid(server)
        with pytest.raises(DatabaseNotEmptyError, match="holds"):
            bulk_load(target_of(server), [str(SMALL)], LoadOptions())
        assert manager.running_pid(server) == pid
        delete_everything(db)
        # and the schema, which the Bolt load then creates one statement at a time (the bulk
        # path creates it in one transaction)
        for row in db.run("SHOW CONSTRAINTS YIELD name"):
            db.run(f"DROP CONSTRAINT `{row['name']}`")
        for row in db.run("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' RETURN name"):
            db.run(f"DROP INDEX `{row['name']}`")
        assert len(db.run("SHOW INDEXES")) == 2  # the two token lookup indexes
        load_paths(db, files, LoadOptions())
        bolt = snapshot(db)
    counts = bulk["stats"]["counts"]
    assert counts["traces"] == len(files) and counts["failed_cases"] > 0
    assert summary.total("elements_written") == bulk["elements"] == bolt["elements"]
    assert bulk["stats"] == bolt["stats"]
    assert bulk["schema"] == bolt["schema"] and any("variable_key" in s for s in bulk["schema"])
    assert bulk["nodes"] == bolt["nodes"]
    assert bulk["relationships"] == bolt["relationships"]
    assert len(bulk["verdicts"]) >= 50
    assert bulk["verdicts"] == bolt["verdicts"]
