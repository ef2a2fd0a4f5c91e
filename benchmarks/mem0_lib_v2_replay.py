"""Replaying the real Mem0 2.x library (mem0ai 2.x, run in its own virtualenv):

    .venv-mem0v2/bin/python benchmarks/mem0_lib_v2_replay.py --latency-ms 50

One conversation of the shipped LoCoMo sample (32 messages, 11 questions), run by ``memtrace run
mem0-lib``'s system against tests/fake_openai.py's local server (``Mem0V2Replies``: valid
additive-extraction replies; each chat reply after --latency-ms, embeddings at once), once
clean and once per planted fault: for each of the six messages a question asks about, its
extraction drops it (``drop``), or its memory is embedded away from every question
(``hidden``: a retrieval miss). A planted case is a question about the faulted message that
the clean run answers correctly; its expected label is ExtractionError at that message's
``extract`` step, or RetrievalError at the question's ``search`` step.

Every trace is loaded into the running Neo4j (trace ids ``bench-mem0v2-replay-...``, deleted
afterwards) and measured twice, each on a fresh replayer:

- identity: every case replayed without repairs: answers reproduced, chat calls made;
- the replay judge over every failed case (no attribution written): planted labels reproduced
  (type and step), the executed status of the natural failures (the clean run's failed cases),
  replays per case, cases per second.
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
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_openai import FakeOpenAI, Mem0V2Replies, Reply

from memtrace.admin import delete_trace
from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.attribution.store import AttributionStore
from memtrace.db import Database, connect
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.replay import TraceReplayer, make_replayer, read_native
from memtrace.settings import Settings, load_settings
from memtrace.systems.locomo import SAMPLE_PATH, Conversation, load_locomo
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

PREFIX = "bench-mem0v2-replay-"
# the message each question is about -> a phrase only that message says
PLANTABLE = {
    "D1:3": "5k race",
    "D2:3": "rabbit named",
    "D2:6": "pottery class",
    "D3:3": "Kyoto",
    "D4:3": "Silent Harbor",
    "D4:6": "baker",
}


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    drop: str = ""  # a phrase whose message the extraction drops
    hidden: str = ""  # a phrase whose memory no search finds
    message: str = ""  # the faulted message


def scenarios() -> list[Scenario]:
    found = [Scenario("clean")]
    for dia_id, phrase in PLANTABLE.items():
        found.append(Scenario(f"drop-{dia_id}", drop=phrase, message=dia_id))
        found.append(Scenario(f"hidden-{dia_id}", hidden=phrase, message=dia_id))
    return found


class Server:
    """The local endpoint, its faults set per scenario."""

    def __init__(self, latency: float) -> None:
        self.replies = Mem0V2Replies()
        self.fake = FakeOpenAI()
        self.fake.bag_of_words = 64

        def slow(body: dict[str, Any]) -> Reply | None:
            reply = self.replies(body)
            return dataclasses.replace(reply, delay=latency) if reply is not None else None

        self.fake.responder = slow
        self.fake.start()

    def plant(self, scenario: Scenario) -> None:
        self.replies.drop = {scenario.drop} if scenario.drop else set()
        self.fake.hidden = {scenario.hidden} if scenario.hidden else set()

    @property
    def chat_calls(self) -> int:
        return len(self.fake.chat_requests)


class OneTrace:
    def __init__(self, replayer: TraceReplayer) -> None:
        self.replayer = replayer

    def for_trace(self, trace_id: str) -> TraceReplayer:
        return self.replayer


def expected_labels(
    scenario: Scenario, conv: Conversation, clean_passed: set[str]
) -> dict[str, tuple[str, str]]:
    """Planted case -> (error type, step) the replay judge should name."""
    expected = {}
    for question in conv.questions:
        case_id = f"locomo-qa-{conv.number}-{question.number}"
        if scenario.message not in question.evidence or case_id not in clean_passed:
            continue
        if scenario.drop:
            expected[case_id] = ("ExtractionError", f"extract:{scenario.message}")
        else:
            expected[case_id] = ("RetrievalError", f"search:{case_id}")
    return expected


def measure(
    db: Database,
    settings: Settings,
    server: Server,
    conv: Conversation,
    scenario: Scenario,
    folder: Path,
    clean_passed: set[str],
) -> dict[str, Any]:
    server.plant(scenario)
    system = make_system("mem0-lib", make_backend("offline"), settings=settings)
    started = time.perf_counter()
    run, path = run_conversation(
        system, conv, folder, prefix=f"{PREFIX}{scenario.name}-", clock=SimClock()
    )
    out: dict[str, Any] = {"scenario": scenario.name, "run_s": time.perf_counter() - started}
    assert path is not None
    answers = {r.case_id: (r.passed, r.prediction) for r in run.results}
    # identity: every case, no repair
    identity = make_replayer(read_native(path), settings)
    chat = server.chat_calls
    started = time.perf_counter()
    again = {case: identity.replay(case) for case in answers}
    out["identity_s"] = time.perf_counter() - started
    out["identity_reproduced"] = sum(
        (r.passed, r.prediction) == answers[case] for case, r in again.items()
    )
    out["identity_cases"] = len(answers)
    out["identity_chat_calls"] = server.chat_calls - chat
    # the replay judge on every failed case
    load_paths(db, [str(path)], LoadOptions())
    try:
        replayer = make_replayer(read_native(path), settings)
        chat, cpu = server.chat_calls, time.process_time()
        started = time.perf_counter()
        _, verdicts = run_attribution(
            AttributionStore(db),
            ReplayJudge(OneTrace(replayer)),
            Options(),
            trace_id=path.stem,
            write=False,
            workers=1,
        )
        out["judge_s"] = time.perf_counter() - started
        out["judge_cpu_s"] = time.process_time() - cpu
    finally:
        delete_trace(db, path.stem)
    out["judged"] = len(verdicts)
    out["judge_chat_calls"] = server.chat_calls - chat
    out["replays"] = [v.replays for v in verdicts]
    out["over_candidates_plus_1"] = sum(v.replays > len(v.checked) + 1 for v in verdicts)
    steps = replayer.steps()
    expected = expected_labels(scenario, conv, clean_passed)
    out["planted"] = len(expected)
    out["planted_reproduced"] = 0
    out["planted_missed"] = []
    out["natural"] = Counter()
    for verdict in verdicts:
        status = json.loads(verdict.replay_outcomes or "{}").get("status", "error")
        got = (verdict.error_type, steps.get(verdict.op_id or "", ""))
        if verdict.case_id in expected:
            if got == expected[verdict.case_id]:
                out["planted_reproduced"] += 1
            else:
                out["planted_missed"].append([verdict.case_id, *got])
        elif verdict.case_id not in clean_passed:
            out["natural"][f"{status}:{verdict.error_type}"] += 1
    out["failed"] = [case for case, (passed, _) in answers.items() if not passed]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-ms", type=float, default=50.0, help="per chat reply")
    parser.add_argument("--only", nargs="*", help="scenario names (default: all)")
    args = parser.parse_args()
    server = Server(args.latency_ms / 1000)
    os.environ.update(
        OPENAI_BASE_URL=server.fake.base_url,
        OPENAI_API_KEY="bench-key",
        MEMTRACE_LLM_MODEL="fake-model",
        MEMTRACE_EMBEDDING_DIMS="64",
    )
    settings = load_settings()
    conv = load_locomo(SAMPLE_PATH)[0]
    results = []
    clean_passed: set[str] = set()
    with connect(settings) as db, tempfile.TemporaryDirectory() as folder:
        for scenario in scenarios():
            if args.only and scenario.name not in args.only and scenario.name != "clean":
                continue
            entry = measure(db, settings, server, conv, scenario, Path(folder), clean_passed)
            if scenario.name == "clean":
                clean_passed = {
                    f"locomo-qa-{conv.number}-{q.number}" for q in conv.questions
                } - set(entry["failed"])
            results.append(entry)
            print(json.dumps(entry), flush=True)
    server.fake.stop()
    replays = [n for r in results for n in r["replays"]]
    natural: Counter[str] = Counter()
    for r in results:
        natural.update(r["natural"])
    summary = {
        "latency_ms": args.latency_ms,
        "scenarios": len(results),
        "identity_reproduced": sum(r["identity_reproduced"] for r in results),
        "identity_cases": sum(r["identity_cases"] for r in results),
        "identity_chat_calls": sum(r["identity_chat_calls"] for r in results),
        "identity_cases_per_s": sum(r["identity_cases"] for r in results)
        / sum(r["identity_s"] for r in results),
        "planted_reproduced": sum(r["planted_reproduced"] for r in results),
        "planted": sum(r["planted"] for r in results),
        "planted_missed": [m for r in results for m in r["planted_missed"]],
        "natural_by_status": dict(natural),
        "judged": sum(r["judged"] for r in results),
        "judge_cases_per_s": sum(r["judged"] for r in results) / sum(r["judge_s"] for r in results),
        "judge_chat_calls": sum(r["judge_chat_calls"] for r in results),
        "replays_per_case_median": statistics.median(replays) if replays else 0,
        "replays_per_case_max": max(replays, default=0),
        "cases_over_candidates_plus_1": sum(r["over_candidates_plus_1"] for r in results),
        "full_run_s_median": statistics.median(r["run_s"] for r in results),
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
