"""Offline tests of the loader: parsing, validation, kind mapping, row builders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from membase_stages import STAGES, write_traced_data
from pydantic import BaseModel

import memtrace.loaders
from memtrace.errors import InputError
from memtrace.loaders.formats import detect
from memtrace.loaders.index import build_index
from memtrace.loaders.kinds import derive_kind
from memtrace.loaders.load import (
    LoadInterrupted,
    LoadOptions,
    expand_paths,
    load_paths,
    stages_line,
)
from memtrace.loaders.models import (
    CaseRecord,
    EdgeRecord,
    InlineEdgesOperationRecord,
    Label,
    OperationRecord,
    SessionRecord,
    TraceRecord,
    VariableRecord,
    metadata_properties,
    parse_timestamp,
)
from memtrace.loaders.native import read_native
from memtrace.loaders.rows import node_rows, relationship_rows, trace_properties
from memtrace.loaders.smartcomment import python_text, read_smartcomment
from memtrace.systems.registry import SYSTEM_SPELLINGS
from memtrace.taxonomy import (
    is_reserved_trace_id,
    retired_trace_id,
    staged_trace_id,
)

DATA = Path(__file__).resolve().parent.parent / "data"
SMALL = DATA / "native" / "small.jsonl"

# file -> (location, the specific problem)
MALFORMED: dict[str, tuple[str | None, str]] = {
    "empty.jsonl": (None, "empty file: no records"),
    "malformed_json.jsonl": ("2", "malformed JSON: Expecting value"),
    "not_an_object.jsonl": ("2", "a record must be a JSON object, got an array"),
    "first_not_trace.jsonl": ("1", "the first record must be the trace record"),
    "unknown_format_version.jsonl": ("1", "unsupported format_version 3"),
    "unknown_record_type.jsonl": ("2", "unknown record type 'widget'"),
    "missing_type.jsonl": ("2", "record has no 'type' field"),
    "missing_id.jsonl": ("2", "variable.id: required field is missing"),
    "wrong_type.jsonl": ("2", "variable.version: Input should be a valid integer"),
    "bad_timestamp.jsonl": ("2", "bad timestamp 'yesterday'"),
    "unknown_field.jsonl": ("3", "operation.colour: unknown field"),
    "edge_to_unknown_variable.jsonl": ("4", "edge.target: unknown variable 'ghost@1'"),
    "inline_edges_in_format_1.jsonl": ("4", "operation.edges: unknown field"),
    "inline_edge_to_unknown_variable.jsonl": (
        "3.edges[1]",
        "edge.target: unknown variable 'ghost@1'",
    ),
    "inline_edge_not_a_pair.jsonl": ("3", "operation.edges[0][1]: required field is missing"),
    "reads_unknown_variable.jsonl": ("3", "operation.reads[1]: unknown variable 'nope@1'"),
    "duplicate_id_different_content.jsonl": (
        "3",
        "duplicate variable id 'a@1' with different content (first defined at 2)",
    ),
    "label_unknown_operation.jsonl": ("3", "case.labels[0].op_id: unknown operation 'op-x'"),
    "bad_error_type.jsonl": ("4", "case.labels[0].error_type: Input should be"),
    "second_trace.jsonl": ("3", "a second trace record"),
    "unknown_session.jsonl": ("3", "operation.session: unknown session 's9'"),
    "same_identity_two_ids.jsonl": ("3", "has the same class_name, name and version as 'a@1'"),
    "bad_kind.jsonl": ("2", "operation.kind: Input should be 'extraction'"),
    "not_utf8.jsonl": ("2", "not UTF-8 text"),
    "smartcomment_node_without_id.json": ("data.nodes[0]", "full_node_id: required field"),
    "smartcomment_annotation_unknown_op.json": (
        "data.annotations[0]",
        "final_op_id: unknown operation 'op-404'",
    ),
    "smartcomment_edge_unknown_node.json": ("data.edges[0]", "edge.target: unknown variable"),
    "smartcomment_truncated.json": ("1", "malformed JSON"),
}


def test_corpus_is_complete() -> None:
    assert sorted(p.name for p in (DATA / "malformed").iterdir()) == sorted(MALFORMED)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_file_gives_its_specific_error(name: str) -> None:
    location, problem = MALFORMED[name]
    path = DATA / "malformed" / name
    with pytest.raises(InputError) as caught:
        load_paths(None, [str(path)], LoadOptions(dry_run=True))
    assert caught.value.path == str(path)
    assert caught.value.location == location
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{path}:")


@pytest.mark.parametrize(
    ("name", "category", "kind"),
    [
        ("memory_system.extract_facts", "extraction", "extraction"),
        ("memory_system.update_memory_decision", "update", "update"),
        ("memory_system.add_to_vector_store", "embedding", "embedding"),
        ("memory_system.search_vector_store", "retrieval", "retrieval"),
        ("memory_system.retrieve", None, "retrieval"),
        ("question-answering", "evaluation", "generation"),
        ("llm-judge", "evaluation", "judge"),
        ("memory_system.message_buffer_update", None, "update"),
        ("memory_system.finalize_memory_unit", None, "extraction"),
        ("memory_system.add", None, "embedding"),
        ("memory_system.memory_update", None, "update"),
        ("memory_system.delete_memory", None, "deletion"),
        ("summarize", "generation", "generation"),
        ("summarize", "evaluation", "other"),
        ("step", None, "other"),
    ],
)
def test_kind_mapping(name: str, category: str | None, kind: str) -> None:
    assert derive_kind(name, category) == kind


def test_timestamps_both_formats() -> None:
    smart = parse_timestamp("2024-05-01 10:00:00.020")
    iso = parse_timestamp("2024-05-01T10:00:00.020Z")
    assert smart == iso
    assert parse_timestamp("2024-05-01T12:00:00.020+02:00") == iso
    with pytest.raises(ValueError, match="bad timestamp"):
        parse_timestamp("01/05/2024")


def test_metadata_flattening() -> None:
    props = metadata_properties({"evidence": ["D1:3"], "n": 2, "nested": {"a": 1}, "bad key": 1})
    assert props["meta_evidence"] == ["D1:3"]
    assert props["meta_n"] == 2
    assert "meta_nested" not in props and "meta_bad key" not in props
    assert '"nested": {"a": 1}' in props["metadata"]
    assert metadata_properties({"mixed": [1, "a"]}).get("meta_mixed") is None


def test_python_text() -> None:
    assert python_text("'When did it happen?'") == "When did it happen?"
    assert python_text('"it\'s"') == "it's"
    assert python_text("plain") == "plain"


def test_index_counts_seq_and_dependencies() -> None:
    index = build_index(str(SMALL), read_native(SMALL))
    counts = index.counts
    assert (counts.operations, counts.variables, counts.sessions) == (7, 10, 2)
    assert (counts.edges, counts.cases, counts.failed_cases, counts.labels) == (4, 1, 1, 1)
    assert index.version_ids() == [("mem-1@1", "mem-1@2")]
    # ties on created_at are broken by record type, then id
    assert index.seq_order()[:3] == ["msg-1@1", "prompt@1", "op-extract"]
    index.close()


def test_format_2_inline_edges_read_as_the_edges_of_format_1(tmp_path: Path) -> None:
    """SMALL rewritten as format 2: each edge moved into its operation's ``edges``."""
    lines = [json.loads(line) for line in SMALL.read_text().splitlines()]
    edges = [r for r in lines if r["type"] == "edge"]
    inline = tmp_path / "small-v2.jsonl"
    with inline.open("w") as out:
        for record in lines:
            if record["type"] == "trace":
                record["format_version"] = 2
            elif record["type"] == "operation":
                pairs = [[e["source"], e["target"]] for e in edges if e["op"] == record["id"]]
                if pairs:
                    record["edges"] = pairs
            elif record["type"] == "edge":
                continue
            out.write(json.dumps(record) + "\n")

    def flows(path: Path) -> list[tuple[str, str, str]]:
        return sorted(
            (r.op, r.source, r.target) for _, r in read_native(path) if isinstance(r, EdgeRecord)
        )

    assert flows(inline) == flows(SMALL)
    ids = [r.id for _, r in read_native(inline) if isinstance(r, EdgeRecord)]
    assert ids == ["op-extract/edge-1", "op-extract/edge-2", "op-update/edge-1", "op-delete/edge-1"]
    ops = [r for _, r in read_native(inline) if isinstance(r, OperationRecord)]
    assert all(type(op) is OperationRecord for op in ops)  # the edges are not left on them
    v1, v2 = (
        build_index(str(SMALL), read_native(SMALL)),
        build_index(str(inline), read_native(inline)),
    )
    assert v2.counts == v1.counts
    assert v2.version_ids() == v1.version_ids()


