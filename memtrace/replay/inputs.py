"""What a replay needs, read back from a trace: the conversation, the questions with their gold
answers, the system's name, backend, parameters and prompts, the planted faults, and what the
original run answered. No dataset path: a native trace of a reference system holds it all.

``inputs_from_records`` works on native records as dicts (a file's lines, or the same records
rebuilt from the graph by ``replay/store.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

from memtrace.errors import NotReplayableError
from memtrace.prompts import Prompt
from memtrace.systems.core import Fault
from memtrace.systems.locomo import Conversation, Question, Session, Turn
from memtrace.systems.params import Params
from memtrace.systems.prompts import DEFAULTS
from memtrace.systems.registry import SYSTEMS

# Every system of the registry names its steps and says how they are repaired (``System.step``):
# the reference systems replay offline; one that needs an endpoint (the real Mem0 library) replays
# with it (requests a repair changed go to it).
REPLAYABLE_SYSTEMS: Final[tuple[str, ...]] = tuple(
    name for name, cls in SYSTEMS.items() if not cls.needs_endpoint
)
ENDPOINT_REPLAYABLE: Final[tuple[str, ...]] = tuple(
    name for name, cls in SYSTEMS.items() if cls.needs_endpoint
)

_SESSION = re.compile(r"locomo-(\d+)-session-(\d+)")
_CASE = re.compile(r"locomo-qa-(\d+)-(\d+)")
_PARAMS = {f.name: f.type for f in fields(Params)}


Signature = tuple[str, tuple[str, ...]]


def signature(op: Mapping[str, Any]) -> Signature:
    """What identifies an operation of a run: its name and the variables it wrote."""
    return str(op.get("name")), tuple(sorted(op.get("writes") or ()))


@dataclass(frozen=True, slots=True)
class RecordedCase:
    """What the original run answered for one case."""

    case_id: str
    passed: bool
    prediction: str


@dataclass(frozen=True)
class TraceInputs:
    trace_id: str
    system: str
    backend: str
    retriever: str
    params: Params
    prompts: Mapping[str, Prompt]
    conversation: Conversation
    faults: tuple[Fault, ...]
    cases: Mapping[str, RecordedCase]
    operations: Mapping[str, Signature]  # op id -> (name, written variable ids), as traced
    # request digest -> the replies of the model calls the operations recorded, in execution
    # order (metadata llm_request / llm_reply: mem0-lib's extraction and decision)
    recorded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def read_native(path: Path) -> TraceInputs:
    """The replay inputs of a native trace file; NotReplayableError for anything else."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise NotReplayableError(f"{name}: cannot read file: {exc.strerror or exc}") from None
    try:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError:
        raise NotReplayableError(
            f"{name}: not a native JSON Lines trace (an imported smartcomment or OTLP file "
            "cannot be replayed: it records what a system did, not how to run it again)"
        ) from None
    return inputs_from_records(records, name)


def inputs_from_records(records: Iterable[dict[str, Any]], where: str) -> TraceInputs:
    try:
        return _inputs(list(records), where)
    except (KeyError, TypeError, ValueError) as exc:  # a record without what a replay reads
        raise NotReplayableError(
            f"{where}: cannot rebuild the run from the trace ({exc!r})"
        ) from None


def _inputs(items: list[dict[str, Any]], where: str) -> TraceInputs:
    head = items[0] if items else {}
    if not isinstance(head, dict) or head.get("type") != "trace":
        raise NotReplayableError(
            f"{where}: not a native memtrace trace (imported smartcomment / OTLP traces cannot "
            "be replayed: they record what a system did, not how to run it again)"
        )
    system = head.get("system")
    if system not in (*REPLAYABLE_SYSTEMS, *ENDPOINT_REPLAYABLE):
        raise NotReplayableError(
            f"{where}: trace of system {system!r}; only the reference systems "
            f"{', '.join(REPLAYABLE_SYSTEMS)} (and {', '.join(ENDPOINT_REPLAYABLE)} with its "
            "endpoint) can be replayed from a trace alone (a system of your own: --replayer "
            "module:attr, or the entry point group memtrace.replayers; docs/replay.md)"
        )
    meta = head.get("metadata") or {}
    of: dict[str, list[dict[str, Any]]] = {}
    for record in items[1:]:
        of.setdefault(str(record.get("type")), []).append(record)
    recorded = _recorded(of.get("operation", []))
    if SYSTEMS[system].replay_needs_calls and not recorded:
        raise NotReplayableError(
            f"{where}: trace of {system!r} records no model calls of its operations (made by an "
            "older memtrace): a replay would ask the model everything again"
        )
    variables = sorted(of.get("variable", []), key=lambda v: int(v.get("seq") or 0))
    values = {v["id"]: v.get("value") for v in variables}
    conversation = _conversation(of.get("session", []), variables, of.get("case", []), meta, where)
    return TraceInputs(
        trace_id=str(head.get("id")),
        system=str(system),
        backend=str(meta.get("backend") or "offline"),
        retriever=_retriever(variables),
        params=_params(variables, where),
        prompts=_prompts(variables, where),
        conversation=conversation,
        faults=tuple(_fault(f) for f in (meta.get("bench") or {}).get("planted", [])),
        cases={
            c["id"]: RecordedCase(
                c["id"],
                c.get("judge_score") == 1.0,
                str(c.get("prediction_text") or values.get(c.get("prediction") or "") or ""),
            )
            for c in of.get("case", [])
        },
        operations={op["id"]: signature(op) for op in of.get("operation", [])},
        recorded=recorded,
    )


