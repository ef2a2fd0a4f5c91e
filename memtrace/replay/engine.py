"""The replay engine: re-run one traced conversation of a reference system, with chosen
operations repaired for one case.

Op ids are deterministic (the tracer numbers operations in execution order), so the engine
first re-runs the conversation once, traced into a temporary file, to learn which logical step
(``System.step``: ``extract:D1:3``, ``search:locomo-qa-1-5``, ...) each op id of the original
trace is; it refuses a trace whose re-run does not number the same operations. A repaired run
is then addressed by steps: a repair that adds an operation shifts later op ids, not steps.

Shared work is cached: the memory built without repairs (and with each set of construction
repairs for one case's evidence) is built once, and every question is asked of a copy. A system
without snapshots (``System.replay_snapshots``: mem0-lib, whose memory is in Mem0's store) builds
each repaired memory from the first session, and the step-mapping run is its unrepaired one.
Replays are never traced: the original trace is read, never written.
"""

from __future__ import annotations

import copy
import json
import tempfile
import threading
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from memtrace.errors import NotReplayableError
from memtrace.patterns.headroom import UNSUPPORTED, ReplayedAnswer
from memtrace.replay.inputs import Signature, TraceInputs, signature
from memtrace.settings import Settings
from memtrace.systems.base import System, session_date
from memtrace.systems.core import Backend, QuestionResult, Repaired, RepairPlan
from memtrace.systems.evidence import evidence
from memtrace.systems.judge import parse_label
from memtrace.systems.prompts import DEFAULTS, JUDGE
from memtrace.systems.rankers import Ranker
from memtrace.systems.registry import SYSTEMS, make_backend, make_ranker, make_system
from memtrace.taxonomy import ERROR_TYPES
from memtrace.tracing import SimClock, trace

BuildKey = tuple[frozenset[str], frozenset[str]]  # (repaired construction steps, sources)


def still_lost_at(result: QuestionResult) -> str | None:
    """What still stands between a wrong answer and its evidence: the earliest error type of
    the evidence sentences missing from the context, ResponseError when all of it was there,
    UNSUPPORTED when the case's evidence does not hold its gold answer (no sentence to follow),
    None when the trail is lost."""
    if result.passed:
        return None
    if not result.keys:
        return UNSUPPORTED
    lost = [loss.type for loss in result.missing.values() if loss is not None]
    if not result.missing:
        return "ResponseError"
    if not lost:
        return None
    counts = Counter(lost)
    return min(counts, key=lambda t: (-counts[t], ERROR_TYPES.index(t)))


@dataclass(frozen=True, slots=True)
class CaseReplay:
    """One case answered again: judged correct or not, the answer, what the repairs changed
    (op ids are the original trace's), and whether the evidence the gold answer needs reached
    the answer's context (None when the case's evidence does not hold its gold answer)."""

    case_id: str
    passed: bool
    prediction: str
    repaired: tuple[Repaired, ...] = ()
    context: bool | None = None


