"""The system plugin of the optimizer: what ``memtrace optimize`` needs from a memory system.

A system says which **knobs** it has (``PromptKnob``: a prompt text by name; ``ParameterKnob``:
a number with its type, the type of its default, and its search range), each tied to the traced
operations that read it (``read_by``; a knob the trace records as a prompt or parameter
variable read by an operation is found from the trace too), and **runs** itself with a candidate
``Configuration`` on some of its own evaluation units (case or conversation ids, in its own
data format), judging each case and, when asked, writing memtrace traces. memtrace splits the
ids it lists (``--train``, ``--heldout``, ``--test``) and writes the accepted configuration
through the system's own ``write_config``, in the format its code reads back.

memtrace finds a system by name: its reference systems (``memtrace.optimize.reference``), a
factory ``(settings) -> OptimizableSystem`` registered in the entry point group
``memtrace.systems`` under that name, or one named on the command line (``--system
module:attr``):

    [project.entry-points."memtrace.systems"]
    chatmem = "chatmem.optimize:make_system"
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Final, Protocol

from memtrace.errors import ConfigError
from memtrace.settings import Settings

ENTRY_POINT_GROUP: Final = "memtrace.systems"
_PLACEHOLDER = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")


@dataclass(frozen=True, slots=True)
class PromptKnob:
    """A prompt text the system reads by ``name``; ``inputs``: the ``{placeholders}`` a new
    text must keep; ``tunable``: an optimizer may rewrite it (a judge's prompt may not)."""

    name: str
    text: str
    read_by: tuple[str, ...] = ()  # the operations (op names) that read it
    inputs: tuple[str, ...] = ()
    tunable: bool = True


@dataclass(frozen=True, slots=True)
class ParameterKnob:
    """A number the system reads; its type is its default's (int or float); ``low``/``high``:
    where an optimizer may move it (None: it stays fixed)."""

    name: str
    default: int | float
    low: float | None = None
    high: float | None = None
    read_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.default, bool) or not isinstance(self.default, int | float):
            raise ConfigError(f"parameter {self.name!r}: the default must be an int or a float")
        if (self.low is None) != (self.high is None):
            raise ConfigError(f"parameter {self.name!r}: give both low and high, or neither")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ConfigError(f"parameter {self.name!r}: low {self.low} > high {self.high}")

    @property
    def integer(self) -> bool:
        return isinstance(self.default, int)

    @property
    def searchable(self) -> bool:
        return self.low is not None


Knob = PromptKnob | ParameterKnob


@dataclass(frozen=True)
class Knobs:
    """A system's knobs by name, and what the optimizer derives from them."""

    prompts: Mapping[str, PromptKnob]
    parameters: Mapping[str, ParameterKnob]
    answer_op: str = ""  # the operation that answers

    @classmethod
    def of(cls, knobs: Iterable[Knob], answer_op: str = "") -> Knobs:
        prompts: dict[str, PromptKnob] = {}
        parameters: dict[str, ParameterKnob] = {}
        for knob in knobs:
            if knob.name in prompts or knob.name in parameters:
                raise ConfigError(f"the system declares the knob {knob.name!r} twice")
            if isinstance(knob, PromptKnob):
                prompts[knob.name] = knob
            else:
                parameters[knob.name] = knob
        return cls(prompts, parameters, answer_op)

    def movable(self, mode: str) -> tuple[str, ...]:
        """What an optimizer of ``mode`` may change: searchable parameters or tunable prompts."""
        if mode == "prompts":
            return tuple(n for n, k in self.prompts.items() if k.tunable)
        return tuple(n for n, k in self.parameters.items() if k.searchable)

    def read_by(self, op_name: str, mode: str) -> tuple[str, ...]:
        """The movable knobs the system declares ``op_name`` reads."""
        declared = self.prompts if mode == "prompts" else self.parameters
        return tuple(n for n in self.movable(mode) if op_name in declared[n].read_by)

    def answer(self, mode: str) -> tuple[str, ...]:
        """The movable knobs the answer step reads (where answer-only routing sends all)."""
        return self.read_by(self.answer_op, mode)

    def readers(self, mode: str) -> dict[str, tuple[str, ...]]:
        """Op name -> the movable knobs declared read by it."""
        declared = self.prompts if mode == "prompts" else self.parameters
        ops = {op for n in self.movable(mode) for op in declared[n].read_by}
        return {op: self.read_by(op, mode) for op in sorted(ops)}

    def defaults(self) -> Configuration:
        return Configuration(
            {n: k.text for n, k in self.prompts.items()},
            {n: k.default for n, k in self.parameters.items()},
            self,
        )


