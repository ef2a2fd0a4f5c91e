"""What replaying the real Mem0 library costs: the replay judge on a mem0-lib trace, with the
trace's recorded model calls served to the replays and without them.

    .venv/bin/python benchmarks/mem0_lib_replay.py --latency-ms 50    # mem0ai 1.0.x

One conversation of the shipped LoCoMo sample (32 messages, 11 questions), run by
``memtrace run mem0-lib``'s system against tests/fake_openai.py's local server with the four
faults tests/integration/test_mem0_lib.py plants in its replies (a dropped fact, a deleted and an
overwritten memory, a memory no search finds); each chat reply after --latency-ms, embeddings at
once. The trace is loaded into the running Neo4j (trace id ``bench-mem0lib-replay-...``, deleted
afterwards) and every failed case is attributed by the replay judge (no attribution written),
twice, each on a fresh replayer:

- ``recorded``: as shipped: a request no repair changed is answered from the trace;
- ``live``: the same with the trace's recorded calls removed, so every model call of every replay
  goes to the endpoint (what a replay costs without the cache).

Reports per variant: wall and CPU seconds, replays (total, per case: median and max; cases
needing more than their candidates + 1, the goal in the developers' guide), model calls
answered from the trace and by the endpoint, the planted labels reproduced; and the wall time of
one full traced run of the conversation, the baseline of the ratios.
"""

from __future__ import annotations

import argparse
import dataclasses
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

from fake_openai import FakeOpenAI, Mem0Replies, Reply

from memtrace.admin import delete_trace
from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.attribution.store import AttributionStore
from memtrace.db import connect
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.replay import TraceReplayer, make_replayer, read_native
from memtrace.settings import load_settings
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.mem0_lib import Mem0LibSystem
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

PREFIX = "bench-mem0lib-replay-"
PLANTED = {  # case -> the error type planted for it (as the integration test plants them)
    "locomo-qa-1-1": "ExtractionError",
    "locomo-qa-1-2": "ExtractionError",
    "locomo-qa-1-3": "UpdateError",
    "locomo-qa-1-5": "DeletionError",
    "locomo-qa-1-7": "RetrievalError",
    "locomo-qa-1-8": "RetrievalError",
}
MODEL_CALLS = [0]  # every model call Mem0 made in the replays (from the trace or the endpoint)


def count_model_calls() -> None:
    """Count the calls that reach the system's model wrapper (above its recorded-call lookup)."""
    wrap = Mem0LibSystem._model

    def counted(system: Mem0LibSystem, original: Callable[..., Any]) -> Callable[..., Any]:
        inner = wrap(system, original)

        def call(*args: Any, **kwargs: Any) -> Any:
            MODEL_CALLS[0] += 1
            return inner(*args, **kwargs)

        return call

    Mem0LibSystem._model = counted  # type: ignore[method-assign,assignment]


def server(latency: float) -> FakeOpenAI:
    replies = Mem0Replies()
    replies.drop.add("5k race")
    replies.delete["baker"] = "pottery class"
    replies.overwrite["Silent Harbor"] = "rabbit named"
    fake = FakeOpenAI()
    fake.bag_of_words = 64
    fake.hidden.add("Kyoto")

    def slow(body: dict[str, Any]) -> Reply | None:
        reply = replies(body)
        return dataclasses.replace(reply, delay=latency) if reply is not None else None

    fake.responder = slow
    fake.start()
    return fake


class OneTrace:
    """The replayer of the one trace, with or without its recorded model calls."""

    def __init__(self, path: Path, settings: Any, recorded: bool) -> None:
        inputs = read_native(path)
        if not recorded:
            inputs = dataclasses.replace(inputs, recorded={})
        self.replayer: TraceReplayer = make_replayer(inputs, settings)

    def for_trace(self, trace_id: str) -> TraceReplayer:
        return self.replayer


def judged(db: Any, settings: Any, path: Path, fake: FakeOpenAI, recorded: bool) -> dict[str, Any]:
    store = AttributionStore(db)
    replayers = OneTrace(path, settings, recorded)
    chat, calls = len(fake.chat_requests), MODEL_CALLS[0]
    started, cpu = time.perf_counter(), time.process_time()
    _, verdicts = run_attribution(
        store, ReplayJudge(replayers), Options(), trace_id=path.stem, write=False, workers=1
    )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    live = len(fake.chat_requests) - chat
    replays = [v.replays for v in verdicts]
    return {
        "cases": len(verdicts),
        "wall_s": wall,
        "cpu_s": cpu,  # this process: Mem0, memtrace and the local server
        "replays": sum(replays),
        "replays_median": statistics.median(replays),
        "replays_max": max(replays),
        "cases_over_candidates_plus_1": sum(v.replays > len(v.checked) + 1 for v in verdicts),
        "model_calls_from_trace": MODEL_CALLS[0] - calls - live,
        "model_calls_live": live,
        "planted_reproduced": sum(
            v.error_type == PLANTED[v.case_id] for v in verdicts if v.case_id in PLANTED
        ),
        "planted": len(PLANTED),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-ms", type=float, default=50.0, help="per chat reply")
    args = parser.parse_args()
    count_model_calls()
    fake = server(args.latency_ms / 1000)
    os.environ.update(
        OPENAI_BASE_URL=fake.base_url,
        OPENAI_API_KEY="bench-key",
        MEMTRACE_LLM_MODEL="fake-model",
        MEMTRACE_EMBEDDING_DIMS="64",
    )
    settings = load_settings()
    conv = load_locomo(SAMPLE_PATH)[0]
    out: dict[str, Any] = {"latency_ms": args.latency_ms}
    with connect(settings) as db, tempfile.TemporaryDirectory() as folder:
        system = make_system("mem0-lib", make_backend("offline"), settings=settings)
        started = time.perf_counter()
        _, path = run_conversation(system, conv, Path(folder), prefix=PREFIX, clock=SimClock())
        out["full_run_s"] = time.perf_counter() - started
        out["full_run_chat_calls"] = len(fake.chat_requests)
        assert path is not None
        load_paths(db, [str(path)], LoadOptions())
        try:
            for variant in ("recorded", "live"):
                out[variant] = judged(db, settings, path, fake, variant == "recorded")
                entry = out[variant]
                entry["wall_per_case_over_full_run"] = (
                    entry["wall_s"] / entry["cases"] / out["full_run_s"]
                )
                print(variant, json.dumps(entry), flush=True)
        finally:
            delete_trace(db, path.stem)
    fake.stop()
    out["live_over_recorded_wall"] = out["live"]["wall_s"] / out["recorded"]["wall_s"]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
