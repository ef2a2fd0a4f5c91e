"""OTLP import rate against the native format's, on the same run, in the same invocation.

    .venv/bin/python benchmarks/otlp_import.py --conversations 2 --repeat 3

The reference mem0 system (offline backend, simulated clock) runs over the first N LoCoMo
conversations of ../shared/data/locomo/locomo10.json, traced natively and, at the same time, as
OpenInference spans through the real opentelemetry-sdk (integrations/otel.py), written as OTLP
JSON. Each file is then loaded by `memtrace-load` in a child process, native and OTLP
alternated, --repeat times each; elements = nodes + relationships written (each format has its
own element count: the OTLP trace has no prompt or parameter variables but one operation per
span and coarser edges), rate = elements / the loader's own seconds. Prints JSON and a Markdown
table with the median rates and the OTLP / native ratio.

    .venv/bin/python benchmarks/otlp_import.py --conversations 1 --repeat 5 --read-only

reads the same files without Neo4j instead: the CPU seconds (process time) of converting the OTLP
file into records (`read_otlp`: validation, the span conventions, cases) and of reading the
native file (`read_native`), alternated in one process; per span and per record, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memtrace.admin import delete_trace
from memtrace.db import connect
from memtrace.integrations.otel import OpenInferenceTracer, write_otlp_json
from memtrace.loaders.native import read_native
from memtrace.loaders.otlp import read_otlp
from memtrace.settings import load_settings
from memtrace.systems.locomo import Subset, load_locomo
from memtrace.systems.registry import make_backend, make_system
from memtrace.tracing import SimClock, trace

OUT = Path(__file__).resolve().parent / "out"
LOCOMO = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo" / "locomo10.json"
)


def write_traces(conversations: int) -> tuple[list[Path], list[Path]]:
    OUT.mkdir(exist_ok=True)
    convs = load_locomo(LOCOMO, Subset(questions=None))[:conversations]
    natives, otlps = [], []
    for conv in convs:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        mirror = partial(
            OpenInferenceTracer,
            otel_tracer=provider.get_tracer("bench"),
            session_id=conv.sample_id,
        )
        trace_id = f"bench-otlp-native-{conv.number}"
        native = OUT / f"{trace_id}.jsonl"
        with trace(native, trace_id, system="mem0", clock=SimClock(), tracer_class=mirror):
            make_system("mem0", make_backend("offline")).run(conv)
        provider.shutdown()
        otlp = write_otlp_json(
            exporter.get_finished_spans(), OUT / f"bench-otlp-{conv.number}.json"
        )
        natives.append(native)
        otlps.append(otlp)
    return natives, otlps


def run_loader(paths: list[Path]) -> dict[str, Any]:
    command = "from memtrace.cli.load import load_command; load_command()"
    args = [sys.executable, "-c", command, *map(str, paths), "--json"]
    process = subprocess.run(args, capture_output=True, check=False)
    if process.returncode != 0:
        raise SystemExit(f"loader failed: {process.stderr.decode(errors='replace')}")
    summary = json.loads(process.stdout)
    elements = summary["nodes_written"] + summary["relationships_written"]
    return {
        "elements": elements,
        "seconds": summary["seconds"],
        "elements_per_second": round(elements / summary["seconds"]),
        "trace_ids": [f["trace_id"] for f in summary["files"]],
    }


def read_only(natives: list[Path], otlps: list[Path], repeat: int) -> None:
    """CPU seconds to read each set, alternated; medians, per span / record, and the ratio."""
    seconds: dict[str, list[float]] = {"native": [], "otlp": []}
    counts = {"native": 0, "otlp": 0}
    loads = []
    for _ in range(repeat):
        loads.append(os.getloadavg()[0])
        for name, paths in (("native", natives), ("otlp", otlps)):
            started = time.process_time()
            if name == "native":
                counts[name] = sum(len(list(read_native(path))) for path in paths)
            else:
                counts[name] = sum(len(read_otlp(path)) for path in paths)
            seconds[name].append(time.process_time() - started)
    spans = sum(
        len(scope["spans"])
        for path in otlps
        for resource in json.loads(path.read_text())["resourceSpans"]
        for scope in resource["scopeSpans"]
    )
    median = {name: statistics.median(values) for name, values in seconds.items()}
    report = {
        "spans": spans,
        "records": counts,
        "cpu_seconds": {name: [round(v, 3) for v in values] for name, values in seconds.items()},
        "median_cpu_seconds": {name: round(v, 3) for name, v in median.items()},
        "otlp_us_per_span": round(median["otlp"] / spans * 1e6, 1),
        "native_us_per_record": round(median["native"] / counts["native"] * 1e6, 1),
        "otlp_over_native_per_file": round(median["otlp"] / median["native"], 2),
        "load_average": [round(v, 1) for v in loads],
    }
    print(json.dumps(report, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--read-only", action="store_true", help="no Neo4j: reading CPU only")
    args = parser.parse_args()
    natives, otlps = write_traces(args.conversations)
    if args.read_only:
        read_only(natives, otlps, args.repeat)
        return
    runs: dict[str, list[dict[str, Any]]] = {"native": [], "otlp": []}
    for _ in range(args.repeat):
        for name, paths in (("native", natives), ("otlp", otlps)):
            load = os.getloadavg()[0]
            result = run_loader(paths)
            result["load_average"] = round(load, 2)
            runs[name].append(result)
            time.sleep(1)
    with connect(load_settings()) as db:
        for result in runs["native"][:1] + runs["otlp"][:1]:
            for trace_id in result["trace_ids"]:
                delete_trace(db, trace_id)
    median = {
        name: statistics.median(r["elements_per_second"] for r in rs) for name, rs in runs.items()
    }
    report = {
        "conversations": args.conversations,
        "files_mb": {
            "native": round(sum(p.stat().st_size for p in natives) / 2**20, 2),
            "otlp": round(sum(p.stat().st_size for p in otlps) / 2**20, 2),
        },
        "runs": runs,
        "median_elements_per_second": median,
        "otlp_over_native": round(median["otlp"] / median["native"], 3),
    }
    print(json.dumps(report, indent=2))
    print("\n| format | file MB | elements | median elements/s |\n|---|---|---|---|")
    for name in ("native", "otlp"):
        print(
            f"| {name} | {report['files_mb'][name]} | {runs[name][0]['elements']:,} "
            f"| {median[name]:,.0f} |"
        )
    print(f"\nOTLP / native: {report['otlp_over_native']}")


if __name__ == "__main__":
    main()
