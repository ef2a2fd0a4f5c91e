"""The replay engine (``memtrace.replay``) driven for class what-ifs: a ``Replayer`` of
``memtrace.patterns.headroom`` over traced reference-system conversations.

``memtrace.replay.Replayer.replay`` answers one case with repairs for that case. A class's
what-if repairs the blamed operations of many cases at once and needs every answer of the
conversation again (a repaired memory can change other answers). So one replay here builds the
memory once with every repaired construction step (each restoring the evidence of the cases that
blame it), then asks every question with the repairs of its own case (a repaired search adds the
evidence of its own question only). One replay is one conversation re-run: one system run.

The answer operation has no repair that replays anything: it is the last operation before the
judge, and its oracle is the gold answer. A case whose blamed answer step is repaired is judged
for real on its gold answer (the judge call runs, no conversation does), and no other answer can
change with it.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from memtrace.db import Database
from memtrace.errors import NotReplayableError
from memtrace.patterns.headroom import UNSUPPORTED, Outcome, Repair
from memtrace.replay import Replayer as CaseReplayer
from memtrace.replay import TraceInputs, inputs_from_records, make_replayer
from memtrace.replay.store import ReplayStore
from memtrace.settings import Settings
from memtrace.systems.core import Backend, QuestionResult
from memtrace.systems.core import Repair as StepRepair
from memtrace.systems.judge import parse_label
from memtrace.systems.prompts import JUDGE
from memtrace.systems.registry import make_system
from memtrace.taxonomy import ERROR_TYPES

ANSWER_OP = "question-answering"  # the reference systems' answer operation


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


@dataclass
class EngineReplayer:
    """Replays traces of reference systems; ``inputs_of(trace_id)`` reads a trace's replay
    inputs (``memtrace.replay.read_native`` of its file, or from the graph), raising
    ``NotReplayableError`` for one that cannot be replayed."""

    inputs_of: Callable[[str], TraceInputs]
    settings: Settings | None = None
    precise_search: bool = False  # a repaired search keeps only what holds the evidence
    runs: int = 0  # conversations re-run (replays and the engine's step maps)
    _engines: dict[str, CaseReplayer] = field(default_factory=dict)
    _refused: dict[str, str] = field(default_factory=dict)
    _mapped: set[str] = field(default_factory=set)  # traces whose step map has run

    def _engine(self, trace_id: str) -> CaseReplayer:
        engine = self._engines.get(trace_id)
        if engine is None:
            engine = make_replayer(self.inputs_of(trace_id), self.settings)
            self._engines[trace_id] = engine
        return engine

    def replayable(self, trace_id: str) -> str | None:
        if trace_id not in self._refused and trace_id not in self._engines:
            try:
                self._engine(trace_id)
            except NotReplayableError as exc:
                self._refused[trace_id] = str(exc)
        return self._refused.get(trace_id)

    def _split(
        self, engine: CaseReplayer, repairs: Sequence[Repair]
    ) -> tuple[set[str], dict[str, set[str]]]:
        """(cases whose answer step is repaired, case id -> its other repaired steps)."""
        answered: set[str] = set()
        steps_of: dict[str, set[str]] = {}
        for repair in repairs:
            if _name(engine, repair.op_id) == ANSWER_OP:
                answered.add(repair.case_id)
            else:
                steps_of.setdefault(repair.case_id, set()).add(engine.step_of(repair.op_id))
        return answered, steps_of

    def cost(self, trace_id: str, repairs: Sequence[Repair]) -> int:
        """System runs the replay makes: the conversation, unless only answer steps are
        repaired, and first the engine's one traced re-run that maps op ids to steps."""
        engine = self._engine(trace_id)
        rerun = any(_name(engine, r.op_id) != ANSWER_OP for r in repairs)
        return (1 + (trace_id not in self._mapped)) if rerun else 0

    def baseline(self, trace_id: str) -> Mapping[str, bool]:
        return {c: r.passed for c, r in self._engine(trace_id).inputs.cases.items()}

    def replay(
        self, trace_id: str, repairs: Sequence[Repair], cases: Collection[str] | None = None
    ) -> Mapping[str, Outcome]:
        engine = self._engine(trace_id)
        self.runs += self.cost(trace_id, repairs)
        answered, steps_of = self._split(engine, repairs)
        if steps_of:
            self._mapped.add(trace_id)
        inputs = engine.inputs
        wanted = set(inputs.cases) if cases is None else set(cases)
        out = {c: self._gold_answer(engine, c) for c in answered & wanted}
        steps = frozenset(s for group in steps_of.values() for s in group)
        rest = wanted - answered
        if not rest or not steps:
            return out  # nothing re-runs: every other answer stays as recorded
        # construction steps restore the evidence of every case that blames them; a search
        # step exists per question, so each question below gets its own case's evidence
        sources = frozenset().union(*(engine.evidence_sources(c) for c in steps_of))
        system = make_system(
            inputs.system,
            engine.backend,
            params=inputs.params,
            prompts=inputs.prompts,
            faults=inputs.faults,
            ranker=engine.ranker,
            repair=StepRepair(steps, sources, self.precise_search),
            settings=self.settings,
            recorded=inputs.recorded,
        )
        system.construct(inputs.conversation)
        built = system.run_state
        for case_id in sorted(rest):
            asking = copy.copy(system)  # the memory is shared read-only by the questions
            asking.repair = StepRepair(steps, engine.evidence_sources(case_id), self.precise_search)
            asking.run_state = copy.copy(built)
            asking.run_state.results = []
            (result,) = asking.ask_questions(inputs.conversation, {case_id})
            out[case_id] = Outcome(result.passed, still_lost_at(result))
        return out

    def _gold_answer(self, engine: CaseReplayer, case_id: str) -> Outcome:
        """The answer step's oracle: the gold answer, judged for real."""
        inputs = engine.inputs
        number = int(case_id.rsplit("-", 1)[1])
        question = next(q for q in inputs.conversation.questions if q.number == number)
        backend: Backend = engine.backend
        prompt = inputs.prompts[JUDGE].text if JUDGE in inputs.prompts else ""
        gold = question.answer
        response = backend.judge(prompt, question.text, gold, gold, inputs.params)
        return Outcome(parse_label(response))


def _name(engine: CaseReplayer, op_id: str) -> str:
    """The operation's name in the original trace ("" for an id it does not hold)."""
    signature = engine.inputs.operations.get(op_id)
    return signature[0] if signature else ""


def graph_replayer(db: Database, settings: Settings | None = None) -> EngineReplayer:
    """The engine over traces loaded in Neo4j (their records rebuilt from the graph)."""

    def inputs_of(trace_id: str) -> TraceInputs:
        records = ReplayStore(db).trace_records(trace_id)
        return inputs_from_records(records, f"trace {trace_id!r}")

    return EngineReplayer(inputs_of, settings)
