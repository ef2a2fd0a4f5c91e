"""The offline judge on memories an LLM rewrote: paraphrased vs verbatim runs of the same faults.

    .venv/bin/python benchmarks/paraphrase_judge.py [--fixture heldout] [--readings lexical auto]

Every case of ``tests/fixtures/paraphrase/<fixture>.json`` (hand-written, not LoCoMo; ``cases``
set the meaning reader's thresholds, ``heldout`` was written after) is built as a
case graph (message -> extraction -> memories -> search -> context -> answer) in two memory
styles (``mem0``: third-person condensed facts, dates resolved, one per memory; ``summary``: a
consolidated profile paragraph), each in two variants (``paraphrased``: the memory as the
fixture's LLM-style text; ``verbatim``: the speaker's own words), with each planted fault of the
fixture (its truth, op and error type, fixed there). The offline judge attributes each with each
reading (``memtrace.reading``). Prints accuracy per reading, style and variant, then the offline
rate (cases/s, the judge alone, each graph attributed ``--repeat`` times: memory and context
lines recur across the cases of a trace, as here) as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from memtrace.attribution.judges import CONFIDENCE_UNSURE, CaseView, OfflineJudge
from memtrace.attribution.model import Anchor, CaseGraph, Evidence, FlowStep, Memory, OpRef
from memtrace.attribution.trails import candidates, trace_all
from memtrace.attribution.walk import linear
from memtrace.reading import Reader, make_reader
from memtrace.reading.copying import Copying

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "paraphrase"
EXTRACT = OpRef("extract", 2, "extraction", "extract_facts")
ADD = OpRef("add", 3, "embedding", "add")
SEARCH = OpRef("search", 8, "retrieval", "search")
ANSWER = OpRef("answer", 9, "generation", "answer")
OPS = {"extract": EXTRACT, "search": SEARCH, "answer": ANSWER}
STYLES = ("mem0", "summary")
VARIANTS = ("paraphrased", "verbatim")


def memories_of(case: dict[str, Any], style: str, variant: str) -> tuple[str, list[str]]:
    """The memory holding the fact and the other memories, as the style writes them."""
    said = f"{case['speaker']}: {case['message']}"
    if style == "mem0":
        fact = case["mem0"] if variant == "paraphrased" else said
        return fact, list(case["distractors"])
    others = " ".join(f"{d}." for d in case["distractors"])
    fact = case["summary"] if variant == "paraphrased" else f"{others} {said}"
    return fact, [others]


def build(case: dict[str, Any], style: str, variant: str, fault: str) -> CaseGraph:
    fact, others = memories_of(case, style, variant)
    stored = [] if fault == "ExtractionError" else [("mem-fact", fact)]
    stored += [(f"mem-{i}", text) for i, text in enumerate(others)]
    memories = tuple(
        Memory(mid, 4 + i, text, ADD, None, None, None, None)
        for i, (mid, text) in enumerate(stored)
    )
    flow = tuple(FlowStep("m", i, EXTRACT, "m", mid, text) for i, (mid, text) in enumerate(stored))
    shown = stored if fault == "ResponseError" else [m for m in stored if m[0] != "mem-fact"]
    context = tuple((f"ctx-{mid}", text) for mid, text in shown)
    anchor = Anchor(
        "paraphrase", case["id"], case["question"], (case["answer"],), "I don't know.", True,
        "q", ANSWER, (SEARCH,), ("m",),
    )  # fmt: skip
    roles = ((EXTRACT, "reads_evidence"), (SEARCH, "retrieval"), (ANSWER, "answer"))
    evidence = (Evidence("m", case["message"], seq=1),)
    copying = Copying.of(
        [(case["message"], 1)],
        [(memory.value, memory.seq) for memory in memories],
        [case["speaker"]],
    )
    return CaseGraph(anchor, evidence, flow, memories, context, roles, copying)


def attribute(graph: CaseGraph, reader: Reader) -> tuple[str | None, str | None, float]:
    trails = tuple(trace_all(graph, reader.for_trace(graph.copying)))
    found = linear(OfflineJudge(), CaseView(graph, trails), candidates(graph, trails))
    return (found.candidate.op.id if found.candidate else None), found.error_type, found.confidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fixture", choices=("cases", "heldout", "heldout2"), default="cases")
    parser.add_argument("--readings", nargs="*", default=["lexical", "meaning", "auto"])
    parser.add_argument("--repeat", type=int, default=20, help="attributions per graph (timing)")
    args = parser.parse_args()
    fixture = json.loads((FIXTURES / f"{args.fixture}.json").read_text(encoding="utf-8"))
    runs = [
        (case, style, variant, fault)
        for case in fixture["cases"]
        for style in STYLES
        for variant in VARIANTS
        for fault in fixture["faults"]
    ]
    report: dict[str, Any] = {"fixture": args.fixture, "cases": len(runs)}
    for name in args.readings:
        reader = make_reader(name)
        right: dict[str, list[bool]] = defaultdict(list)
        unsure_right: dict[str, list[bool]] = defaultdict(list)
        misses = []
        graphs = []
        for case, style, variant, fault in runs:
            graph = build(case, style, variant, fault)
            graphs.append(graph)
            op, error_type, confidence = attribute(graph, reader)
            truth = fixture["faults"][fault]
            ok = op == OPS[truth["op"]].id and error_type == fault
            right[f"{style}/{variant}"].append(ok)
            right[variant].append(ok)
            (unsure_right if confidence <= CONFIDENCE_UNSURE else right)[
                f"confident/{variant}"
            ].append(ok)
            if not ok:
                misses.append(f"{case['id']} {style}/{variant} {fault}: got {op} {error_type}")
        started = time.perf_counter()
        for _ in range(args.repeat):
            for graph in graphs:
                attribute(graph, reader)
        rate = args.repeat * len(graphs) / (time.perf_counter() - started)
        report[name] = {
            "reader": reader.name,
            "accuracy": {k: round(100 * sum(v) / len(v), 1) for k, v in sorted(right.items())},
            "right": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(right.items())},
            "unsure_right": {k: f"{sum(v)}/{len(v)}" for k, v in unsure_right.items()},
            "misses": misses,
            "cases_per_s": round(rate, 1),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
