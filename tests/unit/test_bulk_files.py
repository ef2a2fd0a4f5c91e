"""The CSV files of a bulk import, offline: types, quoting, short rows, shards, refusals.

That the importer reads them back as the Bolt loader's graph is tests/integration/test_bulk_load.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from memtrace.cli import cli
from memtrace.loaders.bulk import import_arguments
from memtrace.loaders.bulk_files import BulkFiles, UnrepresentableValue


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_values_get_their_import_types_and_quoting(tmp_path: Path) -> None:
    files = BulkFiles(tmp_path)
    moment = datetime(2026, 12, 1, 9, 0, 0, 123456, tzinfo=UTC)
    files.node(
        "Variable",
        7,
        {
            "id": 'say "hi"',
            "empty": "",
            "flag": False,
            "seq": 3,
            "score": 0.5,
            "tags": ["a", "b;c"],
            "loaded_at": moment,
            "gone": None,
        },
    )
    [group] = files.close()
    assert group.argument() == f"--nodes=Variable={group.header},{group.data}"
    assert lines(group.header) == [
        ":ID,id:string,empty:string,flag:boolean,seq:long,score:double,tags:string[],"
        "loaded_at:datetime{timezone:UTC}"
    ]
    assert lines(group.data) == [
        '7,"say ""hi""","",false,3,0.5,"a\x1fb;c",2026-12-01T09:00:00.123456+00:00'
    ]
    assert not group.multiline


def test_new_properties_widen_the_file_and_short_rows_end_in_a_value(tmp_path: Path) -> None:
    files = BulkFiles(tmp_path)
    files.node("Case", 1, {"id": "a", "golden_answers": []})
    files.node("Case", 2, {"id": "b", "golden_answers": ["x"], "meta_k": 1})
    files.node("Case", 3, {"id": None, "golden_answers": None})
    [group] = files.close()
    assert lines(group.header) == [":ID,id:string,golden_answers:string[],meta_k:long"]
    # an empty list and a null are both left out (the importer stores no empty list)
    assert lines(group.data) == ['1,"a"', '2,"b","x",1', "3"]
    assert group.rows == 3


def test_a_value_of_another_type_starts_another_file(tmp_path: Path) -> None:
    files = BulkFiles(tmp_path)
    files.node("Operation", 1, {"meta_x": 1})
    files.node("Operation", 2, {"meta_x": "one"})
    files.node("Operation", 3, {"meta_x": 2})
    first, second = files.close()
    assert (first.name, second.name) == ("Operation", "Operation")
    assert lines(first.header) == [":ID,meta_x:long"] and lines(first.data) == ["1,1", "3,2"]
    assert lines(second.header) == [":ID,meta_x:string"] and lines(second.data) == ['2,"one"']


def test_line_breaks_mark_the_file_multiline(tmp_path: Path) -> None:
    files = BulkFiles(tmp_path)
    files.node("Variable", 1, {"value": "two\nlines"})
    files.node("Operation", 2, {"name": "one line"})
    groups = {group.name: group for group in files.close()}
    assert groups["Variable"].multiline and not groups["Operation"].multiline
    arguments = import_arguments(list(groups.values()))
    assert f"--multiline-fields={groups['Variable'].data}" in arguments
    assert "--id-type=integer" in arguments and "--array-delimiter=U+001F" in arguments


@pytest.mark.parametrize("value", [["a\x1fb"], [""]])
def test_lists_csv_cannot_carry_are_refused(tmp_path: Path, value: list[str]) -> None:
    files = BulkFiles(tmp_path)
    with pytest.raises(UnrepresentableValue, match="golden_answers"):
        files.node("Case", 1, {"golden_answers": value})


def test_relationship_rows_become_what_their_queries_create(tmp_path: Path) -> None:
    files = BulkFiles(tmp_path)
    files.relationship_rows(
        [
            (
                "load/create_operation_links",
                {
                    "op": "10",
                    "session": None,
                    "reads": ["1", "2"],
                    "writes": ["3"],
                    "deps": [{"op": "9", "via": ["v1", "v2"]}],
                },
            ),
            (
                "load/create_flows_to",
                {"id": "e1", "op": "op-1", "source": "1", "target": "3", "category": None},
            ),
            ("load/create_case_links", {"id": "20", "query": "1", "prediction": None}),
            ("load/create_next_version", {"older": "1", "newer": "2"}),
        ]
    )
    groups = {group.name: group for group in files.close()}
    assert sorted(groups) == ["DEPENDS_ON", "FLOWS_TO", "NEXT_VERSION", "QUERY", "READS", "WRITES"]
    assert lines(groups["READS"].data) == ["10,1", "10,2"]
    assert lines(groups["DEPENDS_ON"].header) == [":START_ID,:END_ID,via:string[]"]
    assert lines(groups["DEPENDS_ON"].data) == ['10,9,"v1\x1fv2"']
    assert lines(groups["FLOWS_TO"].header) == [":START_ID,:END_ID,edge_id:string,op_id:string"]
    assert files.relationships == 7


def test_the_cli_refuses_a_bulk_load_into_another_server(tmp_path: Path) -> None:
    trace = Path(__file__).resolve().parent.parent / "data" / "native" / "small.jsonl"
    env = {"MEMTRACE_HOME": str(tmp_path), "NEO4J_URI": "bolt://db.example:7687"}
    result = CliRunner().invoke(cli, ["load", "--bulk", str(trace)], env=env)
    assert result.exit_code == 1
    assert "not the managed server" in result.output
    assert not (tmp_path / "neo4j" / "import").exists()  # no file written
