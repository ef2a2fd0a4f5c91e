"""`memtrace bench make`: baseline, plant faults, verify them by replay, trace, label, write."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, get_args

from memtrace.bench.labels import derived_labels, injected_labels
from memtrace.bench.plan import Candidate, Selector, candidates, system_types
from memtrace.bench.smartcomment import to_smartcomment
from memtrace.bench.verify import Verified, precheck, run, verify
from memtrace.settings import Settings
from memtrace.systems.core import Backend, Fault, QuestionResult
from memtrace.systems.locomo import Conversation
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.taxonomy import ErrorType
from memtrace.tracing import SimClock

Format = Literal["native", "smartcomment"]
FORMATS: Final[tuple[Format, ...]] = get_args(Format)
# JSON, but not named *.json: `memtrace load DIR` must find only the traces.
MANIFEST = "manifest.txt"


@dataclass(frozen=True, slots=True)
class BenchOptions:
    system: str = "mem0"
    faults: int = 10
    seed: int = 0
    backend: str = "offline"
    format: Format = "native"
    prefix: str = ""  # trace id prefix
    types: tuple[str, ...] | None = None  # fault types to plant [all the system can have]


@dataclass(slots=True)
class BenchReport:
    files: list[Path] = field(default_factory=list)
    injected: Counter[str] = field(default_factory=Counter)
    collateral: Counter[str] = field(default_factory=Counter)
    derived: Counter[str] = field(default_factory=Counter)
    dropped: int = 0
    manifest: Path | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": [p.name for p in self.files],
            "injected": dict(sorted(self.injected.items())),
            "collateral": dict(sorted(self.collateral.items())),
            "derived": dict(sorted(self.derived.items())),
            "labels": sum(self.injected.values())
            + sum(self.collateral.values())
            + sum(self.derived.values()),
            "dropped_faults": self.dropped,
        }


def select_faults(
    options: BenchOptions,
    backend: Backend,
    convs: Sequence[Conversation],
    baselines: list[dict[str, QuestionResult]],
    progress: Callable[[str], None],
) -> dict[int, Verified]:
    rng = random.Random(options.seed)
    types = system_types(options.system, options.types)
    pools: dict[ErrorType, list[Candidate]] = {t: [] for t in types}
    for i, conv in enumerate(convs):
        base = run(options.system, backend, conv, [])
        baselines.append({r.case_id: r for r in base.results})
        for kind, found in candidates(options.system, i, conv, base, rng).items():
            if kind in pools:
                pools[kind].extend(found)
    for pool in pools.values():
        rng.shuffle(pool)
    selector = Selector(pools, options.faults)
    chosen: dict[int, list[Fault]] = defaultdict(list)
    verified: dict[int, Verified] = {}
    while True:  # top up the types whose faults did not survive verification
        have = Counter(f.type for v in verified.values() for f in v.faults)
        changed = set()
        for kind in types:
            need = selector.quota[kind] - have[kind]
            while need > 0 and (c := selector.next(kind)) is not None:
                if precheck(options.system, backend, convs[c.conv], c.fault):
                    c = selector.take(c)
                    chosen[c.conv].append(c.fault)
                    changed.add(c.conv)
                    need -= 1
        if not changed:
            return verified
        for i in sorted(changed):
            progress(f"verifying {len(chosen[i])} faults in conversation {convs[i].number}")
            verified[i] = verify(options.system, backend, convs[i], chosen[i], baselines[i])
            chosen[i] = list(verified[i].faults)


def make_bench(
    convs: Sequence[Conversation],
    out: Path,
    options: BenchOptions,
    progress: Callable[[str], None] = lambda _: None,
    settings: Settings | None = None,
) -> BenchReport:
    """``settings`` are needed by backends that call an endpoint (``openai``)."""
    types = system_types(options.system, options.types)  # a bad type fails before any work
    backend = make_backend(options.backend, settings)
    baselines: list[dict[str, QuestionResult]] = []
    verified = select_faults(options, backend, convs, baselines, progress)
    report = BenchReport()
    out.mkdir(parents=True, exist_ok=True)
    for i, conv in enumerate(convs):
        faults = verified.get(i, Verified([])).faults
        progress(f"tracing conversation {conv.number} with {len(faults)} faults")
        system = make_system(options.system, backend, faults=faults)
        meta = {"bench": {"seed": options.seed, "faults": len(faults)}}
        traced, path = run_conversation(
            system, conv, out, prefix=options.prefix, clock=SimClock(), metadata=meta
        )
        assert path is not None
        results = {r.case_id: r for r in traced.results}
        labels, dropped = injected_labels(
            verified.get(i, Verified([])), results, traced.applied, options.system
        )
        report.dropped += len(dropped)
        for lab in labels.values():
            kind = "collateral" if lab["metadata"]["collateral"] else "injected"
            getattr(report, kind)[lab["error_type"]] += 1
        natural = derived_labels(results, baselines[i], set(labels), options.system)
        report.derived.update(lab["error_type"] for lab in natural.values())
        write_labels(path, {**labels, **natural})
        if options.format == "smartcomment":
            target = path.with_suffix(".json")
            target.write_text(to_smartcomment(path), encoding="utf-8")
            path.unlink()
            path = target
        report.files.append(path)
    report.manifest = out / MANIFEST
    manifest = {
        "system": options.system,
        "seed": options.seed,
        "requested_faults": options.faults,
        "fault_types": list(types),
        "backend": options.backend,
        "format": options.format,
        **report.as_dict(),
    }
    report.manifest.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return report


def write_labels(path: Path, labels: dict[str, dict[str, Any]]) -> None:
    """Add ``labels`` to the case records of a finished trace (rewritten atomically)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "case" and record["id"] in labels:
            record["labels"] = [labels[record["id"]]]
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        lines.append(line)
    staged = path.with_suffix(".tmp")
    staged.write_text("\n".join(lines) + "\n", encoding="utf-8")
    staged.replace(path)
