"""Tracing overhead in instructions and cache misses: the offline mem0 system under cachegrind.

    .venv/bin/python benchmarks/tracing_instructions.py [--data PATH] [--conversations 1,2]

Wall-clock overhead on a shared 2-core machine moves by +-5 points from one minute to the next
(see tracing_overhead.py). Instruction counts do not: valgrind's cachegrind counts every
instruction the process executes and simulates its caches, so the same code gives the same
figures however loaded the machine is. This script runs the workload of tracing_overhead.py
(the offline mem0 system on LoCoMo conversations 1 and 2) with tracing off, on, and `api-only`
(the real tracing API in front of a tracer that records nothing and hands out a fresh handle per
variable: what the API layer alone costs, the floor for any faster tracer core behind it), each in
a child process under cachegrind, once with 1 and once with 3 runs: the difference divided by two
is the cost of one run without the interpreter's start-up and imports. It prints per run:
instructions (Ir), simulated L1 instruction and data cache misses (I1mr, D1mr, D1mw), and on and
api-only over off for each. Needs valgrind (Debian: `apt-get install valgrind`); takes 8-18
minutes on this 2-core machine (cachegrind runs the program about 50x slower; two children at a
time).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memtrace.systems.locomo import SAMPLE_PATH, Subset, load_locomo
from memtrace.systems.mem0 import Mem0System
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.runner import run_conversation
from memtrace.tracing import Var, api, wait_synced
from memtrace.tracing.tracer import OpState, Tracer

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw")  # the simulated last level (the host's L3) hardly misses
SHORT_RUNS, LONG_RUNS = 1, 3
MODES = ("off", "on", "api-only")


class ApiOnlyTracer(Tracer):
    """Records nothing: a fresh handle per ``variable`` call, a bare state per operation."""

    def __init__(self, path: Path, trace_id: str, **options: Any) -> None:
        self._handles = itertools.count(1)
        self._latest = {}

    def session(self, name: str, **options: Any) -> str:
        return "session"

    def variable(self, name: str, value: Any, **options: Any) -> Var:
        return Var(f"{name}@{next(self._handles)}", name, 1, options.get("class_name"))

    def start_operation(self, name: str, **options: Any) -> OpState:
        return OpState("op", name, "", 0, options.get("session"), options.get("category"))

    def finish_operation(self, op: OpState) -> None:
        pass

    def case(self, record: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


def child(data: Path, conversations: str, mode: str, runs: int) -> None:
    """The measured process: ``runs`` runs of the offline mem0 system, traced or not."""
    convs = load_locomo(data, Subset(conversations=tuple(conversations.split(","))))
    out = Path(tempfile.mkdtemp(prefix="memtrace-instructions-"))
    if mode == "api-only":
        setattr(api, "Tracer", ApiOnlyTracer)  # noqa: B010 - the name trace() instantiates
    for _ in range(runs):
        for conv in convs:
            run_conversation(Mem0System(OfflineBackend()), conv, None if mode == "off" else out)
        wait_synced()
    shutil.rmtree(out)


def cachegrind(
    args: argparse.Namespace, mode: str, runs: int, workdir: Path
) -> tuple[list[str], Path]:
    """The command that runs one child process under cachegrind, and its output file."""
    out_file = workdir / f"cachegrind-{mode}-{runs}.out"
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        f"--cachegrind-out-file={out_file}",
        sys.executable,
        __file__,
        "--child",
        mode,
        "--runs",
        str(runs),
        "--data",
        str(args.data),
        "--conversations",
        args.conversations,
    ]
    return command, out_file


def run_all(commands: list[list[str]]) -> None:
    """Run the commands two at a time (the counts do not depend on what else runs)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        for command, done in zip(commands, pool.map(_run, commands), strict=True):
            if done.returncode != 0:
                sys.exit(f"cachegrind run failed ({' '.join(command)}):\n{done.stderr[-2000:]}")


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)


def read_totals(path: Path) -> dict[str, int]:
    """The ``summary:`` totals of a cachegrind output file, by event name."""
    events: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            totals = dict(zip(events, (int(n) for n in line.split()[1:]), strict=True))
            return {name: totals[name] for name in EVENTS}
    raise ValueError(f"{path}: no summary line (is this a cachegrind output file?)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=LOCOMO if LOCOMO.exists() else SAMPLE_PATH)
    parser.add_argument("--conversations", default="1,2")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.data, args.conversations, args.child, args.runs)
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    per_run: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="memtrace-cachegrind-") as tmp:
        jobs = {
            (mode, runs): cachegrind(args, mode, runs, Path(tmp))
            for mode in MODES
            for runs in (SHORT_RUNS, LONG_RUNS)
        }
        run_all([command for command, _ in jobs.values()])
        totals = {key: read_totals(out_file) for key, (_, out_file) in jobs.items()}
        for mode in MODES:
            short, long = totals[mode, SHORT_RUNS], totals[mode, LONG_RUNS]
            per_run[mode] = {
                name: (long[name] - short[name]) // (LONG_RUNS - SHORT_RUNS) for name in EVENTS
            }
    result = {
        "data": args.data.name,
        "conversations": args.conversations,
        "per_run": per_run,
        **{
            f"{mode}_over_off_pct": {
                name: round(100 * (per_run[mode][name] / per_run["off"][name] - 1), 1)
                for name in EVENTS
            }
            for mode in MODES[1:]
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
