"""Attribute failed cases: read each case's subgraph, walk the candidates, write :Attribution."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Any

import pandas as pd

from memtrace.attribution.evaluate import CHARS_PER_TOKEN
from memtrace.attribution.evidence import (
    Embed,
    EvidenceMode,
    RetrievalQuery,
    Retriever,
    retrieved_evidence,
)
from memtrace.attribution.graph import TraceReader
from memtrace.attribution.judges import CaseView, Judge, OfflineJudge
from memtrace.attribution.llm_judge import LLMJudge
from memtrace.attribution.model import Anchor, Candidate, CaseGraph, Evidence, Trail, Verdict
from memtrace.attribution.trails import candidates, trace_all
from memtrace.attribution.walk import Strategy, search
from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.errors import MemtraceError
from memtrace.llm import LLMClient
from memtrace.settings import Settings


@dataclass(frozen=True)
class Options:
    evidence: EvidenceMode = "gold"
    strategy: Strategy = "linear"
    retriever: Retriever = "bm25"
    retrieval_query: RetrievalQuery = "question+answer"
    embed: Embed | None = None

    def run_id(self, judge: Judge) -> str:
        """The default run id: one per configuration, so a re-run replaces its own results."""
        return f"{judge.name}-{self.evidence}-{self.strategy}"


@dataclass(frozen=True)
class Analysis:
    """What ``explain`` shows: the case, its evidence trails, candidates and the verdict."""

    anchor: Anchor
    graph: CaseGraph
    trails: tuple[Trail, ...]
    candidates: tuple[Candidate, ...]
    verdict: Verdict


def starting_evidence(
    reader: TraceReader, anchor: Anchor, options: Options
) -> tuple[Evidence, ...]:
    if options.evidence == "gold" and anchor.evidence_ids:
        return reader.evidence(anchor.trace_id, list(anchor.evidence_ids))
    found = retrieved_evidence(
        anchor,
        reader.messages(anchor.trace_id),
        retriever=options.retriever,
        query_mode=options.retrieval_query,
        embed=options.embed,
        speakers=reader.speakers(anchor.trace_id),
    )
    seqs = reader.message_seqs(anchor.trace_id)
    return tuple(replace(e, seq=seqs[e.id]) for e in found)


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
    return Analysis(anchor, graph, trails, found_candidates, verdict)


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
    workers: int = 4,
) -> list[Verdict]:
    """Attribute cases in parallel (each case is a few small read queries); keeps input order."""
    reader = TraceReader(db)

    def one(case: tuple[str, str]) -> Verdict:
        verdict = attribute_case(reader, judge, case[0], case[1], options)
        if on_done is not None:
            on_done(verdict)
        return verdict

    if workers <= 1 or len(cases) <= 1:
        return [one(case) for case in cases]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, cases))


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


def run_attribution(
    db: Database,
    judge: Judge,
    options: Options,
    *,
    trace_id: str | None,
    case_ids: Sequence[str] = (),
    run_id: str | None = None,
    write: bool = True,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[Verdict], None] | None = None,
    workers: int = 8,
) -> tuple[str, list[Verdict]]:
    """Attribute the given cases (default: every failed case) and write them under a run id."""
    if case_ids:
        if trace_id is None:
            raise MemtraceError("--case needs --trace")
        cases = [(trace_id, case_id) for case_id in case_ids]
    else:
        cases = failed_cases(db, trace_id)
    if on_start is not None:
        on_start(len(cases))
    verdicts = attribute_cases(db, judge, cases, options, on_done=on_done, workers=workers)
    resolved = run_id or options.run_id(judge)
    if write:
        write_attributions(db, resolved, verdicts)
    return resolved, verdicts


def resolve_case(db: Database, case_id: str, trace_id: str | None) -> str:
    """The trace holding ``case_id``; an error when it is missing or ambiguous."""
    if trace_id is not None:
        return trace_id
    traces = [
        row["trace_id"] for row in db.run(get_query("attribution/find_case"), case_id=case_id)
    ]
    if not traces:
        raise MemtraceError(f"no complete trace has a case {case_id!r}")
    if len(traces) > 1:
        raise MemtraceError(f"case {case_id!r} is in several traces ({', '.join(traces)}): --trace")
    return str(traces[0])


def evaluation_rows(db: Database, run_id: str | None, trace_id: str | None) -> pd.DataFrame:
    """Labeled cases joined with a run's attributions, plus the whole-trace token estimate."""
    if run_id is None:
        latest = db.run(get_query("attribution/latest_run"))
        if not latest:
            raise MemtraceError("no attributions yet: run `memtrace attribute` first")
        run_id = str(latest[0]["run_id"])
    rows = pd.DataFrame(
        db.run(get_query("attribution/eval_rows"), run_id=run_id, trace_id=trace_id),
        columns=list(get_query("attribution/eval_rows").columns),
    )
    # Score the traces this run attributed; other loaded traces are not part of it.
    touched = rows.loc[rows["judge"].notna(), "trace_id"].unique()
    rows = rows[rows["trace_id"].isin(touched)].reset_index(drop=True)
    sizes = {
        tid: db.run(get_query("attribution/trace_size"), trace_id=tid)[0]["chars"]
        for tid in rows["trace_id"].unique()
    }
    rows["flat_tokens"] = rows["trace_id"].map(sizes).astype(float) / CHARS_PER_TOKEN
    rows.attrs["run_id"] = run_id
    return rows


def make_judge(name: str | None, settings: Settings, db: Database) -> Judge:
    """``offline``, ``llm``, or None: the LLM judge when an endpoint is configured, else offline."""
    if name is None:
        name = "llm" if settings.llm.base_url else "offline"
    if name == "offline":
        return OfflineJudge()
    if name == "llm":
        return LLMJudge(LLMClient.from_settings(settings), db)
    raise MemtraceError(f"unknown judge {name!r} (offline or llm)")


def embedder(settings: Settings, retriever: Retriever) -> Embed | None:
    """Dense retrieval embeds through the configured OpenAI-compatible endpoint."""
    if retriever == "bm25":
        return None
    client = LLMClient.from_settings(settings)
    model = os.environ.get("MEMTRACE_EMBEDDING_MODEL", "text-embedding-3-small")

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return client.embed(texts, model=model).vectors

    return embed