@dataclass(frozen=True)
class Configuration:
    """A candidate: every prompt text and parameter value of a system, as plain data. Compares,
    diffs and hashes like its values; a change is checked against the knobs (type, range,
    placeholders)."""

    prompts: Mapping[str, str]
    params: Mapping[str, int | float]
    knobs: Knobs = field(compare=False, repr=False)

    def values(self) -> dict[str, Any]:
        """``prompt:<name>`` -> text and ``parameter:<name>`` -> value, the trace's names."""
        out: dict[str, Any] = {f"prompt:{n}": t for n, t in sorted(self.prompts.items())}
        return out | {f"parameter:{n}": v for n, v in self.params.items()}

    def diff(self, other: Configuration) -> dict[str, tuple[Any, Any]]:
        """What ``other`` changes: name -> (this value, other's value)."""
        mine, theirs = self.values(), other.values()
        return {k: (mine.get(k), theirs.get(k)) for k in theirs if mine.get(k) != theirs[k]}

    def text(self, name: str) -> str:
        return self.prompts[name]

    def with_params(self, **values: int | float) -> Configuration:
        params = dict(self.params)
        for name, value in values.items():
            knob = self.knobs.parameters.get(name)
            if knob is None:
                raise ConfigError(f"unknown parameter {name!r} (known: {', '.join(self.params)})")
            if knob.integer and (not isinstance(value, int) or isinstance(value, bool)):
                raise ConfigError(f"parameter {name!r} is an integer, got {value!r}")
            params[name] = value
        return replace(self, params=params)

    def with_prompts(self, texts: Mapping[str, str]) -> Configuration:
        prompts = dict(self.prompts)
        for name, text in texts.items():
            knob = self.knobs.prompts.get(name)
            if knob is None:
                raise ConfigError(f"unknown prompt {name!r} (known: {', '.join(self.prompts)})")
            missing = sorted(set(knob.inputs) - set(_PLACEHOLDER.findall(text)))
            if missing:
                raise ConfigError(f"prompt {name!r} must keep {{{'}, {'.join(missing)}}}")
            prompts[name] = text
        return replace(self, prompts=prompts)

    def key(self) -> str:
        """A stable text identity (cache and resume key)."""
        return hashlib.sha256(json.dumps(self.values(), sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One evaluation case judged: the unit (case or conversation id) it belongs to, and, when
    traced, the trace that holds it."""

    case_id: str
    unit: str
    passed: bool
    prediction: str = ""
    question: str = ""
    expected: str = ""
    trace_id: str = ""


@dataclass(frozen=True, slots=True)
class Tracing:
    """Where a traced run writes its files, and the prefix every trace id starts with (so two
    configurations' traces of the same unit never share an id in the graph)."""

    directory: Path
    prefix: str


@dataclass
class SystemRun:
    results: list[CaseResult]
    traces: dict[str, Path] = field(default_factory=dict)  # trace id -> native trace file


class OptimizableSystem(Protocol):
    """A memory system as the optimizer drives it (docs/optimize.md, "Your own system")."""

    @property
    def name(self) -> str:
        """The system name its traces carry (``trace(..., system=NAME)``)."""
        ...

    @property
    def answer_op(self) -> str:
        """The operation that answers (``--baseline answer-only`` routes every failure to the
        knobs it reads)."""
        ...

    def knobs(self) -> Sequence[Knob]: ...

    def case_ids(self) -> Sequence[str]:
        """The units of its evaluation data memtrace may split (case or conversation ids)."""
        ...

    def run(
        self,
        config: Configuration,
        ids: Sequence[str],
        *,
        tracing: Tracing | None = None,
        only: Collection[str] | None = None,
    ) -> SystemRun:
        """Run with ``config`` on the units ``ids`` and judge every case (only the case ids in
        ``only`` if given); traced into ``tracing.directory`` when given."""
        ...

    def write_config(self, config: Configuration, directory: Path) -> list[Path]:
        """``config`` in the files the system's own code reads; the paths written."""
        ...


SystemFactory = Callable[[Settings], OptimizableSystem]


def load_spec(spec: str) -> SystemFactory:
    """The factory ``module:attr`` names (ConfigError, one line, when it cannot be loaded)."""
    from memtrace.replay.plugins import load_callable

    factory: SystemFactory = load_callable(spec, "--system", "mysystem.optimize:make_system")
    return factory


def registered(name: str) -> SystemFactory | None:
    """The factory an installed package registered as ``name`` (None when none did)."""
    point = next(iter(metadata.entry_points(group=ENTRY_POINT_GROUP, name=name)), None)
    if point is None:
        return None
    try:
        factory: SystemFactory = point.load()
    except Exception as exc:  # an installed plugin that fails to import: say which
        raise ConfigError(
            f"the system registered as {name!r} ({point.value}, entry point group "
            f"{ENTRY_POINT_GROUP}) cannot be loaded: {exc}"
        ) from None
    return factory


def make_plugin(factory: SystemFactory, settings: Settings, where: str) -> OptimizableSystem:
    """The user's factory called; what it returns checked for the interface's methods."""
    try:
        system = factory(settings)
    except ConfigError:
        raise
    except Exception as exc:  # the user's code: its failure is this system's refusal
        raise ConfigError(f"{where}: the system factory failed: {exc!r}") from exc
    missing = [
        n
        for n in ("name", "answer_op", "knobs", "case_ids", "run", "write_config")
        if not hasattr(system, n)
    ]
    if missing:
        raise ConfigError(f"{where}: the system has no {', '.join(missing)} (docs/optimize.md)")
    return system


def read_in_traces(paths: Iterable[Path], op_name: str, category: str) -> set[str]:
    """The names of the ``category`` variables (``prompt``, ``parameter``) that operations
    named ``op_name`` read in these native trace files: the knobs a trace shows an op reads."""
    names: dict[str, str] = {}
    reads: set[str] = set()
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("type") == "variable" and record.get("category") == category:
                names[str(record["id"])] = str(record["name"])
            elif record.get("type") == "operation" and record.get("name") == op_name:
                reads.update(map(str, record.get("reads") or ()))
    return {names[i] for i in reads if i in names}


def knobs_of(system: OptimizableSystem) -> Knobs:
    return Knobs.of(system.knobs(), system.answer_op)


def check_ids(system: OptimizableSystem, splits: Mapping[str, Sequence[str]]) -> None:
    """Every id is one the system lists, and no id is in two splits."""
    known = set(system.case_ids())
    seen: dict[str, str] = {}
    for split, ids in splits.items():
        unknown = [i for i in ids if i not in known]
        if unknown:
            shown = ", ".join(sorted(known)[:10]) + (" ..." if len(known) > 10 else "")
            raise ConfigError(
                f"--{split}: {', '.join(unknown)} not among the system's ids ({shown})"
            )
        for one in ids:
            if one in seen:
                raise ConfigError(f"{one} is in both {seen[one]} and {split}")
            seen[one] = split
