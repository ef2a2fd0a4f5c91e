"""Every attribution query: case subgraphs, judge views, attributions, evaluation rows.

The only attribution module that talks to Neo4j; the pipeline hands judges and scorers the
plain data it returns.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pandas as pd

from memtrace.attribution.dates import parse_date
from memtrace.attribution.model import (
    Anchor,
    CaseGraph,
    CaseScores,
    Evidence,
    FlowStep,
    Memory,
    Messages,
    OperationView,
    OpRef,
    Verdict,
)
from memtrace.attribution.records import attribution_rows
from memtrace.attribution.text import (
    memory_text,
    message_speaker,
    message_text,
    message_timestamp,
)
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.reading.copying import Copying
from memtrace.taxonomy import STORED_SOURCES, LabelSource

FLOW_DEPTH = 12  # FLOWS_TO steps followed from an evidence message (enough for extract->store)
VALUE_BUDGET = 600  # characters per input/output value in a judge's operation view


def explain_cypher(
    trace_id: str, case_id: str, max_seq: int, message_ids: Sequence[str] = ()
) -> str:
    """The explain view (``explain_view.cypher``) with :param lines, ready for Neo4j Browser,
    starting from ``message_ids``: the messages the judge started from (``CaseGraph.evidence``:
    the gold evidence, or what ``--evidence retrieved`` found)."""
    params = {
        "trace_id": trace_id,
        "case_id": case_id,
        "message_ids": list(message_ids),
        "max_seq": max_seq,
    }
    lines = [f":param {key} => {json.dumps(value)};" for key, value in params.items()]
    return "\n".join([*lines, get_query("attribution/explain_view").text])


def _ref(op_id: str | None, seq: int | None, kind: str | None) -> OpRef | None:
    return OpRef(op_id, int(seq) if seq is not None else -1, kind or "other") if op_id else None


class AttributionStore:
    """Reads cases of complete traces (per-trace data, memories and messages, is read once) and
    reads and writes attributions."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()  # readers are shared by worker threads
        self._memories: dict[str, tuple[Memory, ...]] = {}
        self._messages: dict[str, Messages] = {}
        self._copying: dict[str, Copying | None] = {}

    def failed_cases(self, trace_id: str | None) -> list[tuple[str, str]]:
        rows = self.db.run(get_query("attribution/failed_cases"), trace_id=trace_id)
        return [(row["trace_id"], row["case_id"]) for row in rows]

    def case_scores(self, trace_id: str | None) -> list[CaseScores]:
        rows = self.db.run(get_query("attribution/case_scores"), trace_id=trace_id)
        return [
            CaseScores(row["trace_id"], int(row["cases"]), tuple(row["unscored"])) for row in rows
        ]

    def anchor(self, trace_id: str, case_id: str) -> Anchor | None:
        rows = self.db.run(get_query("attribution/case_anchor"), trace_id=trace_id, case_id=case_id)
        if not rows:
            return None
        row = rows[0]
        answer = (
            OpRef(row["answer_op"], int(row["answer_seq"]), "generation")
            if row["answer_op"]
            else None
        )
        return Anchor(
            trace_id=trace_id,
            case_id=row["case_id"],
            question=row["question"] or "",
            golden_answers=tuple(row["golden_answers"] or ()),
            prediction=row["prediction"],
            failed=row["failed"],
            query_id=row["query_id"],
            answer=answer,
            retrievals=tuple(
                OpRef(r["id"], int(r["seq"]), "retrieval")
                for r in row["retrieval_ops"]
                if r.get("id")
            ),
            evidence_ids=tuple(row["evidence_ids"]),
        )

    def memories(self, trace_id: str) -> tuple[Memory, ...]:
        with self._lock:
            if trace_id not in self._memories:
                self._memories[trace_id] = self._read_memories(trace_id)
            return self._memories[trace_id]

    def _read_memories(self, trace_id: str) -> tuple[Memory, ...]:
        rows = self.db.run(get_query("attribution/memories"), trace_id=trace_id)
        return tuple(
            Memory(
                id=row["id"],
                seq=int(row["seq"]),
                value=row["value"] or "",
                creator=_ref(row["creator_op"], row["creator_seq"], row["creator_kind"]),
                next_id=row["next_id"],
                next_seq=row["next_seq"],
                next_creator=_ref(
                    row["next_creator_op"], row["next_creator_seq"], row["next_creator_kind"]
                ),
                deleted_by=_ref(row["deleted_by"], row["deleted_seq"], row["deleted_by_kind"]),
            )
            for row in rows
        )

    def evidence(self, trace_id: str, ids: list[str]) -> tuple[Evidence, ...]:
        """The given variables as evidence, in the given order, missing ones left out (evidence
        need not be a 'message' variable)."""
        rows = self.db.run(get_query("attribution/variables"), trace_id=trace_id, ids=ids)
        found = {
            row["id"]: Evidence(
                row["id"],
                message_text(row["value"]),
                seq=int(row["seq"]),
                speaker=message_speaker(row["value"]),
                said_on=parse_date(message_timestamp(row["value"])),
            )
            for row in rows
        }
        return tuple(found[i] for i in ids if i in found)

    def messages(self, trace_id: str) -> Messages:
        """Every message variable of the trace, with its seq, speaker and day (read once)."""
        with self._lock:
            if trace_id not in self._messages:
                rows = self.db.run(get_query("attribution/messages"), trace_id=trace_id)
                corpus, seqs, speakers, dates = [], {}, {}, {}
                for row in rows:
                    message_id, value = row["id"], row["value"]
                    corpus.append((message_id, message_text(value)))
                    seqs[message_id] = int(row["seq"])
                    if speaker := message_speaker(value):
                        speakers[message_id] = speaker
                    if day := parse_date(message_timestamp(value)):
                        dates[message_id] = day
                self._messages[trace_id] = Messages(tuple(corpus), seqs, speakers, dates)
            return self._messages[trace_id]

    def copying(self, trace_id: str) -> Copying | None:
        """The trace's message sentences and speakers, filed to tell a statement copying one
        from a rewrite (``reading.copying``; None: no message says a sentence), read once."""
        with self._lock:
            if trace_id in self._copying:
                return self._copying[trace_id]
        messages = self.messages(trace_id)
        found = Copying.of(
            [(text, messages.seqs[message_id]) for message_id, text in messages.corpus],
            [(memory_text(memory.value), memory.seq) for memory in self.memories(trace_id)],
            messages.speakers.values(),
        )
        with self._lock:
            self._copying[trace_id] = found
        return found

    def case_graph(self, anchor: Anchor, evidence: tuple[Evidence, ...]) -> CaseGraph:
        max_seq = anchor.answer.seq if anchor.answer else 2**62
        flow_rows = self.db.run(
            get_query("attribution/evidence_flow"),
            trace_id=anchor.trace_id,
            evidence_ids=[e.id for e in evidence],
            max_seq=max_seq,
            max_depth=FLOW_DEPTH,
        )
        flow = tuple(
            FlowStep(
                message_id=row["message_id"],
                step=int(row["step"]),
                op=OpRef(row["op_id"], int(row["op_seq"]), row["op_kind"], row["op_name"]),
                source_id=row["source_id"],
                target_id=row["target_id"],
                target_value=row["target_value"],
            )
            for row in flow_rows
        )
        context: tuple[tuple[str, str], ...] = ()
        if anchor.answer is not None:
            rows = self.db.run(
                get_query("attribution/context"),
                trace_id=anchor.trace_id,
                answer_op=anchor.answer.id,
                query_id=anchor.query_id or "",
            )
            context = tuple((row["id"], row["value"] or "") for row in rows)
        candidate_ops: tuple[tuple[OpRef, str], ...] = ()
        if anchor.answer is not None:
            rows = self.db.run(
                get_query("attribution/candidates"),
                trace_id=anchor.trace_id,
                answer_op=anchor.answer.id,
                query_id=anchor.query_id or "",
                evidence_ids=[e.id for e in evidence],
                max_depth=FLOW_DEPTH,
            )
            candidate_ops = tuple(
                (OpRef(row["op_id"], int(row["seq"]), row["kind"] or "other", row["name"] or ""),
                 row["role"])
                for row in rows
            )  # fmt: skip
        memories = self.memories(anchor.trace_id)
        copying = self.copying(anchor.trace_id)
        return CaseGraph(anchor, evidence, flow, memories, context, candidate_ops, copying)

    def operation_views(
        self, trace_id: str, op_ids: Sequence[str], budget: int = VALUE_BUDGET
    ) -> dict[str, OperationView]:
        """The given operations with their inputs and outputs (values cut to ``budget``)."""
        if not op_ids:
            return {}
        rows = self.db.run(
            get_query("attribution/operation_views"),
            trace_id=trace_id,
            op_ids=list(dict.fromkeys(op_ids)),
            budget=budget,
        )
        return {
            row["id"]: OperationView(
                id=row["id"],
                name=row["name"],
                kind=row["kind"],
                seq=row["seq"],
                inputs=tuple(row["inputs"]),
                outputs=tuple(row["outputs"]),
                deletes=tuple(row["deletes"]),
            )
            for row in rows
        }

    def write_attributions(self, run_id: str, verdicts: Sequence[Verdict]) -> int:
        """Replace this run's attributions of these cases; returns the number written."""
        if not verdicts:
            return 0
        rows = self.db.run(
            get_query("attribution/write_attributions"),
            run_id=run_id,
            rows=attribution_rows(verdicts),
        )
        return int(rows[0]["written"]) if rows else 0

    def finished_cases(self, run_id: str) -> set[tuple[str, str]]:
        """(trace_id, case_id) of the cases this run attributed without an error."""
        rows = self.db.run(get_query("attribution/finished_cases"), run_id=run_id)
        return {(row["trace_id"], row["case_id"]) for row in rows}

    def delete_attributions(self, run_id: str, trace_id: str | None = None) -> int:
        """Delete one run's attributions (of one trace only, when given); returns how many."""
        rows = self.db.run(
            get_query("attribution/delete_attributions"), run_id=run_id, trace_id=trace_id
        )
        return int(rows[0]["deleted"]) if rows else 0

    def traces_with_case(self, case_id: str) -> list[str]:
        rows = self.db.run(get_query("attribution/find_case"), case_id=case_id)
        return [str(row["trace_id"]) for row in rows]

    def trace_state(self, trace_id: str) -> str | None:
        """The trace's load_state, or None when no such trace exists."""
        rows = self.db.run(get_query("attribution/trace_state"), trace_id=trace_id)
        return str(rows[0]["load_state"]) if rows else None

    def trace_system(self, trace_id: str) -> str | None:
        """The system the trace was written with (None when it names none)."""
        rows = self.db.run(get_query("attribution/trace_state"), trace_id=trace_id)
        return str(rows[0]["system"]) if rows and rows[0]["system"] else None

    def run_exists(self, run_id: str) -> bool:
        rows = self.db.run(get_query("attribution/run_exists"), run_id=run_id)
        return bool(rows and rows[0]["found"])

    def latest_run(self) -> str | None:
        rows = self.db.run(get_query("attribution/latest_run"))
        return str(rows[0]["run_id"]) if rows else None

    def evaluation_rows(
        self, run_id: str, trace_id: str | None, label_source: LabelSource | None = None
    ) -> pd.DataFrame:
        """Labels (of one source, or of every source) joined with a run's attributions
        (``eval_rows.cypher``)."""
        query = get_query("attribution/eval_rows")
        sources = list(STORED_SOURCES[label_source]) if label_source else None
        rows = self.db.run(query, run_id=run_id, trace_id=trace_id, sources=sources)
        return pd.DataFrame(rows, columns=list(query.columns))

    def trace_sizes(self, trace_ids: Sequence[str]) -> dict[str, int]:
        """Characters of each whole flattened trace, in one query."""
        rows: list[dict[str, Any]] = self.db.run(
            get_query("attribution/trace_sizes"), trace_ids=list(trace_ids)
        )
        return {row["trace_id"]: int(row["chars"]) for row in rows}