class TraceReplayer:
    """Replays the cases of one trace. ``replay(case_id, op_ids)`` answers ``case_id`` again
    with the operations ``op_ids`` (of the original trace) repaired for that case; every other
    operation runs as it did. ``replays`` counts the calls that ran the system."""

    def __init__(
        self,
        inputs: TraceInputs,
        backend: Backend,
        ranker: Ranker | None = None,
        settings: Settings | None = None,
    ):
        """``settings``: for a system that calls an endpoint itself (mem0-lib)."""
        self.inputs = inputs
        self.backend = backend
        self.ranker = ranker
        self.settings = settings
        self.replays = 0
        conv = inputs.conversation
        self._questions = {f"locomo-qa-{conv.number}-{q.number}": q for q in conv.questions}
        dates = {t.dia_id: session_date(s.date_time) for s in conv.sessions for t in s.turns}
        turns = conv.turns()
        self._sources = {
            case_id: frozenset(evidence(q, turns, dates).keys)
            for case_id, q in self._questions.items()
        }
        self._steps: dict[str, str] | None = None  # original op id -> step key
        self._session_of: dict[str, int] = {}  # construction step key -> its session index
        self._snapshots: dict[int, System] = {}  # the unrepaired system before session i
        self._built: dict[BuildKey, System] = {}
        self._rebuilt = False  # repaired memories are built from the first session
        # Replays of several cases run at once (``attribute --workers``): the caches are shared,
        # so each memory is built once (one lock per memory being built) and the step map once;
        # the replays themselves ask their own copies and never wait for each other.
        self._lock = threading.Lock()  # the caches and the counter
        self._steps_lock = threading.Lock()
        self._building: dict[BuildKey, threading.Lock] = {}

    # -- the op id <-> step map -----------------------------------------------------------
    def steps(self) -> Mapping[str, str]:
        """Original op id -> step key, from one traced re-run (checked against the trace)."""
        if self._steps is None:
            with self._steps_lock:
                if self._steps is None:
                    self._steps = self._map_steps()
        return self._steps

    def _map_steps(self) -> dict[str, str]:
        system = self._system(None)
        starts: list[int] = []  # steps recorded before each session

        def mark(index: int, running: System) -> None:
            starts.append(len(running.run_state.steps))

        with tempfile.TemporaryDirectory(prefix="memtrace-replay-") as folder:
            path = Path(folder) / "replay.jsonl"
            with trace(path, self.inputs.trace_id, system=system.name, clock=SimClock()):
                system.construct(self.inputs.conversation, checkpoint=mark)
                construction = list(system.run_state.steps.values())
                system.ask_questions(self.inputs.conversation)
            names = _operation_names(path)
        self._rebuilt = not system.replay_snapshots
        if self._rebuilt:  # no snapshots (rebuilt per replay): this run is the unrepaired memory
            with self._lock:
                self._built[(frozenset(), frozenset())] = system
        bounds = [*starts, len(construction)]
        self._session_of = {
            step: index
            for index in range(len(starts))
            for step in construction[bounds[index] : bounds[index + 1]]
        }
        original = self.inputs.operations
        if original and names != dict(original):
            differing = next(
                (op for op in original if names.get(op) != original[op]), next(iter(original))
            )
            raise NotReplayableError(
                f"trace {self.inputs.trace_id!r} does not reproduce: re-running "
                f"{self.inputs.system} numbers its operations differently (first at "
                f"{differing}: {original[differing]!r} in the trace, {names.get(differing)!r} "
                "now); was it made by another memtrace version or with other settings?"
            )
        return dict(system.run_state.steps)

    def downstream(self, op_id: str) -> tuple[str, ...]:
        """The construction ops traced after ``op_id``, in execution order: what an ideal
        downstream repairs along with it. Each repair restores only what the case's evidence
        needs, so an op that would lose none of it runs unchanged; without them a later step
        can lose again what the repair restored (a long-context window update trims the line
        the repaired update kept, and the attribution candidates do not hold that update: it
        never saw the line)."""
        self.step_of(op_id)
        ops = list(self.steps())
        later = ops[ops.index(op_id) + 1 :]
        return tuple(op for op in later if self.steps()[op] in self._session_of)

    def step_of(self, op_id: str) -> str:
        step = self.steps().get(op_id)
        if step is None:
            raise NotReplayableError(
                f"operation {op_id!r} is not a step of trace {self.inputs.trace_id!r}"
            )
        return step

    # -- replays ---------------------------------------------------------------------------
    def replay(self, case_id: str, repaired: Collection[str] = ()) -> CaseReplay:
        """``case_id`` answered again with the operations ``repaired`` (op ids) repaired."""
        question = self._questions.get(case_id)
        if question is None:
            raise NotReplayableError(f"no case {case_id!r} in trace {self.inputs.trace_id!r}")
        steps = frozenset(self.step_of(op) for op in repaired)
        sources = self._sources[case_id]
        built = self._build(frozenset(s for s in steps if s in self._session_of), sources)
        system = copy.copy(built)  # the memory is shared read-only; only the repair differs
        system.repair = RepairPlan(steps, sources) if steps else None
        system.run_state = copy.copy(built.run_state)
        system.run_state.results = []
        system.run_state.repaired = list(built.run_state.repaired)
        with self._lock:
            self.replays += 1
        (result,) = system.ask_questions(self.inputs.conversation, {case_id})
        by_step = {step: op for op, step in self.steps().items()}
        changes = tuple(
            Repaired(r.step, by_step.get(r.step, ""), r.detail, r.error_type)
            for r in system.run_state.repaired
        )
        reached = not result.missing if result.keys else None
        return CaseReplay(case_id, result.passed, result.prediction, changes, reached)

    # -- class what-ifs: the repairs of many cases at once ---------------------------------
    def recorded(self) -> Mapping[str, bool]:
        """Case id -> judged correct in the original run (read from the trace)."""
        return {c: r.passed for c, r in self.inputs.cases.items()}

    def _answers(self, op_id: str) -> bool:
        """``op_id`` is the system's answer operation (no repair replays it)."""
        signature = self.inputs.operations.get(op_id)
        return signature is not None and signature[0] == SYSTEMS[self.inputs.system].answer_op

    def joint_cost(self, repaired: Mapping[str, Collection[str]]) -> int:
        """System runs ``replay_jointly(repaired)`` makes: the conversation, unless only answer
        steps are repaired, and first the one traced re-run that maps op ids to steps."""
        rerun = any(not self._answers(op) for ops in repaired.values() for op in ops)
        return (1 + (self._steps is None)) if rerun else 0

    def replay_jointly(
        self,
        repaired: Mapping[str, Collection[str]],
        cases: Collection[str] | None = None,
        precise: bool = False,
    ) -> dict[str, ReplayedAnswer]:
        """Case id -> its answer after one run with the blamed ops of every case of
        ``repaired`` (case id -> op ids) repaired, each restoring its own case's evidence, for
        the cases whose answer may have changed (only those in ``cases`` if given).

        The memory is built once with every repaired construction step (each restoring the
        evidence of the cases that blame it); every question is asked with the repairs of its
        own case (a repaired search adds its own question's evidence). The answer operation has
        no repair that replays anything: its oracle is the gold answer, judged for real, and no
        other answer can change with it. ``precise``: a repaired search keeps only what holds
        the evidence."""
        answered = {c for c, ops in repaired.items() if any(self._answers(op) for op in ops)}
        steps_of = {
            c: {self.step_of(op) for op in ops if not self._answers(op)}
            for c, ops in repaired.items()
        }
        steps_of = {c: steps for c, steps in steps_of.items() if steps}
        wanted = set(self.inputs.cases) if cases is None else set(cases)
        out = {c: self._gold_answer(c) for c in answered & wanted}
        steps = frozenset(s for group in steps_of.values() for s in group)
        rest = wanted - answered
        if not rest or not steps:
            return out  # nothing re-runs: every other answer stays as recorded
        sources = frozenset().union(*(self.evidence_sources(c) for c in steps_of))
        system = self._system(RepairPlan(steps, sources, precise))
        system.construct(self.inputs.conversation)
        built = system.run_state
        for case_id in sorted(rest):
            asking = copy.copy(system)  # the memory is shared read-only by the questions
            asking.repair = RepairPlan(steps, self.evidence_sources(case_id), precise)
            asking.run_state = copy.copy(built)
            asking.run_state.results = []
            (result,) = asking.ask_questions(self.inputs.conversation, {case_id})
            out[case_id] = ReplayedAnswer(result.passed, still_lost_at(result))
        return out

    def _gold_answer(self, case_id: str) -> ReplayedAnswer:
        """The answer step's oracle: the gold answer, judged for real."""
        inputs = self.inputs
        question = self._questions[case_id]
        # the trace records only the prompts it changed: the rest ran with the defaults
        prompt = (inputs.prompts.get(JUDGE) or DEFAULTS[JUDGE]).text
        gold = question.answer
        response = self.backend.judge(prompt, question.text, gold, gold, inputs.params)
        return ReplayedAnswer(parse_label(response))

    def evidence_sources(self, case_id: str) -> frozenset[str]:
        """The evidence sentences (``D1:3#0``) the oracle restores for ``case_id``."""
        return self._sources.get(case_id, frozenset())

    def _build(self, steps: frozenset[str], sources: frozenset[str]) -> System:
        """The memory built with the construction ``steps`` repaired (restoring ``sources``),
        built once however many replays ask for it at the same time."""
        self.steps()  # the step map first: it names the construction steps
        key = (steps, sources if steps else frozenset())
        with self._lock:
            built = self._built.get(key)
            building = self._building.setdefault(key, threading.Lock())
        if built is not None:
            return built
        with building:
            with self._lock:
                built = self._built.get(key)
            if built is None:
                built = self._construct(steps, sources)
                self._remember(key, built)
        return built

    def _construct(self, steps: frozenset[str], sources: frozenset[str]) -> System:
        if not steps:
            built = self._system(None)
            built.construct(self.inputs.conversation, checkpoint=self._snapshot)
        elif self._rebuilt:
            built = self._system(RepairPlan(steps, sources))
            built.construct(self.inputs.conversation)
        else:
            # every session before the first repaired step runs as it did: start from there
            start = min(self._session_of[s] for s in steps)
            self._build(frozenset(), frozenset())
            built = self._copy(self._snapshots[start])
            built.repair = RepairPlan(steps, sources)
            built.construct(self.inputs.conversation, resume=start)
        return built

    def _remember(self, key: BuildKey, built: System) -> None:
        with self._lock:
            self._built[key] = built
            self._building.pop(key, None)
            if len(self._built) > MAX_BUILT:  # a few cases' repairs at a time, plus the original
                oldest = next(k for k in self._built if k[0])
                del self._built[oldest]

    def _snapshot(self, index: int, system: System) -> None:
        self._snapshots[index] = self._copy(system)

    def _copy(self, system: System) -> System:
        """A deep copy of a system's memory; the backend, search backend, settings and prompts
        are shared (they hold clients and models, and no state of the run)."""
        shared: dict[int, object] = {
            id(x): x for x in (system.backend, system.ranker, system.settings, system.prompts)
        }
        return copy.deepcopy(system, shared)

    def _system(self, repair: RepairPlan | None) -> System:
        inputs = self.inputs
        return make_system(
            inputs.system,
            self.backend,
            params=inputs.params,
            prompts=inputs.prompts,
            faults=inputs.faults,
            ranker=self.ranker,
            repair=repair,
            settings=self.settings,
            recorded=inputs.recorded,
        )


MAX_BUILT = 16  # cached memories (each a whole system's state)


def make_replayer(inputs: TraceInputs, settings: Settings | None = None) -> TraceReplayer:
    """A replayer with the backend and search backend the trace recorded (``settings`` for
    those that call an endpoint)."""
    retriever, _, model = inputs.retriever.partition(":")
    return TraceReplayer(
        inputs,
        make_backend(inputs.backend, settings),
        make_ranker(retriever, settings, model or None),
        settings,
    )


def _operation_names(path: Path) -> dict[str, Signature]:
    names = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "operation":
            names[record["id"]] = signature(record)
    return names
