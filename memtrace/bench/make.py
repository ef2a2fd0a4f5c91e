"""`memtrace bench make`: baseline, plant faults, verify them by replay, trace, label, write."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memtrace.bench.labels import derived_labels, injected_labels
from memtrace.bench.plan import FaultSite, Selector, candidates, system_types
from memtrace.bench.verify import Verified, precheck, run, verify
from memtrace.loaders.formats import FORMATS as TRACE_FORMATS
from memtrace.loaders.formats import WRITTEN_FORMATS, Format
from memtrace.settings import Settings
from memtrace.systems.core import Backend, Fault, QuestionResult
from memtrace.systems.locomo import Conversation
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.taxonomy import ErrorType
from memtrace.tracing import SimClock

FORMATS: Final[tuple[Format, ...]] = WRITTEN_FORMATS
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
    selection: Selection | None = None

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
            **(self.selection.as_dict() if self.selection else {}),
        }


@dataclass(slots=True)
class Selection:
    """Per fault type: how many were asked for, the candidates found, how many of those the
    pre-check or the verifying run rejected, and how many were planted."""

    asked: dict[str, int] = field(default_factory=dict)
    candidates: Counter[str] = field(default_factory=Counter)
    rejected_precheck: Counter[str] = field(default_factory=Counter)
    rejected_verify: Counter[str] = field(default_factory=Counter)
    planted: Counter[str] = field(default_factory=Counter)

    def shortfalls(self) -> dict[str, str]:
        """Why each type got fewer faults than asked for."""
        reasons = {}
        for kind, asked in self.asked.items():
            planted = self.planted[kind]
            if planted >= asked:
                continue
            reasons[kind] = (
                f"asked {asked}, planted {planted}: the conversations offered "
                f"{self.candidates[kind]} candidates; {self.rejected_precheck[kind]} failed the "
                f"pre-check, {self.rejected_verify[kind]} did not change the answer when run, "
                "the rest overlapped a fault already chosen (one per question / evidence)"
            )
        return reasons

    def as_dict(self) -> dict[str, Any]:
        return {
            "asked": dict(sorted(self.asked.items())),
            "planted": {kind: self.planted[kind] for kind in sorted(self.asked)},
            "shortfalls": self.shortfalls(),
        }


def select_faults(
    options: BenchOptions,
    backend: Backend,
    convs: Sequence[Conversation],
    baselines: list[dict[str, QuestionResult]],
    progress: Callable[[str], None],
    selection: Selection | None = None,
) -> dict[int, Verified]:
    stats = selection if selection is not None else Selection()
    rng = random.Random(options.seed)
    types = system_types(options.system, options.types)
    pools: dict[ErrorType, list[FaultSite]] = {t: [] for t in types}
    for i, conv in enumerate(convs):
        base = run(options.system, backend, conv, [])
        baselines.append({r.case_id: r for r in base.results})
        for kind, found in candidates(options.system, i, conv, base, rng).items():
            if kind in pools:
                pools[kind].extend(found)
    for kind, pool in pools.items():
        rng.shuffle(pool)
        stats.candidates[kind] = len(pool)
    selector = Selector(pools, options.faults)
    stats.asked = {str(kind): n for kind, n in selector.quota.items()}
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
                else:
                    stats.rejected_precheck[kind] += 1
        if not changed:
            stats.planted = Counter(f.type for v in verified.values() for f in v.faults)
            return verified
        for i in sorted(changed):
            progress(f"verifying {len(chosen[i])} faults in conversation {convs[i].number}")
            verified[i] = verify(options.system, backend, convs[i], chosen[i], baselines[i])
            kept = Counter(f.type for f in verified[i].faults)
            stats.rejected_verify.update(Counter(f.type for f in chosen[i]) - kept)
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
    selection = Selection()
    verified = select_faults(options, backend, convs, baselines, progress, selection)
    report = BenchReport(selection=selection)
    out.mkdir(parents=True, exist_ok=True)
    for i, conv in enumerate(convs):
        faults = verified.get(i, Verified([])).faults
        progress(f"tracing conversation {conv.number} with {len(faults)} faults")
        system = make_system(options.system, backend, faults=faults)
        # the planted faults are part of how the system ran: a replay plants them again
        planted = [
            {"id": f.id, "type": f.type, "target": f.target, "anchor": f.anchor,
             "sources": sorted(f.sources)}
            for f in faults
        ]  # fmt: skip
        meta = {"bench": {"seed": options.seed, "faults": len(faults), "planted": planted}}
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
        if options.format != "native":  # traced natively, then written in the format asked for
            write = TRACE_FORMATS[options.format].write
            assert write is not None  # BenchOptions.format is one of WRITTEN_FORMATS
            target = path.with_suffix(".json")
            target.write_text(write(path), encoding="utf-8")
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
