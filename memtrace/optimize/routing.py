"""Route failure classes to what an optimizer may change: pure, a DataFrame in, a Routing out.

A class's targets are the prompt and parameter variables its blamed operation read (the
``prompts`` / ``parameters`` columns of ``memtrace.patterns.failure_classes``), restricted to
what the optimizer in use can move: parameters with a search range, prompts an LLM may rewrite.
Everything else is reported as unoptimizable, with the reason.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from memtrace.systems.params import RANGES
from memtrace.systems.prompts import FACT_EXTRACTION, QUESTION_ANSWERING, UPDATE_DECISION

Mode = Literal["parameters", "prompts"]
MODE_BY_NAME: dict[str, Mode] = {"parameters": "parameters", "prompts": "prompts"}
# The judge's prompt and threshold are never targets: loosening the judge "improves" accuracy.
TUNABLE_PROMPTS = (FACT_EXTRACTION, UPDATE_DECISION, QUESTION_ANSWERING)


@dataclass(frozen=True, slots=True)
class RoutedClass:
    system: str
    op_name: str
    error_type: str
    cases: int
    share_of_failures: float
    case_ids: tuple[str, ...]
    targets: tuple[str, ...]  # prompt or parameter names this optimizer may change
    why_not: str = ""  # when there is no target

    @property
    def key(self) -> str:
        return f"{self.system}/{self.op_name}/{self.error_type}"


@dataclass(frozen=True, slots=True)
class Routing:
    mode: Mode
    classes: tuple[RoutedClass, ...]  # most cases first, as the patterns API sorts them

    @property
    def optimizable(self) -> tuple[RoutedClass, ...]:
        return tuple(c for c in self.classes if c.targets)

    @property
    def unoptimizable(self) -> tuple[RoutedClass, ...]:
        return tuple(c for c in self.classes if not c.targets)

    def targets(self, largest: int | None = None, min_share: float = 0.0) -> tuple[str, ...]:
        """The targets of the ``largest`` optimizable classes (all by default) holding at
        least ``min_share`` of the failures, in the order of the classes that name them."""
        out: list[str] = []
        major = [c for c in self.optimizable if c.share_of_failures >= min_share]
        for cls in major[:largest]:
            out.extend(t for t in cls.targets if t not in out)
        return tuple(out)

    def motivating(self, target: str) -> tuple[RoutedClass, ...]:
        return tuple(c for c in self.optimizable if target in c.targets)


def route(
    classes: pd.DataFrame,
    mode: Mode,
    *,
    parameters: Collection[str] = tuple(RANGES),
    prompts: Collection[str] = TUNABLE_PROMPTS,
) -> Routing:
    """``classes``: rows with the failure_classes columns (system, op_name, error_type, prompts,
    parameters, cases, share_of_failures, case_ids)."""
    movable = set(parameters if mode == "parameters" else prompts)
    routed = []
    for row in classes.to_dict("records"):
        read = list(row["parameters"] if mode == "parameters" else row["prompts"])
        targets = tuple(name for name in read if name in movable)
        routed.append(
            RoutedClass(
                system=str(row["system"]),
                op_name=str(row["op_name"]),
                error_type=str(row["error_type"]),
                cases=int(row["cases"]),
                share_of_failures=float(row["share_of_failures"]),
                case_ids=tuple(map(str, row["case_ids"])),
                targets=targets,
                why_not="" if targets else _why_not(mode, row["prompts"], row["parameters"]),
            )
        )
    return Routing(mode, tuple(routed))


def _why_not(mode: Mode, prompts: Collection[str], parameters: Collection[str]) -> str:
    read = list(parameters if mode == "parameters" else prompts)
    if not prompts and not parameters:
        return "the blamed operation reads no prompt or parameter"
    if not read:
        other = "prompt" if mode == "parameters" else "parameter"
        return f"the blamed operation reads only {other}s; run the {other} mode"
    if mode == "parameters":
        return f"no search range for {', '.join(read)} (the judge and the retriever stay fixed)"
    return f"{', '.join(read)} may not be rewritten (the judge's prompt stays fixed)"