def test_one_pass_for_a_bulk_import_gives_both_passes_rows() -> None:
    index = build_index(str(SMALL), read_native(SMALL))
    next_free = index.number_nodes(100)  # node ids 100 + recno, as a bulk import numbers them
    assert next_free > 100
    nodes = [row for node in index.nodes(read_native(SMALL)) for row in node_rows(node)]
    linked = [row for one in index.linked(read_native(SMALL)) for row in relationship_rows(one)]
    together = list(index.nodes_and_linked(read_native(SMALL)))
    assert [row for found, _ in together for node in found for row in node_rows(node)] == nodes
    rows = [row for _, found in together for one in found for row in relationship_rows(one)]
    assert rows == linked and any(name == "load/create_deletes" for name, _ in rows)
    index.close()


def test_rows_skip_repeated_records_and_mark_deletes() -> None:
    index = build_index(str(SMALL), read_native(SMALL))
    rows = [row for node in index.nodes(read_native(SMALL)) for row in node_rows(node)]
    variable_rows = [row for name, row in rows if name == "load/create_variables"]
    assert len(variable_rows) == 10  # prompt@1 appears twice, identically
    answer = next(r for n, r in rows if n == "load/create_operations" and r["id"] == "op-answer")
    assert answer["props"]["kind"] == "generation"
    # pretend every node was written with element id "4:db:<its id>"
    index.store_element_ids([[row["n"], f"4:db:{row['id']}"] for _, row in rows])
    rels = [row for linked in index.linked(read_native(SMALL)) for row in relationship_rows(linked)]
    deletes = [row for name, row in rels if name == "load/create_deletes"]
    assert deletes == [{"op": "4:db:op-delete", "var": "4:db:mem-1@2", "edge_id": "e4"}]
    links = {r["op"]: r for n, r in rels if n == "load/create_operation_links"}
    assert links["4:db:op-answer"]["reads"] == ["4:db:query-1@1", "4:db:context@1"]
    assert links["4:db:op-answer"]["deps"] == [{"op": "4:db:op-search", "via": ["context@1"]}]
    assert links["4:db:op-update"]["deps"] == [  # in the order of its reads
        {"op": "4:db:op-add", "via": ["mem-1@1"]},
        {"op": "4:db:op-extract", "via": ["facts@1"]},
    ]
    assert list(index.next_versions()) == [("4:db:mem-1@1", "4:db:mem-1@2")]
    index.close()


