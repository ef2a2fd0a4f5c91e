"""Mutation testing of the attribution, replay and routing code against the unit tests (mutmut).

A benchmark of the tests, not of memtrace: mutmut changes the code one small edit at a time (a
``<`` for a ``<=``, a dropped ``not``, a constant off by one, ...) and runs the unit tests that
cover the changed function; a mutant no test notices *survived*. The score is the share of
mutants detected (killed or timed out). docs/testing.md records the last run and why each
surviving mutant is acceptable. The goal is >= 85% on these modules.

Runs in a copy of the working tree (mutmut writes a ``mutants/`` directory beside the code), at
low priority (``os.nice``). The whole run takes hours on two shared cores; ``--sample`` is CI's:
two modules against the unit tests that pin their decisions, a couple of minutes, failing under
``--min-score``. A run stopped half-way (``--timeout``) resumes where it was with the same
``--workdir``; ``--retest`` runs that workdir's surviving mutants again (after new tests);
``--only`` limits either to the mutants whose names match (``'memtrace.replay.engine.*'``):
those not checked yet, or with ``--retest`` those undetected.

    .venv/bin/python benchmarks/mutation.py --workdir /tmp/mutation        # the whole thing
    .venv/bin/python benchmarks/mutation.py --sample --min-score 0.85      # CI's sample
    .venv/bin/python benchmarks/mutation.py --modules memtrace/attribution/walk.py \
        --tests tests/unit/test_trails_edges.py --json walk.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULES = ("memtrace/attribution/*", "memtrace/replay/*", "memtrace/optimize/routing.py")
TESTS = ("tests/unit/",)
SAMPLE_MODULES = ("memtrace/attribution/counterfactual.py", "memtrace/attribution/walk.py")
SAMPLE_TESTS = ("tests/unit/test_executed_label.py", "tests/unit/test_trails_edges.py")
# Files the unit tests read beside the code (docs examples, the architecture map, fixtures).
ALSO_COPY = ("benchmarks/", "docs/", "README.md", "scripts/", "Makefile", ".ci/", "docker/")
DETECTED = ("killed", "timeout", "caught by type check")
UNDETECTED = ("survived", "no tests")
RESULT_LINE = re.compile(r"^\s+(\S+): (.+)$")


def toml_list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def prepare(workdir: Path, modules: tuple[str, ...], tests: tuple[str, ...]) -> Path:
    """A copy of the working tree (tracked and new files) with mutmut's configuration."""
    copy = workdir / "repo"
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = REPO / name, copy / name
        if not source.is_file():
            continue
        if target.exists() and target.stat().st_mtime == source.stat().st_mtime:
            continue  # unchanged: mutmut keeps its results for it
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    shared = REPO.parent / "shared"  # the tests' data (tests/conftest.py), next to the repo
    if shared.is_dir():
        for link in (workdir / "shared", copy / "shared"):  # the copy and mutmut's mutants/
            if not link.exists():
                link.symlink_to(shared)
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8").split("\n[tool.mutmut]\n")[0]
    config = (
        "\n[tool.mutmut]\n"
        'source_paths = ["memtrace"]\n'
        f"only_mutate = {toml_list(modules)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
        f"also_copy = {toml_list(ALSO_COPY)}\n"
    )
    pyproject.write_text(text.rstrip("\n") + "\n" + config, encoding="utf-8")
    return copy


def results(copy: Path, mutmut: str) -> dict[str, str]:
    """Mutant name -> status, as mutmut recorded them."""
    out = subprocess.run(
        [mutmut, "results", "--all", "true"], cwd=copy, check=True, capture_output=True, text=True
    ).stdout
    return {m[1]: m[2] for line in out.splitlines() if (m := RESULT_LINE.match(line))}


