"""Attribute failed cases: read each case's subgraph, walk the candidates, write :Attribution."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memtrace.attribution.evidence import (
    Embed,
    EvidenceMode,
    RetrievalQuery,
    Retriever,
    retrieved_evidence,
)
from memtrace.attribution.graph import TraceReader
from memtrace.attribution.judges import CaseView, Judge
from memtrace.attribution.model import Anchor, Candidate, Evidence, Trail, Verdict
from memtrace.attribution.trails import candidates, trace_all
from memtrace.attribution.walk import Strategy, search
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.errors import MemtraceError


@dataclass(frozen=True)
class Options:
    evidence: EvidenceMode = "gold"
    strategy: Strategy = "linear"
    retriever: Retriever = "bm25"
    retrieval_query: RetrievalQuery = "question"
    embed: Embed | None = None

    def run_id(self, judge: Judge) -> str:
        """The default run id: one per configuration, so a re-run replaces its own results."""
        return f"{judge.name}-{self.evidence}-{self.strategy}"


@dataclass(frozen=True)
class Analysis:
    """What ``explain`` shows: the case, its evidence trails, candidates and the verdict."""

    anchor: Anchor
    trails: tuple[Trail, ...]
    candidates: tuple[Candidate, ...]
    verdict: Verdict


def starting_evidence(
    reader: TraceReader, anchor: Anchor, options: Options
) -> tuple[Evidence, ...]:
    if options.evidence == "gold" and anchor.evidence_ids:
        texts = reader.texts(anchor.trace_id, list(anchor.evidence_ids))
        return tuple(Evidence(i, texts[i]) for i in anchor.evidence_ids if i in texts)
    return retrieved_evidence(
        anchor,
        reader.messages(anchor.trace_id),
        retriever=options.retriever,
        query_mode=options.retrieval_query,
        embed=options.embed,
    )


def analyse_case(
    reader: TraceReader, judge: Judge, trace_id: str, case_id: str, options: Options
) -> Analysis:
    started = time.perf_counter()
    anchor = reader.anchor(trace_id, case_id)
    if anchor is None:
        raise MemtraceError(f"no case {case_id!r} in a complete trace {trace_id!r}")
    if anchor.answer is None:
        raise MemtraceError(f"case {case_id!r}: no answer operation reads its question")
    evidence = starting_evidence(reader, anchor, options)
    graph = reader.case_graph(anchor, evidence)
    trails = tuple(trace_all(graph))
    found_candidates = tuple(candidates(graph, trails))
    found = search(options.strategy, judge, CaseView(graph, trails), found_candidates)
    verdict = Verdict(
        trace_id=trace_id,
        case_id=case_id,
        op_id=found.candidate.op.id if found.candidate else None,
        error_type=found.error_type,
        reason=found.reason,
        judge=judge.name,
        model=judge.model,
        confidence=found.confidence,
        llm_calls=found.usage.calls,
        tokens_in=found.usage.tokens_in,
        tokens_out=found.usage.tokens_out,
        seconds=time.perf_counter() - started,
        strategy=options.strategy,
        evidence=options.evidence if anchor.evidence_ids else "retrieved",
        checked=found.checked,
    )
    return Analysis(anchor, trails, found_candidates, verdict)


def attribute_case(
    reader: TraceReader, judge: Judge, trace_id: str, case_id: str, options: Options
) -> Verdict:
    """One case; a failure is recorded on the verdict (``error``) instead of stopping a run."""
    started = time.perf_counter()
    try:
        return analyse_case(reader, judge, trace_id, case_id, options).verdict
    except MemtraceError as exc:
        return Verdict(
            trace_id,
            case_id,
            None,
            None,
            f"attribution failed: {exc}",
            judge.name,
            judge.model,
            seconds=time.perf_counter() - started,
            strategy=options.strategy,
            evidence=options.evidence,
            error=str(exc),
        )


def attribute_cases(
    db: Database,
    judge: Judge,
    cases: Sequence[tuple[str, str]],
    options: Options,
    on_done: Callable[[Verdict], None] | None = None,
) -> list[Verdict]:
    reader = TraceReader(db)
    verdicts = []
    for trace_id, case_id in cases:
        verdict = attribute_case(reader, judge, trace_id, case_id, options)
        verdicts.append(verdict)
        if on_done is not None:
            on_done(verdict)
    return verdicts


def failed_cases(db: Database, trace_id: str | None) -> list[tuple[str, str]]:
    return TraceReader(db).failed_cases(trace_id)


def attribution_rows(verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    rows = []
    for verdict in verdicts:
        props = asdict(verdict)
        props.pop("checked")
        props = {k: v for k, v in props.items() if v is not None}
        props["checked_ops"] = verdict.checked
        rows.append(
            {
                "trace_id": verdict.trace_id,
                "case_id": verdict.case_id,
                "op_id": verdict.op_id,
                "props": props,
            }
        )
    return rows


def write_attributions(db: Database, run_id: str, verdicts: Sequence[Verdict]) -> int:
    """Replace this run's attributions of these cases; returns the number written."""
    if not verdicts:
        return 0
    rows = db.run(
        get_query("attribution/write_attributions"),
        run_id=run_id,
        rows=attribution_rows(verdicts),
    )
    return int(rows[0]["written"]) if rows else 0


def memtrace_record(verdict: Verdict) -> dict[str, Any]:
    """The MemTrace-compatible output record of one case."""
    return {
        "trace_id": verdict.trace_id,
        "case_id": verdict.case_id,
        "error_attribution_result": {
            "error_type": verdict.error_type,
            "op_id": verdict.op_id,
            "reason": verdict.reason,
        },
        "judge": verdict.judge,
        "confidence": verdict.confidence,
        "llm_calls": verdict.llm_calls,
        "tokens_in": verdict.tokens_in,
        "tokens_out": verdict.tokens_out,
        "seconds": round(verdict.seconds, 4),
        **({"error": verdict.error} if verdict.error else {}),
    }