def test_detect_and_expand(tmp_path: Path) -> None:
    assert detect(SMALL).format == "native"
    assert detect(DATA / "malformed" / "smartcomment_truncated.json").format == "smartcomment"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_text("{}")
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("x")
    assert [p.name for p in expand_paths([str(tmp_path)])] == ["b.json", "a.jsonl"]
    assert [p.name for p in expand_paths([f"{tmp_path}/**/*.jsonl"])] == ["a.jsonl"]
    with pytest.raises(InputError, match="no such file"):
        expand_paths([str(tmp_path / "missing*.jsonl")])


def test_trace_id_override_needs_one_file(tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(SMALL.read_bytes())
    with pytest.raises(InputError, match="--trace-id needs exactly one file"):
        load_paths(None, [str(SMALL), str(copy)], LoadOptions(trace_id="x", dry_run=True))


def test_an_identical_copy_of_a_trace_is_loaded_once(tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(SMALL.read_bytes())
    summary = load_paths(None, [str(SMALL), str(copy)], LoadOptions(dry_run=True))
    assert [f.path for f in summary.files] == [str(SMALL)]
    assert [(s.trace_id, s.loaded, s.earlier) for s in summary.stages] == [
        ("small", str(SMALL), [str(copy)])
    ]
    assert stages_line(summary.stages) == (  # two folders: the line names whole paths
        f"small is in 2 cumulative stage files ({copy}, {SMALL}): loaded once, from the most "
        f"complete, {SMALL}"
    )


def test_same_trace_id_with_other_content_is_refused_at_the_first_difference(
    tmp_path: Path,
) -> None:
    lines = SMALL.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    n = next(i for i, r in enumerate(records) if r["type"] == "variable")
    records[n]["value"] = "something else"
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.raises(InputError) as caught:
        load_paths(None, [str(SMALL), str(other)], LoadOptions(dry_run=True))
    variable = records[n]["id"]
    assert (caught.value.path, caught.value.location) == (str(other), str(n + 1))
    assert caught.value.problem == (
        f"trace id 'small' is also the trace of {SMALL}, and this file is not an earlier stage "
        f"of it: variable {variable!r} differs from line {n + 1} of {SMALL}"
    )


def test_membase_user_folders_load_each_graph_once_from_its_last_stage(tmp_path: Path) -> None:
    traced = write_traced_data(tmp_path)  # real smartcomment, stage by stage as MemBase exports
    users = sorted(p for p in traced.iterdir())
    graph_ids = [json.loads((u / STAGES[0]).read_text())["graph_id"] for u in users]
    for user, graph_id in zip(users, graph_ids, strict=True):
        stages = [json.loads((user / stage).read_text()) for stage in STAGES]
        assert {g["graph_id"] for g in stages} == {graph_id}
        assert [len(g["data"]["operations"]) for g in stages] == sorted(
            {len(g["data"]["operations"]) for g in stages}
        )  # each stage extends the last
        one = load_paths(None, [str(user)], LoadOptions(dry_run=True))
        alone = load_paths(None, [str(user / STAGES[2])], LoadOptions(dry_run=True))
        assert [f.path for f in one.files] == [str(user / STAGES[2])]
        assert one.total("operations") == alone.total("operations") > 0
        assert one.total("failed_cases") == alone.total("failed_cases") > 0
        assert stages_line(one.stages) == (
            f"{graph_id} is in 3 cumulative stage files ({', '.join(STAGES)}) of {user}: "
            f"loaded once, from the most complete, {STAGES[2]}"
        )
    both = load_paths(None, [str(traced)], LoadOptions(dry_run=True))
    assert sorted(f.trace_id for f in both.files) == sorted(graph_ids)
    assert {Path(f.path).name for f in both.files} == {STAGES[2]}
    assert [len(s.earlier) for s in both.stages] == [2, 2]
    assert stages_line(both.stages) == (
        "2 traces are each in several cumulative stage files (6 files): each loaded once, "
        f"from its most complete stage ({STAGES[2]} x2)"
    )
    trace = read_smartcomment(users[0] / STAGES[2])[0][1]
    assert isinstance(trace, TraceRecord)
    props = trace_properties(trace, "smartcomment", "f", {}, SYSTEM_SPELLINGS)
    assert (trace.system, trace.dataset) == ("Mem0", "LoCoMo")  # as MemBase writes them
    assert (props["system"], props["dataset"]) == ("mem0", "locomo")  # the registry's names


def test_membase_stages_that_conflict_are_refused_naming_the_first_difference(
    tmp_path: Path,
) -> None:
    user = write_traced_data(tmp_path) / "locomo-1"
    path = user / STAGES[0]
    graph = json.loads(path.read_text())
    n = next(i for i, node in enumerate(graph["data"]["nodes"]) if node["category"] == "message")
    node = graph["data"]["nodes"][n]
    node["value"] = node["value"].replace("Rex", "Max")
    path.write_text(json.dumps(graph))
    with pytest.raises(InputError) as caught:
        load_paths(None, [str(user)], LoadOptions(dry_run=True))
    later = user / STAGES[2]
    assert (caught.value.path, caught.value.location) == (str(path), f"data.nodes[{n}]")
    assert caught.value.problem.endswith(
        f"is not an earlier stage of it: variable {node['full_node_id']!r} differs from "
        f"data.nodes[{n}] of {later}"
    )
    graph["data"]["nodes"][n]["value"] = node["value"].replace("Max", "Rex")
    extra = {**graph["data"]["nodes"][n], "name": "U1:D9:9", "full_node_id": "U1:D9:9@1"}
    graph["data"]["nodes"].append(extra)
    path.write_text(json.dumps(graph))
    last = len(graph["data"]["nodes"]) - 1
    with pytest.raises(InputError, match=rf"nodes\[{last}\]: .* variable 'U1:D9:9@1' is not in"):
        load_paths(None, [str(user)], LoadOptions(dry_run=True))


@pytest.mark.parametrize(
    ("written", "stored"),
    [("Mem0", "mem0"), ("NaiveRAG", "rag"), ("Long-Context", "long-context"),
     ("EverMemOS", "evermemos"), ("MemoryOS", "MemoryOS"), (None, None)],
)  # fmt: skip
def test_system_names_map_to_the_registry_names(written: str | None, stored: str | None) -> None:
    trace = TraceRecord(type="trace", format_version=1, id="t", system=written, dataset="LoCoMo")
    props = trace_properties(trace, "native", "f", {}, SYSTEM_SPELLINGS)
    assert (props.get("system"), props["dataset"]) == (stored, "locomo")
    overridden = trace_properties(trace, "native", "f", {"system": "MEM0"}, SYSTEM_SPELLINGS)
    assert overridden["system"] == "mem0"
    # without the registry's spellings the loader stores what the trace wrote
    assert trace_properties(trace, "native", "f", {}, {}).get("system") == written


def test_json_schema_matches_the_models() -> None:
    schema = json.loads((Path(memtrace.loaders.__file__).parent / "native_schema.json").read_text())
    models: dict[str, type[BaseModel]] = {
        "trace": TraceRecord,
        "session": SessionRecord,
        "operation": InlineEdgesOperationRecord,  # format 2's operation: 1's plus `edges`
        "variable": VariableRecord,
        "edge": EdgeRecord,
        "case": CaseRecord,
    }
    for name, model in models.items():
        assert set(schema["$defs"][name]["properties"]) == set(model.model_fields), name
    assert set(schema["$defs"]["label"]["properties"]) == set(Label.model_fields)


def test_seq_orders_by_time_then_hint_then_type_then_id(tmp_path: Path) -> None:
    at = "2024-05-01T10:00:00Z"
    records = [
        {"type": "trace", "format_version": 1, "id": "t"},
        {"type": "variable", "id": "b", "name": "b", "created_at": at, "seq": 2},
        {"type": "variable", "id": "a", "name": "a", "created_at": at, "seq": 2},
        {"type": "operation", "id": "z", "name": "step", "created_at": at, "seq": 2},
        {"type": "variable", "id": "early", "name": "e", "created_at": "2024-05-01T09:00:00Z"},
        {"type": "variable", "id": "x", "name": "x", "created_at": at, "seq": 10},
        {"type": "variable", "id": "c", "name": "c", "created_at": at},
        {"type": "variable", "id": "c2", "name": "c", "version": 3, "created_at": at, "seq": 11},
        {"type": "variable", "id": "c1", "name": "c", "version": 2, "created_at": at, "seq": 12},
    ]
    path = tmp_path / "order.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records))
    index = build_index(str(path), read_native(path))
    assert index.seq_order() == ["early", "c", "z", "a", "b", "x", "c2", "c1"]
    assert index.version_ids() == [("c", "c1"), ("c1", "c2")]
    index.close()


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("lines", "location", "problem"),
    [
        # duplicates are found after the pass, yet one still wins over a later bad record
        (
            [
                '{"type": "variable", "id": "a", "name": "a", "created_at": "2024-05-01"}',
                '{"type": "variable", "id": "a", "name": "b", "created_at": "2024-05-01"}',
                '{"type": "variable", "id": "c", "name": "c", "created_at": "never"}',
            ],
            "3",
            "duplicate variable id 'a' with different content (first defined at 2)",
        ),
        # an identity clash before a line that does not parse
        (
            [
                '{"type": "variable", "id": "a", "name": "x", "created_at": "2024-05-01"}',
                '{"type": "variable", "id": "b", "name": "x", "created_at": "2024-05-01"}',
                '{"type": "variable", "id": ',
            ],
            "3",
            "variable 'b' has the same class_name, name and version as 'a'",
        ),
        # the per-record problem comes first when it is earlier
        (
            [
                '{"type": "variable", "id": "a", "name": "x", "created_at": "soon"}',
                '{"type": "variable", "id": "b", "name": "x", "created_at": "2024-05-01"}',
            ],
            "2",
            "bad timestamp 'soon'",
        ),
    ],
)
def test_first_problem_in_file_order_wins(
    tmp_path: Path, lines: list[str], location: str, problem: str
) -> None:
    path = _write_lines(
        tmp_path / "t.jsonl", ['{"type": "trace", "format_version": 1, "id": "t"}', *lines]
    )
    with pytest.raises(InputError) as caught:
        load_paths(None, [str(path)], LoadOptions(dry_run=True))
    assert caught.value.location == location
    assert problem in caught.value.problem


def test_index_database_leaves_nothing_behind(tmp_path: Path) -> None:
    # os._exit skips every cleanup, as a killed loader would
    script = (
        "import os, sys; from pathlib import Path; "
        "from memtrace.loaders.index import build_index; "
        "from memtrace.loaders.native import read_native; "
        "p = Path(sys.argv[1]); index = build_index(str(p), read_native(p)); "
        "assert index.counts.operations == 7; os._exit(0)"
    )
    env = {**os.environ, "SQLITE_TMPDIR": str(tmp_path), "TMPDIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", script, str(SMALL)], env=env, check=True)
    assert list(tmp_path.iterdir()) == []