@dataclass
class Summary:
    statuses: dict[str, str]  # mutant name -> status

    @property
    def detected(self) -> int:
        return sum(status in DETECTED for status in self.statuses.values())

    @property
    def checked(self) -> int:
        return self.detected + len(self.undetected)

    @property
    def undetected(self) -> list[str]:
        return sorted(name for name, status in self.statuses.items() if status in UNDETECTED)

    @property
    def unchecked(self) -> int:
        return sum(status == "not checked" for status in self.statuses.values())

    @property
    def score(self) -> float | None:
        return round(self.detected / self.checked, 4) if self.checked else None

    def by_module(self) -> dict[str, dict[str, int]]:
        found: dict[str, Counter[str]] = {}
        for name, status in self.statuses.items():
            module = name.split(".x_")[0].split(".x\u01c1")[0]
            found.setdefault(module, Counter())[status] += 1
        return {module: dict(counts) for module, counts in sorted(found.items())}

    def as_dict(self) -> dict[str, object]:
        return {
            "mutants": len(self.statuses),
            "checked": self.checked,
            "detected": self.detected,
            "score": self.score,
            "statuses": dict(Counter(self.statuses.values())),
            "by_module": self.by_module(),
            "not_checked": self.unchecked,
            "undetected": self.undetected,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", action="store_true", help="CI's sample (two modules)")
    parser.add_argument("--modules", nargs="+", help="files (globs) to mutate")
    parser.add_argument("--tests", nargs="+", help="test files or directories to run")
    parser.add_argument("--workdir", type=Path, help="keep the copy here (resumes a run)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument(
        "--retest", action="store_true", help="run the undetected mutants of --workdir again"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        help="mutant names (globs), e.g. 'memtrace.replay.engine.*'",
    )
    parser.add_argument("--timeout", type=float, help="stop after this many seconds")
    parser.add_argument("--nice", type=int, default=10, help="priority increment (os.nice)")
    parser.add_argument("--json", type=Path, help="write the summary here")
    parser.add_argument("--min-score", type=float, help="exit 1 below this share detected")
    args = parser.parse_args()
    modules = tuple(args.modules or (SAMPLE_MODULES if args.sample else MODULES))
    tests = tuple(args.tests or (SAMPLE_TESTS if args.sample else TESTS))
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    if not Path(mutmut).exists():
        print("mutmut is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 1
    os.nice(args.nice)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memtrace-mutation-"))
    copy = prepare(workdir, modules, tests)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the copy, not the repo
    started = time.monotonic()
    log = workdir / "mutmut.log"
    with log.open("w", encoding="utf-8") as out:
        # a session of its own: on --timeout the run and every worker it forked stop together
        again: list[str] = []  # none named: mutmut runs every mutant not checked yet
        if args.retest or args.only:  # the undetected, or a part first (--only: one module)
            wanted = UNDETECTED if args.retest else ("not checked",)
            again = sorted(
                name
                for name, status in results(copy, mutmut).items()
                if status in wanted and any(fnmatch(name, glob) for glob in args.only or ["*"])
            )
            if not again:
                print("no mutant left to run", file=sys.stderr)
                return 1
        run = subprocess.Popen(
            [mutmut, "run", "--max-children", str(args.max_children), *again],
            cwd=copy,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            returncode: int | None = run.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGTERM)
            run.wait()
            returncode = None  # stopped: what was checked is summarized, the rest is not
    seconds = time.monotonic() - started
    if returncode:
        print(log.read_text(encoding="utf-8", errors="replace")[-3000:], file=sys.stderr)
        print(f"mutmut run failed (exit {returncode}); its output: {log}", file=sys.stderr)
        return 1
    found = Summary(results(copy, mutmut))
    for module, counts in found.by_module().items():
        print(f"{module}: {counts}")
    print("undetected:", *found.undetected, sep="\n  ")
    load = os.getloadavg()
    print(
        f"score {found.score} ({found.detected}/{found.checked} detected, "
        f"{len(found.statuses)} mutants, {found.unchecked} not checked) in {seconds:.0f} s, "
        f"load {load[0]:.1f}" + (" (stopped by --timeout)" if returncode is None else "")
    )
    if args.json:
        record = {
            **found.as_dict(),
            "modules": list(modules),
            "tests": list(tests),
            "seconds": round(seconds),
            "stopped_by_timeout": returncode is None,
            "load": load,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if not found.checked:
        print("no mutant was checked", file=sys.stderr)
        return 1
    if args.min_score is not None and (found.score or 0.0) < args.min_score:
        print(f"mutation score {found.score} < {args.min_score}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
