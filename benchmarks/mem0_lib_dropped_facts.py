"""Issue 38's scenario on the real Mem0 2.x (mem0ai 2.x, run in its own virtualenv):

    .venv-mem0v2/bin/python benchmarks/mem0_lib_dropped_facts.py --conversations 2 --sessions 1,2,3

``memtrace run mem0-lib`` (its default backend: the answer and the judge on the same endpoint)
against tests/fake_openai.py's local server playing ``DroppingMem0Model``: Mem0's additive
extraction keeps each message as one memory except that every ``--every``-th fact-bearing
extraction (7 in the issue) drops all its facts; the answer is the first memory sharing a word
with the question (a weak answerer); the judge is the offline rule. The trace is loaded into the
running Neo4j (trace id prefixed ``bench-dropped-``, deleted afterwards) and every failed case
replayed by the replay judge (no attribution written).

Counted: the failed cases whose evidence message's facts were dropped, and of those how many are
labelled ExtractionError at that message's extraction (the label: where what the answer needs
was lost), and what your answerer's reading (``with_your_answerer``) says of them. Before issue
38's label the replay label was the second one: 0 of 22 ExtractionError in the issue's run.
LoCoMo from ../shared/data (or --data); conversations 7-10 are held out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_openai import DroppingMem0Model, FakeOpenAI

from memtrace.admin import delete_trace
from memtrace.attribution.pipeline import Options, run_attribution
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.attribution.store import AttributionStore
from memtrace.cli.run import parse_subset
from memtrace.db import connect
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.replay import make_replayer, read_native
from memtrace.replay.graph import TraceFiles
from memtrace.settings import load_settings
from memtrace.systems.locomo import load_locomo
from memtrace.systems.runner import run_system

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
PREFIX = "bench-dropped-"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", default="2")
    parser.add_argument("--sessions", default="1,2,3")
    parser.add_argument("--every", type=int, default=7)
    args = parser.parse_args()
    model = DroppingMem0Model(every=args.every)
    server = FakeOpenAI()
    server.bag_of_words = 64
    server.responder = model
    server.start()
    os.environ.update(
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="bench-key",
        MEMTRACE_LLM_MODEL="fake-model",
        MEMTRACE_EMBEDDING_DIMS="64",
    )
    settings = load_settings()
    convs = load_locomo(args.data, parse_subset(args.conversations, args.sessions, None))
    out: dict[str, Any] = {"conversations": args.conversations, "sessions": args.sessions}
    with connect(settings) as db, tempfile.TemporaryDirectory() as folder:
        report = run_system("mem0-lib", convs, Path(folder), prefix=PREFIX, settings=settings)
        paths = {p.stem: p for p in report.traces}
        load_paths(db, [str(p) for p in paths.values()], LoadOptions())
        try:
            store = AttributionStore(db)
            cases = [c for trace_id in paths for c in store.failed_cases(trace_id)]
            judge = ReplayJudge(TraceFiles(paths, settings))
            _, verdicts = run_attribution(store, judge, Options(), cases=cases, write=False)
            steps: dict[str, str] = {}
            for path in paths.values():
                steps.update(make_replayer(read_native(path), settings).steps())
        finally:
            for trace_id in paths:
                delete_trace(db, trace_id)
    server.stop()
    said = {
        f"{turn.speaker}: {turn.text}": turn.dia_id
        for conv in convs
        for session in conv.sessions
        for turn in session.turns
    }
    dropped = {said[line] for line in model.dropped if line in said}
    evidence = {
        f"locomo-qa-{conv.number}-{q.number}": set(q.evidence)
        for conv in convs
        for q in conv.questions
    }
    labelled: Counter[str] = Counter()
    yours: Counter[str] = Counter()
    at_the_extraction = 0
    lost = 0
    for verdict in verdicts:
        lost_messages = evidence.get(verdict.case_id, set()) & dropped
        if not lost_messages:
            continue
        lost += 1
        labelled[verdict.error_type or json.loads(verdict.replay_outcomes or "{}")["status"]] += 1
        answerer = json.loads(verdict.replay_outcomes or "{}").get("with_your_answerer") or {}
        yours[answerer.get("error_type") or "no single op"] += 1
        step = steps.get(verdict.op_id or "", "")
        at_the_extraction += verdict.error_type == "ExtractionError" and step in {
            f"extract:{m}" for m in lost_messages
        }
    out.update(
        {
            "every": args.every,
            "cases": report.accuracy().get("all", (0, 0))[1],
            "failed": len(verdicts),
            "dropped_messages": len(dropped),
            "failed_with_dropped_evidence": lost,
            "extraction_error_at_that_extraction": at_the_extraction,
            "label": dict(labelled),
            "with_your_answerer": dict(yours),
        }
    )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
