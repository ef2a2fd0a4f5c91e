"""The tracing SDK on a toy memory system: the file it writes is the graph we expect."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memtrace.errors import InputError
from memtrace.loaders.index import build_index
from memtrace.loaders.models import EdgeRecord
from memtrace.loaders.native import read_native
from memtrace.tracing import (
    OFF,
    Registered,
    SimClock,
    case,
    complete_prefix,
    delete,
    edge,
    edges,
    mutation,
    operation,
    read,
    session,
    trace,
    variable,
    wait_synced,
    write,
)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def by_type(path: Path, kind: str) -> list[dict[str, Any]]:
    return [r for r in records(path) if r["type"] == kind]


def loaded_edges(path: Path) -> list[tuple[str, EdgeRecord]]:
    """The edge records the loader reads (format 2 writes them inline in their operation)."""
    return [(loc, r) for loc, r in read_native(path) if isinstance(r, EdgeRecord)]


@operation("memory_system.extract_facts", category="extraction")
def extract(message: str) -> list[str]:
    msg = variable("msg-1", message, category="message")
    facts = [part.strip() for part in message.split(".") if part.strip()]
    out = variable("facts-1", facts, category="llm_response")
    edge(msg, out)
    return facts


def toy_run(path: Path) -> None:
    with trace(path, "toy", system="toy", clock=SimClock()):
        with session("memory_construction"):
            facts = extract("Ana lives in Porto. Ana has a cat.")
            with operation("memory_system.update_memory_decision"):
                prompt = variable("memory-update-decision-prompt", "Decide.", category="prompt")
                read(prompt)
                mem = variable("mem-1", facts[0], category="memory_entry")
                write(mem)
                mem2 = mutation(mem, facts[0] + " since 2020")
                mutation(mem2, facts[0] + " since 2020")  # unchanged: no new version
            with operation("memory_system.delete_memory"):
                delete(mem2)
        with session("memory_search"), operation("question-answering"):
            query = variable("q-1", "Where does Ana live?", class_name="query")
            pred = variable("prediction-1", "Porto", class_name="prediction")
            edge(query, pred)
        case(
            id="q-1", query=query.id, prediction=pred.id, golden_answers=["Porto"], judge_score=1.0
        )


def test_toy_system_produces_the_expected_graph(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    toy_run(path)
    index = build_index(str(path), read_native(path))  # the loader accepts it
    ops = {op["name"]: op for op in by_type(path, "operation")}
    assert ops["memory_system.extract_facts"]["reads"] == ["msg-1@1"]
    assert ops["memory_system.extract_facts"]["writes"] == ["facts-1@1"]
    update = ops["memory_system.update_memory_decision"]
    assert update["reads"] == ["memory-update-decision-prompt@1"]
    assert update["writes"] == ["mem-1@1", "mem-1@2"]
    deletion = ops["memory_system.delete_memory"]
    assert deletion["reads"] == ["mem-1@2"]
    assert deletion["writes"] == ["delete_marker:deleted@1"]
    assert deletion["edges"] == [["mem-1@2", "delete_marker:deleted@1"]]  # inline, format 2
    assert update["edges"] == [["mem-1@1", "mem-1@2"]]
    assert not by_type(path, "edge")
    edges = [(loc, r.id, r.op, r.source, r.target) for loc, r in loaded_edges(path)]
    assert edges == [  # each at its operation's line, with an id derived from the op's
        ("5.edges[0]", "op-000001/edge-1", "op-000001", "msg-1@1", "facts-1@1"),
        ("9.edges[0]", "op-000002/edge-1", "op-000002", "mem-1@1", "mem-1@2"),
        ("11.edges[0]", "op-000003/edge-1", "op-000003", "mem-1@2", "delete_marker:deleted@1"),
        (
            "15.edges[0]",
            "op-000004/edge-1",
            "op-000004",
            "query:q-1@1",
            "prediction:prediction-1@1",
        ),
    ]
    assert index.counts.edges == 4
    versions = [v["id"] for v in by_type(path, "variable") if v["name"] == "mem-1"]
    assert versions == ["mem-1@1", "mem-1@2"]
    assert index.version_ids() == [("mem-1@1", "mem-1@2")]
    assert index.counts.cases == 1
    sessions = {s["id"]: s["name"] for s in by_type(path, "session")}
    assert {ops[n]["session"] for n in ops if n != "question-answering"} == {"session-000001"}
    assert sessions[ops["question-answering"]["session"]] == "memory_search"


def test_same_value_same_version_changed_value_new_version(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    with trace(path, "v", clock=SimClock()):
        a = variable("top_k", 10, category="parameter")
        b = variable("top_k", 10, category="parameter")
        c = variable("top_k", 5, category="parameter")
        d = variable("top_k", 5, class_name="other")
    assert a == b and a.id == "top_k@1"
    assert c.id == "top_k@2" and c.version == 2
    assert d.id == "other:top_k@1"
    assert [v["value"] for v in by_type(path, "variable")] == ["10", "5", "5"]


def test_registered_variable_is_recorded_once_and_versioned_on_change(tmp_path: Path) -> None:
    prompt = Registered("qa-prompt", category="prompt")
    top_k = Registered("top_k", category="parameter", class_name="parameter")
    facts = Registered("facts", category="llm_response")
    assert prompt.read("Answer.") is top_k.get(10) is facts.get(["a"]) is OFF  # tracing off
    text_a, text_b = "Answer.", "Answer briefly."
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with trace(first, "a", clock=SimClock()):
        with operation("op1"):
            assert prompt.read(text_a).id == "qa-prompt@1"
            assert top_k.read(10).id == "parameter:top_k@1"
        with operation("op2"):
            assert prompt.read(text_a).id == "qa-prompt@1"  # unchanged: read, not registered
            assert prompt.read("".join(["Answer", "."])).id == "qa-prompt@1"  # equal, other object
            assert top_k.read(12).id == "parameter:top_k@2"
        with operation("op3"):
            assert prompt.read(text_b).id == "qa-prompt@2"
            assert prompt.read(text_a).id == "qa-prompt@3"  # changed back: a new version again
            variable("top_k", 10, class_name="parameter")  # the same identity, registered directly
            assert top_k.read(12).id == "parameter:top_k@4"  # not the stale handle top_k@2
        value = ["a"]
        assert facts.get(value).id == "facts@1"
        value.append("b")  # changed in place: a mutable value is serialized again
        assert facts.get(value).id == "facts@2"
    with trace(second, "b", clock=SimClock()), operation("op1"):
        assert prompt.read(text_a).id == "qa-prompt@1"  # a new trace registers it again
    ops = {op["name"]: op for op in by_type(first, "operation")}
    assert ops["op1"]["reads"] == ["qa-prompt@1", "parameter:top_k@1"]
    assert ops["op2"]["reads"] == ["qa-prompt@1", "parameter:top_k@2"]
    assert ops["op3"]["reads"] == ["qa-prompt@2", "qa-prompt@3", "parameter:top_k@4"]
    values = [(v["id"], v["value"]) for v in by_type(first, "variable")]
    assert values == [
        ("qa-prompt@1", text_a),
        ("parameter:top_k@1", "10"),
        ("parameter:top_k@2", "12"),
        ("qa-prompt@2", text_b),
        ("qa-prompt@3", text_a),
        ("parameter:top_k@3", "10"),
        ("parameter:top_k@4", "12"),
        ("facts@1", '["a"]'),
        ("facts@2", '["a","b"]'),
    ]
    assert [v["id"] for v in by_type(second, "variable")] == ["qa-prompt@1"]


def flows_run(path: Path, one_call: bool) -> None:
    """The same flows recorded with separate calls or with ``sources=`` / ``edges``."""
    with trace(path, "flows", clock=SimClock()), operation("memory_system.search"):
        query = variable("q-1", "Where?", class_name="query")
        mems = [variable(f"mem-{i}", f"memory {i}", category="memory_entry") for i in range(3)]
        read(mems[1])
        if one_call:
            context = variable("q-1", ["memory 0"], class_name="context", sources=(query, *mems))
            edges(mems[:2], context)  # again: a repeated edge is kept, as with edge()
            variable("q-1", "answer", class_name="prediction", sources=(OFF, context))
        else:
            context = variable("q-1", ["memory 0"], class_name="context")
            for source in (query, *mems):
                edge(source, context)
            for source in mems[:2]:
                edge(source, context)
            prediction = variable("q-1", "answer", class_name="prediction")
            edge(OFF, prediction)
            edge(context, prediction)


def test_sources_and_edges_record_what_separate_edge_calls_record(tmp_path: Path) -> None:
    flows_run(tmp_path / "separate.jsonl", one_call=False)
    flows_run(tmp_path / "one-call.jsonl", one_call=True)
    one_call = (tmp_path / "one-call.jsonl").read_bytes()
    assert one_call == (tmp_path / "separate.jsonl").read_bytes()
    (op,) = by_type(tmp_path / "one-call.jsonl", "operation")
    assert op["reads"] == ["mem-1@1", "query:q-1@1", "mem-0@1", "mem-2@1"]  # order of first use
    assert op["writes"] == ["context:q-1@1", "prediction:q-1@1"]
    assert len(op["edges"]) == 4 + 2 + 1  # OFF (tracing was off when it was made) is skipped
    assert op["edges"][-1] == ["context:q-1@1", "prediction:q-1@1"]


def test_sources_and_edges_outside_an_operation_or_trace_record_no_flow(tmp_path: Path) -> None:
    path = tmp_path / "outside.jsonl"
    with trace(path, "outside", clock=SimClock()):
        a = variable("a", "x")
        b = variable("b", "y", sources=(a,))  # registered, but there is no operation to hold it
        edges([a], b)
    assert b.id == "b@1"
    assert [r["type"] for r in records(path)] == ["trace", "variable", "variable"]
    assert variable("c", "z", sources=(a,)) is OFF  # tracing off: nothing, not even a lookup
    edges([a], b)


def test_same_clock_same_bytes(tmp_path: Path) -> None:
    toy_run(tmp_path / "a.jsonl")
    toy_run(tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_disabled_tracing_records_nothing_and_returns_results(tmp_path: Path) -> None:
    assert extract("One. Two.") == ["One", "Two"]
    with trace(tmp_path / "off.jsonl", "off", enabled=False) as tracer:
        assert tracer is None
        assert extract("One.") == ["One"]
        assert variable("x", 1).id == ""
        # the blocks give an object with an id either way: code using op.id runs untraced
        with session("s") as sid, operation("memory_system.answer", kind="generation") as op:
            assert (sid, op.id, op.name, op.kind) == ("", "", "memory_system.answer", "generation")
            read(variable("y", 2))
    assert not (tmp_path / "off.jsonl").exists()
    with session("s") as sid, operation("memory_system.answer") as op:  # outside any trace
        assert (sid, op.id) == ("", "")


def test_an_exception_is_recorded_and_reraised(tmp_path: Path) -> None:
    path = tmp_path / "err.jsonl"

    @operation("memory_system.extract_facts")
    def broken() -> None:
        raise ValueError("model refused")

    with trace(path, "err", clock=SimClock()), pytest.raises(ValueError):
        broken()
    (op,) = by_type(path, "operation")
    assert op["metadata"] == {"error": "ValueError: model refused"}


def test_every_prefix_of_complete_lines_is_a_valid_trace(tmp_path: Path) -> None:
    full = tmp_path / "full.jsonl"
    toy_run(full)
    lines = full.read_bytes().splitlines(keepends=True)
    for n in range(1, len(lines) + 1):
        prefix = tmp_path / f"p{n}.jsonl"
        prefix.write_bytes(b"".join(lines[:n]))
        build_index(str(prefix), read_native(prefix))


def test_a_torn_last_line_is_rejected_then_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "torn.jsonl"
    toy_run(path)
    data = path.read_bytes()
    path.write_bytes(data[:-7])  # the crash tore the last record
    with pytest.raises(InputError, match="malformed JSON"):
        build_index(str(path), read_native(path))
    assert complete_prefix(path) > 0
    build_index(str(path), read_native(path))


KILLED_CHILD = """
import sys, time
from memtrace.tracing import edge, operation, session, trace, variable

