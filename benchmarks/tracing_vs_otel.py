"""Per-record cost of memtrace's tracer against the OpenTelemetry SDK's per-span cost, same run.

    .venv/bin/python benchmarks/tracing_vs_otel.py [--steps 20000] [--repeat 7]

The same loop of ``--steps`` steps is traced two ways, interleaved ``--repeat`` times so that the
machine's load hits both alike:
  memtrace - each step is an ``operation`` that writes one new variable made from the step's
             input (``variable(..., sources=(input,))``): two records (the operation and the
             variable version), written to a native JSONL file by the tracer's writing thread;
  otel     - each step is one span carrying the same input and output text as attributes
             (OpenInference's ``input.value`` / ``output.value``), ended into the SDK's
             ``BatchSpanProcessor`` (its queue large enough that no span is dropped) whose
             exporter encodes every batch as OTLP protobuf (the SDK's own encoder, as the
             OTLP/HTTP exporter sends it) and appends it to a file.
A third, ``bare``, runs the loop untraced; each traced variant's cost is its time minus bare's
in the same repeat. Reported: the cost per memtrace record and per OpenTelemetry span (median
over repeats, main-thread CPU and wall), and their ratio: the goal is a record at <= 0.3x a
span. Main-thread CPU (``time.thread_time``) leaves out both writers' background threads, whose
work overlaps the program; wall includes them when the cores are busy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from memtrace.tracing import operation, trace, variable, wait_synced

TEXT = "Caroline said she moved to Lisbon in May 2023 to start a counselling course."


def _work(i: int) -> str:
    # a step's own work: small, as in the offline reference systems (tens of microseconds there)
    return f"{TEXT} (#{i})".upper()


def bare(steps: int, _directory: Path) -> None:
    for i in range(steps):
        _work(i)


def memtrace_loop(steps: int, directory: Path) -> None:
    with trace(directory / "memtrace.jsonl", "bench", system="bench"):
        source = variable("input", TEXT, category="message")
        for i in range(steps):
            with operation("step", category="extraction"):
                variable(f"out-{i}", _work(i), category="memory_entry", sources=(source,))
    wait_synced()


class _FileExporter(SpanExporter):
    """The OTLP/HTTP exporter's encoding, to a file instead of a socket."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("ab")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._file.write(encode_spans(spans).SerializePartialToString())
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._file.close()


def otel_loop(steps: int, directory: Path) -> None:
    provider = TracerProvider()
    # a queue that holds every span: the default (2,048) drops spans when the exporter's thread
    # falls behind on a busy machine ("Queue full, dropping Span"), which would make the SDK look
    # cheaper than it is and lose data that memtrace keeps
    exporter = _FileExporter(directory / "otel.bin")
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=max(steps + 1, 512)))
    tracer = provider.get_tracer("bench")
    for i in range(steps):
        with tracer.start_as_current_span("step") as span:
            span.set_attribute("input.value", TEXT)
            span.set_attribute("output.value", _work(i))
    provider.shutdown()  # flushes the last batches, as a process exit would


def _timed(run: Callable[[int, Path], None], steps: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cpu, wall = time.thread_time(), time.perf_counter()
        run(steps, Path(tmp))
        return time.thread_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    variants = {"bare": bare, "memtrace": memtrace_loop, "otel": otel_loop}
    for run in variants.values():  # warm-up: imports, caches, the first file
        _timed(run, 500)
    per: dict[str, dict[str, list[float]]] = {
        name: {"cpu": [], "wall": []} for name in ("memtrace", "otel")
    }
    load = [os.getloadavg()[0]]
    for _ in range(args.repeat):
        times = {name: _timed(run, args.steps) for name, run in variants.items()}
        for name, units in (("memtrace", 2 * args.steps), ("otel", args.steps)):
            for k, clock in enumerate(("cpu", "wall")):
                extra = times[name][k] - times["bare"][k]
                per[name][clock].append(extra / units * 1e6)  # us per record / per span
    load.append(os.getloadavg()[0])
    medians = {
        name: {clock: statistics.median(values) for clock, values in clocks.items()}
        for name, clocks in per.items()
    }
    print(
        json.dumps(
            {
                "steps": args.steps,
                "repeat": args.repeat,
                "load_average": load,
                "us_per_memtrace_record": medians["memtrace"],
                "us_per_otel_span": medians["otel"],
                "record_over_span": {
                    clock: medians["memtrace"][clock] / medians["otel"][clock]
                    for clock in ("cpu", "wall")
                },
                # one step is two memtrace records and one span: the same information either way
                "step_over_span": {
                    clock: 2 * medians["memtrace"][clock] / medians["otel"][clock]
                    for clock in ("cpu", "wall")
                },
                "per_repeat": per,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