def test_seq_hint_must_fit_in_64_bits(tmp_path: Path) -> None:
    line = '{"type": "operation", "id": "o", "name": "step", "created_at": "2024-05-01", "seq": %d}'
    trace = '{"type": "trace", "format_version": 1, "id": "t"}'
    path = _write_lines(tmp_path / "t.jsonl", [trace, line % (2**63 - 1)])
    load_paths(None, [str(path)], LoadOptions(dry_run=True))
    path = _write_lines(tmp_path / "t.jsonl", [trace, line % 2**63])
    with pytest.raises(InputError, match=r"operation\.seq: larger than 9223372036854775807"):
        load_paths(None, [str(path)], LoadOptions(dry_run=True))


SAMPLE_LOCOMO = Path(memtrace.__file__).parent / "systems" / "sample" / "locomo_sample.json"


def _load_error(path: Path, **options: object) -> InputError:
    with pytest.raises(InputError) as caught:
        load_paths(None, [str(path)], LoadOptions(dry_run=True, **options))  # type: ignore[arg-type]
    return caught.value


def test_a_locomo_dataset_is_named_with_what_to_do() -> None:
    error = _load_error(SAMPLE_LOCOMO)
    assert "this is a LoCoMo dataset" in error.problem
    assert f"memtrace run mem0 --data {SAMPLE_LOCOMO}" in error.problem