path, mode = sys.argv[1], sys.argv[2]
with trace(path, "killed", system="toy"), session("memory_construction"):
    for i in range(50 if mode == "idle" else 10**9):
        with operation("memory_system.add_to_vector_store"):
            msg = variable(f"msg-{i}", "Ana lives in Porto. " * 5, category="message")
            mem = variable("mem-1", f"fact {i}", category="memory_entry")  # version i + 1
            edge(msg, mem)
    print("waiting", flush=True)  # like a long LLM call: nothing more is recorded for a while
    time.sleep(120)
"""


def start_child(path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, str(path), mode], stdout=subprocess.PIPE, text=True
    )


def wait_for(condition: Any, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert child.poll() is None and time.monotonic() < deadline, "child died or hung"
        time.sleep(0.02)


def test_a_process_killed_mid_run_leaves_a_loadable_prefix(tmp_path: Path) -> None:
    """SIGKILL while records stream out (buffer flushes in flight): complete lines load."""
    path = tmp_path / "killed.jsonl"
    child = start_child(path, "busy")
    try:
        wait_for(lambda: path.exists() and path.stat().st_size > 400_000, child)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    complete_prefix(path)  # a kill inside write() may tear the last line
    index = build_index(str(path), read_native(path))
    assert index.counts.operations > 100
    versions = [v["version"] for v in by_type(path, "variable") if v["name"] == "mem-1"]
    assert versions == list(range(1, len(versions) + 1))
    assert len(versions) in (index.counts.operations, index.counts.operations + 1)


def test_records_reach_the_file_while_the_program_waits(tmp_path: Path) -> None:
    """Buffered records are flushed on a clock, not only when more records come: a process
    killed during a long wait loses nothing it recorded before the wait."""
    path = tmp_path / "idle.jsonl"
    child = start_child(path, "idle")
    try:
        assert child.stdout is not None and child.stdout.readline() == "waiting\n"
        wait_for(lambda: path.read_bytes().count(b'"type":"operation"') == 50, child)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert complete_prefix(path) == 0  # nothing torn: the file ends with a whole line
    index = build_index(str(path), read_native(path))
    assert index.counts.operations == 50 and index.counts.variables == 100
    assert index.counts.edges == 50


FORKING_CHILD = """
import os, sys
from memtrace.tracing import operation, trace, variable, write