def _recorded(operations: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Request digest -> its replies in execution order (op ids number operations in the order
    they started; the graph returns them in no order). A model may answer the same request
    differently twice: a replay serves the n-th asking the n-th reply."""
    recorded: dict[str, list[str]] = {}
    for op in sorted(operations, key=lambda o: str(o.get("id"))):
        meta = op.get("metadata") or {}
        request, reply = meta.get("llm_request"), meta.get("llm_reply")
        if isinstance(request, str) and isinstance(reply, str):
            recorded.setdefault(request, []).append(reply)
    return {request: tuple(replies) for request, replies in recorded.items()}


def _conversation(
    sessions: list[dict[str, Any]],
    variables: list[dict[str, Any]],
    cases: list[dict[str, Any]],
    meta: Mapping[str, Any],
    where: str,
) -> Conversation:
    numbered = {}
    number = 0
    for s in sessions:
        match = _SESSION.fullmatch(str(s.get("name")))
        if match:
            number = int(match.group(1))
            numbered[s["id"]] = (
                int(match.group(2)),
                (s.get("metadata") or {}).get("date_time", ""),
            )
    if not numbered:
        raise NotReplayableError(f"{where}: no LoCoMo sessions (locomo-N-session-K) in the trace")
    turns: dict[str, list[Turn]] = {sid: [] for sid in numbered}
    speakers: list[str] = []
    for v in variables:
        if v.get("category") != "message" or v.get("session") not in turns:
            continue
        content = json.loads(v["value"])
        dia_id = (v.get("metadata") or {}).get("dia_id") or v["name"].split(":", 1)[-1]
        turns[v["session"]].append(Turn(dia_id, content["speaker"], content["content"]))
        if content["speaker"] not in speakers:
            speakers.append(content["speaker"])
    queries = {v["id"]: v for v in variables if v.get("class_name") == "query"}
    questions = []
    for c in cases:
        match = _CASE.fullmatch(c["id"])
        query = queries.get(c.get("query") or "")
        if match is None or query is None:
            raise NotReplayableError(f"{where}: case {c['id']!r} is not a LoCoMo question")
        prefix = f"U{match.group(1)}:"
        present = [
            e.removeprefix(prefix) for e in (query.get("metadata") or {}).get("evidence", [])
        ]
        questions.append(
            Question(
                number=int(match.group(2)),
                text=str(query.get("value")),
                answer=str((c.get("golden_answers") or [""])[0]),
                evidence=(*present, *(c.get("missing_evidence") or [])),
                category=str(c.get("category")),
            )
        )
    questions.sort(key=lambda q: q.number)  # the order the run asked them in
    ordered = sorted(numbered.items(), key=lambda item: item[1][0])
    pair = (*speakers, "", "")
    return Conversation(
        number=number,
        sample_id=str(meta.get("sample_id") or ""),
        speakers=(pair[0], pair[1]),
        sessions=tuple(Session(n, date, tuple(turns[sid])) for sid, (n, date) in ordered),
        questions=tuple(questions),
    )


def _single(variables: list[dict[str, Any]], category: str, where: str) -> dict[str, Any]:
    """name -> the value of each variable of ``category``; a run that changed one mid-way
    cannot be replayed as one system."""
    found: dict[str, Any] = {}
    for v in variables:
        if v.get("category") != category:
            continue
        if v["name"] in found and found[v["name"]]["value"] != v.get("value"):
            raise NotReplayableError(
                f"{where}: {category} {v['name']!r} changed during the run; cannot replay it"
            )
        found[v["name"]] = v
    return found


def _params(variables: list[dict[str, Any]], where: str) -> Params:
    recorded = _single(variables, "parameter", where)
    values: dict[str, Any] = {}
    for name, v in recorded.items():
        if name in _PARAMS:
            values[name] = json.loads(v["value"])
    return Params(**values)


def _retriever(variables: list[dict[str, Any]]) -> str:
    for v in variables:
        if v.get("category") == "parameter" and v["name"] == "retriever":
            return str(v.get("value"))
    return "bm25"


def _prompts(variables: list[dict[str, Any]], where: str) -> dict[str, Prompt]:
    prompts = {}
    for name, v in _single(variables, "prompt", where).items():
        default = DEFAULTS.get(name)
        text = str(v.get("value"))
        if default is None or default.text == text:
            continue
        version = int((v.get("metadata") or {}).get("prompt_version") or default.version)
        prompts[name] = Prompt(name, version, text, default.inputs)
    return prompts


def _fault(raw: Mapping[str, Any]) -> Fault:
    return Fault(
        str(raw["id"]),
        raw["type"],
        str(raw["target"]),
        str(raw["anchor"]),
        frozenset(raw["sources"]),
    )