def test_another_json_object_says_how_it_was_read_and_every_problem(tmp_path: Path) -> None:
    other = tmp_path / "config.json"
    other.write_text(json.dumps({"name": "x", "items": [1, 2]}))
    error = _load_error(other)
    assert error.problem.startswith("graph_id: required field is missing; data: required field")
    assert "read as smartcomment because it is one JSON object" in error.problem
    assert "`--format native`" in error.problem
    forced = _load_error(other, format="native")
    assert forced.problem.startswith("record has no 'type' field")
    assert "read as" not in forced.problem  # forced: no guess to explain


def test_validation_lists_the_first_problems_and_counts_the_rest(tmp_path: Path) -> None:
    lines = [json.dumps({"type": "trace", "format_version": 1, "id": "t"})]
    lines.append(json.dumps({"type": "variable", **{f"x{i}": i for i in range(8)}}))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    problem = _load_error(bad).problem
    assert problem.count(";") == 4
    assert problem.endswith("more)")
    assert "variable.id: required field is missing" in problem


def test_json_lines_with_an_untyped_first_line_is_explained(tmp_path: Path) -> None:
    typo = tmp_path / "typo.jsonl"
    typo.write_text('{"typ": "trace"}\n{"a": 1}\n')
    problem = _load_error(typo).problem
    assert problem.startswith("record has no 'type' field [read as native because")
    assert "`--format smartcomment`" in problem


