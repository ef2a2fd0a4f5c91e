"""Route failure classes to what an optimizer may change: pure, a DataFrame in, a Routing out.

A class's targets are the prompt and parameter variables its blamed operation read (the
``prompts`` / ``parameters`` columns of ``memtrace.patterns.failure_classes``) and the knobs the
system declares that operation reads (``readers``: op name -> knob names, from a system
plugin's ``read_by``), restricted to what the optimizer in use can move: parameters with a
search range, prompts an LLM may rewrite.
Everything else is reported as unoptimizable, with the reason.

Routed by **headroom** (``route(..., headroom=...)``, the executed what-if of
``memtrace.patterns.headroom``), classes are ordered by what repairing them buys (net cases
rescued) instead of how many cases they hold, and a class whose repair rescues nothing (or
could not be replayed) gets no target: no trials go to it, and ``why_not`` says why.

A **stale-memory** class (an old and a newer memory both reached the answer; blamed on the
extraction of the newer message) is routed by what its replay shows (``stale``: the executed
what-if of these classes): when repairing the extraction rescues none of its cases, the answer
had what it needed and followed the old memory, so the class goes to the answer prompt; when
it rescues some, to what the extraction reads (its instructions).
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from memtrace.patterns.classes import class_key
from memtrace.systems.params import RANGES
from memtrace.systems.prompts import TUNABLE_PROMPTS

Mode = Literal["parameters", "prompts"]
RouteBy = Literal["cases", "headroom"]
SearchRepair = Literal["same-size", "precise"]
MODE_BY_NAME: dict[str, Mode] = {"parameters": "parameters", "prompts": "prompts"}


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
    headroom: int | None = None  # net cases a repair of the class rescues (routed by headroom)
    rescued: int | None = None
    broken: int | None = None
    headroom_why: str = ""
    failure_mode: str = ""
    rerouted: str = ""  # why the targets are not what the blamed operation read

    @property
    def key(self) -> str:
        return f"{self.system}/{self.op_name}/{self.error_type}"


@dataclass(frozen=True, slots=True)
class Routing:
    mode: Mode
    classes: tuple[RoutedClass, ...]  # most cases first (by headroom: largest headroom first)
    by: RouteBy = "cases"

    @property
    def optimizable(self) -> tuple[RoutedClass, ...]:
        return tuple(c for c in self.classes if c.targets)

    @property
    def unoptimizable(self) -> tuple[RoutedClass, ...]:
        return tuple(c for c in self.classes if not c.targets)

    def share(self, cls: RoutedClass) -> float:
        """The class's share of the failures, or (by headroom) of the total positive headroom."""
        if self.by == "cases":
            return cls.share_of_failures
        total = sum(c.headroom or 0 for c in self.optimizable)
        return (cls.headroom or 0) / total if total else 0.0

    def targets(self, largest: int | None = None, min_share: float = 0.0) -> tuple[str, ...]:
        """The targets of the ``largest`` optimizable classes (all by default) holding at
        least ``min_share`` of the failures (by headroom: of the headroom), in the order of
        the classes that name them."""
        out: list[str] = []
        major = [c for c in self.optimizable if self.share(c) >= min_share]
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
    headroom: pd.DataFrame | None = None,
    answer_prompts: Collection[str] = (),
    stale: pd.DataFrame | None = None,
    readers: Mapping[str, Collection[str]] | None = None,
) -> Routing:
    """``classes``: rows with the failure_classes columns (system, op_name, error_type,
    failure_mode, inputs, prompts, parameters, cases, share_of_failures, case_ids).
    ``headroom``: rows of ``memtrace.patterns.headroom.what_if`` (key, replayable, net, rescued,
    broken, why) to route by headroom; a class missing from it has no known headroom and gets no
    target. ``stale``: such rows of the stale-memory classes (routed by cases too), which go to
    ``answer_prompts`` (the prompts the system's answer reads) when their repair rescues none.
    ``readers``: op name -> the knobs the system declares it reads (beside what the trace
    recorded it reading)."""
    movable = set(parameters if mode == "parameters" else prompts)
    measured = (
        {str(r["key"]): r for r in headroom.to_dict("records")} if headroom is not None else {}
    )
    replayed = {str(r["key"]): r for r in stale.to_dict("records")} if stale is not None else {}
    routed = []
    for row in classes.to_dict("records"):
        read = list(row["parameters"] if mode == "parameters" else row["prompts"])
        declared = (readers or {}).get(str(row["op_name"]), ())
        read += [name for name in declared if name not in read]
        read_prompts = read if mode == "prompts" else list(row["prompts"])
        read_parameters = read if mode == "parameters" else list(row["parameters"])
        targets = tuple(name for name in read if name in movable)
        why_not = "" if targets else _why_not(mode, read_prompts, read_parameters)
        what_if = measured.get(class_key(row), {})
        net = _int(what_if.get("net"))
        rerouted = ""
        shown = replayed.get(class_key(row), {})
        stale_class = row.get("failure_mode") == "stale-memory" and mode == "prompts"
        if stale_class and _int(shown.get("rescued")) == 0:
            targets = tuple(name for name in answer_prompts if name in movable)
            why_not = "" if targets else "the answer's prompt may not be rewritten"
            rerouted = (
                "the replay: repairing the extraction rescues none of its cases (both "
                "memories reached the answer), so the answer prompt decides"
            )
        if headroom is not None and targets and not rerouted and (net is None or net <= 0):
            why_not = _no_headroom(net, _text(what_if.get("why")))
            targets = ()
        routed.append(
            RoutedClass(
                system=str(row["system"]),
                op_name=str(row["op_name"]),
                error_type=str(row["error_type"]),
                cases=int(row["cases"]),
                share_of_failures=float(row["share_of_failures"]),
                case_ids=tuple(map(str, row["case_ids"])),
                targets=targets,
                why_not=why_not,
                headroom=net,
                rescued=_int(what_if.get("rescued")),
                broken=_int(what_if.get("broken")),
                headroom_why=_text(what_if.get("why")),
                failure_mode=str(row.get("failure_mode") or ""),
                rerouted=rerouted,
            )
        )
    if headroom is None:
        return Routing(mode, tuple(routed))
    ordered = sorted(routed, key=lambda c: (-(-1 if c.headroom is None else c.headroom), -c.cases))
    return Routing(mode, tuple(ordered), by="headroom")


def _int(value: object) -> int | None:
    """A count from a DataFrame cell; None for a missing one (NaN, None)."""
    return int(float(value)) if isinstance(value, numbers.Real) and value == value else None


def _text(value: object) -> str:
    """A text from a DataFrame cell; "" for a missing one (NaN, None), never "nan"."""
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def _no_headroom(net: int | None, why: str) -> str:
    if net is None:
        return f"no trials: its headroom is unknown ({why or 'not measured'})"
    return f"no trials: no headroom (net {net:+d} cases{'; ' + why if why else ''})"


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
