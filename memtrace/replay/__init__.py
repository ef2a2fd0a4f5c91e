"""Executed counterfactuals: re-run a failed case of a traced reference system with chosen
operations repaired, instead of asking a model what would have happened.

Public API (kept stable; changes are noted here):

* ``read_native(path) -> TraceInputs``: the replay inputs of a native trace file (the
  conversation, questions and gold answers, system, backend, parameters, prompts, planted
  faults, the original answers); ``NotReplayableError`` for an imported smartcomment / OTLP
  trace or a system memtrace cannot run. ``inputs_from_records(records, where)`` does the same
  for native records as dicts.
* ``make_replayer(inputs, settings=None) -> TraceReplayer`` (the backend and search backend the
  trace recorded), or ``TraceReplayer(inputs, backend, ranker=None, settings=None)``.
* ``replayer.replay(case_id, repaired=("op-000012", "op-000431")) -> CaseReplay``: the case
  answered again with those operations (op ids of the original trace) repaired for this case by
  the oracle (``systems/`` says per operation kind what a repair restores); every other
  operation runs as it did; the answer and the judge always run for real.
  ``CaseReplay.passed`` (judged correct), ``.prediction``, ``.repaired`` (``Repaired(step,
  op_id, detail, error_type)``: what each repair added or kept, and the error type restoring
  it undoes; ``error_type`` was added after the first commit of this API).
  ``replay(case_id)`` with no repair reproduces the original answer exactly (a test checks it).
* ``replayer.downstream(op_id)``: the construction ops traced after ``op_id``, which the
  executed label's ideal downstream repairs along with it (added after the first commit).
* ``replayer.replays``: how many replays ran (the cost the replay judge reports);
  ``replayer.steps()``: original op id -> step key; ``replayer.evidence_sources(case_id)``.

* ``mem0-lib`` traces (the real Mem0 library, mem0ai 1.0.x, and 2.x since issue 29; added
  after the first commit of this API) replay with ``make_replayer(inputs, settings)``, the
  settings naming the endpoint:
  ``TraceInputs.recorded`` (request digest -> replies in execution order, from the ops'
  ``llm_request`` / ``llm_reply`` metadata) answers every model call a repair did not change
  (the n-th asking of a request gets the n-th reply); the others, and
  every embedding, go to the endpoint. Each repaired replay rebuilds Mem0's memory from the
  first session (``System.replay_snapshots``). A trace that recorded no calls is refused.

* ``memtrace.replay.graph``: where replayers come from, one per trace, built on first use:
  ``LoadedTraces(db, settings, replayer=None).for_trace(trace_id)`` for loaded traces, read
  through the caller's ``Database`` (what ``attribute --judge replay`` and ``patterns
  --what-if`` use), ``TraceFiles(paths, settings)`` for native files (``bench natural``, the
  optimizer). Shared by threads: replays of different cases run at once (``--workers``).
* ``memtrace.replay.hook``: a user's own traced system (operations name their step in metadata
  ``replay_step``; the system implements ``replay(case_id, steps) -> Replayed(passed,
  prediction, changed)``); ``SystemReplayer(trace, system)`` has the same ``replay`` interface.
  ``memtrace.replay.plugins`` finds the system's replayer factory (``--replayer module:attr``,
  or the entry point group ``memtrace.replayers``); ``can_replay(system, source=...,
  replayer=...)`` says cheaply whether a trace can be replayed.
* ``memtrace.replay.what_if.WhatIfReplayer(for_trace)``: the class what-ifs of
  ``memtrace.patterns.headroom`` over those replayers (``replay_jointly``: many cases' repairs
  in one run).

(Renamed after the first commit of this API: ``Replayer`` is ``TraceReplayer``;
``GraphReplayers`` is ``LoadedTraces``; the class what-if replayer moved from
``memtrace.optimize.what_if`` here.)

Replays never write the trace they replay. The executed label (earliest decisive op, fix-alone
outcomes) is ``memtrace.attribution.counterfactual.executed_label`` over a replay function.
"""

from memtrace.replay.engine import CaseReplay, TraceReplayer, make_replayer
from memtrace.replay.inputs import RecordedCase, TraceInputs, inputs_from_records, read_native
from memtrace.replay.plugins import can_replay, replay_refusal

__all__ = [
    "CaseReplay",
    "RecordedCase",
    "TraceInputs",
    "TraceReplayer",
    "can_replay",
    "inputs_from_records",
    "make_replayer",
    "read_native",
    "replay_refusal",
]