with trace(sys.argv[1], "forked", system="toy"):
    with operation("memory_system.add_to_vector_store"):
        write(variable("mem-1", "Ana lives in Porto", category="memory_entry"))
    pid = os.fork()  # the buffer still holds those records (flushed within 0.1 s)
    if pid == 0:
        sys.exit(0)  # a normal exit runs atexit handlers and finalizers in the child
    os.waitpid(pid, 0)
"""


def test_a_forked_child_does_not_write_the_parents_buffer_again(tmp_path: Path) -> None:
    path = tmp_path / "forked.jsonl"
    subprocess.run([sys.executable, "-c", FORKING_CHILD, str(path)], check=True, timeout=60)
    lines = path.read_bytes().splitlines()
    assert len(lines) == len(set(lines)) == 3  # trace, variable, operation: once each
    build_index(str(path), read_native(path))


def test_the_trace_is_complete_when_the_block_ends_and_fsynced_after(tmp_path: Path) -> None:
    """Every line is written by the time ``trace`` returns; the fsync runs in the writing
    thread and ``wait_synced`` (also run at exit) waits for it."""
    path = tmp_path / "big.jsonl"
    with trace(path, "big", clock=SimClock()) as tracer, session("memory_construction"):
        for i in range(2000):  # ~1 MB: the writing thread is woken many times on the way
            with operation("memory_system.add_to_vector_store"):
                write(variable(f"mem-{i}", "x" * 400, category="memory_entry"))
    index = build_index(str(path), read_native(path))
    assert index.counts.operations == 2000 and index.counts.variables == 2000
    assert tracer is not None
    wait_synced()
    assert tracer._writer._file.closed


def test_a_failed_write_is_reported(tmp_path: Path) -> None:
    """/dev/full accepts the open and fails every write (ENOSPC), as a full disk would."""
    with (
        pytest.raises(OSError, match="/dev/full: writing the trace failed"),
        trace(Path("/dev/full"), "full"),
    ):
        for i in range(500):
            with operation("memory_system.add_to_vector_store"):
                write(variable(f"mem-{i}", "x" * 400, category="memory_entry"))


def test_async_tasks_keep_their_own_current_operation(tmp_path: Path) -> None:
    path = tmp_path / "async.jsonl"

    @operation("memory_system.search_vector_store")
    async def search(n: int) -> None:
        query = variable(f"q-{n}", f"question {n}", class_name="query")
        await asyncio.sleep(0.01 * (3 - n))  # interleave the tasks
        read(query)

    async def main() -> None:
        await asyncio.gather(*(search(n) for n in range(3)))

    with trace(path, "async"):
        asyncio.run(main())
    ops = by_type(path, "operation")
    assert sorted(op["reads"][0] for op in ops) == ["query:q-0@1", "query:q-1@1", "query:q-2@1"]


def test_threads_write_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"

    def work(n: int) -> None:
        for i in range(50):
            with operation("memory_system.add_to_vector_store"):
                write(variable(f"mem-{n}-{i}", "x" * 500, category="memory_entry"))

    with trace(path, "threads"):
        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    index = build_index(str(path), read_native(path))
    assert index.counts.operations == 200 and index.counts.variables == 200
    assert all(len(op["writes"]) == 1 for op in by_type(path, "operation"))
