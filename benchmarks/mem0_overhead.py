"""Tracing overhead of the Mem0 integration: the same real-Mem0 run, untraced and traced.

    .venv/bin/python benchmarks/mem0_overhead.py --latency-ms 50 --repeat 3    # mem0ai 1.0.x
    .venv-mem0v2/bin/python benchmarks/mem0_overhead.py --latency-ms 50 --repeat 3  # 2.x

One conversation of the shipped LoCoMo sample (32 messages, 11 questions): every message is one
``Memory.add()`` (1.0.x: two chat calls, fact extraction and update decision; 2.x: one additive
extraction call; plus embeddings) and every question one ``Memory.search()``. The model is
tests/fake_openai.py's local HTTP server with valid replies for the installed version's prompts,
answering each chat call after --latency-ms (embeddings answer at once). Variants, alternated
--repeat times, each on a fresh Memory (Qdrant in-memory):

- ``plain``: mem0 as shipped;
- ``traced``: ``instrument(memory)`` and a native trace written (wall clock).

Besides wall and CPU time, the time spent in the tracer's own work (turning each add()'s and
search()'s recorded events into records) is summed per run: on a loaded machine the difference
of two noisy totals says less than that direct sum. Per ``add()``: the median untraced call, the
median traced call, and the tracer's own work per call as a share of the untraced call.

Prints JSON and a Markdown table: median wall and CPU seconds per variant (CPU: this process,
so Mem0, the tracer and the local server; steadier than wall time on a shared machine) and
traced / plain.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_openai import FakeOpenAI, Mem0Replies, Mem0V2Replies, Reply

from memtrace.integrations.mem0 import instrument, mem0_version
from memtrace.settings import load_settings
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.mem0_lib import import_mem0, memory_config
from memtrace.tracing import session, trace, variable

TRACING_SECONDS: list[float] = []
ADD_WORK_SECONDS: list[float] = []  # the tracer's own work inside each traced add()
ADD_SECONDS: dict[str, list[float]] = {"plain": [], "traced": []}
V2 = mem0_version() >= (2,)


def timed(method: Callable[..., None], *into: list[float]) -> Callable[..., None]:
    def run(*args: Any) -> None:
        started = time.perf_counter()
        try:
            method(*args)
        finally:
            for found in (TRACING_SECONDS, *into):
                found.append(time.perf_counter() - started)

    return run


def search(memory: Any, text: str) -> None:
    if V2:
        memory.search(text, filters={"user_id": "bench"}, top_k=10)
    else:
        memory.search(text, user_id="bench", limit=10)


def one_run(traced: bool, number: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process: Mem0, the tracer and the local server)."""
    conv = load_locomo(SAMPLE_PATH)[0]
    with tempfile.TemporaryDirectory() as folder:
        memory = import_mem0(load_settings().home).from_config(
            memory_config(load_settings(), Path(folder), f"bench{number}")
        )
        state = instrument(memory) if traced else None
        if state is not None:  # time the tracer's own work: turning events into records
            state._write_add = timed(state._write_add, ADD_WORK_SECONDS)  # type: ignore[method-assign]
            state._write_search = timed(state._write_search)  # type: ignore[method-assign]
        variant = "traced" if traced else "plain"
        out = Path(folder) / "trace.jsonl"
        started, cpu = time.perf_counter(), time.process_time()
        with trace(out, f"mem0-bench-{number}", system="mem0-lib", enabled=traced):
            with session("construction"):
                for sess in conv.sessions:
                    for turn in sess.turns:
                        message = variable(turn.dia_id, turn.text, category="message")
                        content = [{"role": "user", "content": f"{turn.speaker}: {turn.text}"}]
                        began = time.perf_counter()
                        if state is not None:
                            with state.inputs(message):
                                memory.add(content, user_id="bench")
                        else:
                            memory.add(content, user_id="bench")
                        ADD_SECONDS[variant].append(time.perf_counter() - began)
            with session("search"):
                for question in conv.questions:
                    search(memory, question.text)
        return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    fake = FakeOpenAI()
    fake.start()
    replies = Mem0V2Replies() if V2 else Mem0Replies()
    delay = args.latency_ms / 1000

    def slow(body: dict[str, Any]) -> Reply | None:
        reply = replies(body)
        return Reply(reply.content, delay=delay) if reply is not None else None

    fake.responder = slow
    fake.bag_of_words = 64
    os.environ.update(
        OPENAI_BASE_URL=fake.base_url,
        OPENAI_API_KEY="bench",
        MEMTRACE_LLM_MODEL="fake",
        MEMTRACE_EMBEDDING_DIMS="64",
    )
    seconds: dict[str, list[float]] = {"plain": [], "traced": []}
    cpu: dict[str, list[float]] = {"plain": [], "traced": []}
    one_run(False, 0)  # warm-up: imports, first Qdrant collection
    ADD_SECONDS["plain"].clear()
    for i in range(args.repeat):
        for name in ("plain", "traced"):
            wall, used = one_run(name == "traced", i + 1)
            seconds[name].append(round(wall, 3))
            cpu[name].append(round(used, 3))
    fake.stop()
    median = {name: statistics.median(values) for name, values in seconds.items()}
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    report = {
        "latency_ms": args.latency_ms,
        "chat_calls": len(fake.chat_requests),
        "seconds": seconds,
        "median_seconds": median,
        "traced_over_plain": round(median["traced"] / median["plain"], 4),
        "cpu_seconds": cpu,
        "median_cpu_seconds": median_cpu,
        "cpu_traced_over_plain": round(median_cpu["traced"] / median_cpu["plain"], 4),
        "tracing_seconds_per_run": round(sum(TRACING_SECONDS) / args.repeat, 4),
        "tracing_share_of_plain": round(sum(TRACING_SECONDS) / args.repeat / median["plain"], 5),
        "load_average": round(os.getloadavg()[0], 2),
        "mem0ai": ".".join(map(str, mem0_version())),
    }
    plain_add = statistics.median(ADD_SECONDS["plain"])
    work_add = statistics.median(ADD_WORK_SECONDS)
    report["per_add"] = {
        "calls": len(ADD_SECONDS["plain"]),
        "median_plain_ms": round(plain_add * 1000, 3),
        "median_traced_ms": round(statistics.median(ADD_SECONDS["traced"]) * 1000, 3),
        "median_tracer_work_ms": round(work_add * 1000, 4),
        "tracer_work_share_of_plain": round(work_add / plain_add, 5),
        "traced_over_plain": round(statistics.median(ADD_SECONDS["traced"]) / plain_add, 4),
    }
    print(json.dumps(report, indent=2))
    print("\n| variant | median wall s | median CPU s |\n|---|---|---|")
    for name in ("plain", "traced"):
        print(f"| {name} | {median[name]:.3f} | {median_cpu[name]:.3f} |")
    wall, cpu_ratio = report["traced_over_plain"], report["cpu_traced_over_plain"]
    print(f"\ntraced / plain: wall {wall}, CPU {cpu_ratio}")
    share = report["tracing_share_of_plain"]
    print(
        f"tracer's own work: {report['tracing_seconds_per_run']} s per run ({share:.3%} of plain)"
    )
    per_add = report["per_add"]
    print(
        f"per add(): plain {per_add['median_plain_ms']} ms, traced {per_add['median_traced_ms']}"
        f" ms, tracer's own work {per_add['median_tracer_work_ms']} ms "
        f"({per_add['tracer_work_share_of_plain']:.3%} of the untraced call)"
    )


if __name__ == "__main__":
    main()