def test_a_json_array_is_refused_by_name(tmp_path: Path) -> None:
    array = tmp_path / "a.json"
    array.write_text("[1, 2]")
    assert "a JSON array is not a trace" in _load_error(array).problem


def test_a_cut_off_last_line_says_truncated_and_names_complete_prefix(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(SMALL.read_bytes().rstrip(b"\n")[:-20])
    error = _load_error(torn)
    assert "the file looks truncated" in error.problem
    assert "complete_prefix" in error.problem
    from memtrace.tracing import complete_prefix

    complete_prefix(torn)
    summary = load_paths(None, [str(torn)], LoadOptions(dry_run=True))
    assert summary.files[0].operations >= 1
    # a malformed line in the middle is not called truncated
    middle = tmp_path / "middle.jsonl"
    lines = SMALL.read_text().splitlines(keepends=True)
    middle.write_text(lines[0] + "{oops\n" + "".join(lines[1:]))
    assert "truncated" not in _load_error(middle).problem


def test_json_messages_have_no_doubled_at(tmp_path: Path) -> None:
    unterminated = tmp_path / "u.jsonl"
    unterminated.write_text('{"type": "trace", "format_version": 1, "id": "x"}\n{"type": "ab')
    problem = _load_error(unterminated).problem
    assert "Unterminated string starting at column 10" in problem
    assert "at at" not in problem


@pytest.mark.parametrize("copy", [staged_trace_id("x"), retired_trace_id("x")])
def test_reserved_trace_ids_are_refused(copy: str, tmp_path: Path) -> None:
    assert is_reserved_trace_id(copy) and not is_reserved_trace_id("memtrace:x")
    with pytest.raises(InputError, match="reserved for the copies a re-load writes"):
        load_paths(
            None, [str(DATA / "native" / "small.jsonl")], LoadOptions(trace_id=copy, dry_run=True)
        )
    native = tmp_path / "reserved.jsonl"
    first, *rest = (DATA / "native" / "small.jsonl").read_text(encoding="utf-8").splitlines()
    header = {**json.loads(first), "id": copy}
    native.write_text("\n".join([json.dumps(header), *rest]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="reserved"):
        load_paths(None, [str(native)], LoadOptions(dry_run=True))


def test_an_interrupted_reload_says_which_copy_is_read() -> None:
    """Each phase of a write names what a Ctrl-C left and what cleans it up."""
    messages = {
        phase: str(LoadInterrupted("t1", phase, 0, 1))
        for phase in ("writing", "staging", "swapping", "replacing", "cleaning")
    }
    assert "'t1' was left 'loading'" in messages["writing"]
    assert "earlier complete copy is untouched" in messages["staging"]
    assert "memtrace db delete --trace memtrace:staged:t1" in messages["staging"]
    assert "one complete copy, the earlier or the new one" in messages["swapping"]
    assert "left 'loading'" in messages["replacing"]
    assert "memtrace db delete --trace memtrace:retired:t1" in messages["cleaning"]
