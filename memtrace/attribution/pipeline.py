"""Attribute failed cases: read each case from the store, walk the candidates, write verdicts.

The pipeline is the only attribution module that combines the store (I/O) with the pure parts
(evidence retrieval, trails, judges, walks, scoring).
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pandas as pd

from memtrace.attribution.evaluate import CHARS_PER_TOKEN
from memtrace.attribution.evidence import (
    Embed,
    EvidenceMode,
    RetrievalQuery,
    Retriever,
    retrieved_evidence,
)
from memtrace.attribution.judges import CONFIDENCE_NO_TRAIL, NO_TRAIL, CaseView, Judge
from memtrace.attribution.model import (
    Anchor,
    Candidate,
    CaseGraph,
    CaseScores,
    Evidence,
    Trail,
    Verdict,
)
from memtrace.attribution.store import AttributionStore
from memtrace.attribution.trails import candidates, trace_all
from memtrace.attribution.walk import Strategy, search
from memtrace.errors import JudgeError, LLMError, MemtraceError, Neo4jUnavailableError
from memtrace.reading import LEXICAL, Reader
from memtrace.taxonomy import (
    ANNOTATION_ONLY_TYPES,
    LABEL_SOURCES,
    STORED_SOURCES,
    LabelSource,
    is_reserved_trace_id,
)
from memtrace.usage import Usage


@dataclass(frozen=True)
class Options:
    evidence: EvidenceMode = "gold"
    strategy: Strategy = "linear"
    retriever: Retriever = "bm25"
    retrieval_query: RetrievalQuery = "question+answer"
    embed: Embed | None = None
    reader: Reader = LEXICAL  # how the trails read memories and contexts (``memtrace.reading``)

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
    store: AttributionStore, anchor: Anchor, options: Options
) -> tuple[Evidence, ...]:
    if options.evidence == "gold" and anchor.evidence_ids:
        return store.evidence(anchor.trace_id, list(anchor.evidence_ids))
    messages = store.messages(anchor.trace_id)
    found = retrieved_evidence(
        anchor,
        messages.corpus,
        retriever=options.retriever,
        query_mode=options.retrieval_query,
        embed=options.embed,
        speakers=messages.speakers,
        dates=messages.dates,
    )
    return tuple(replace(e, seq=messages.seqs[e.id]) for e in found)


def case_candidates(
    store: AttributionStore, trace_id: str, case_id: str, options: Options
) -> tuple[CaseGraph, tuple[Trail, ...], tuple[Candidate, ...]]:
    """A case's subgraph, its evidence trails and its candidate operations (no judge yet)."""
    anchor = store.anchor(trace_id, case_id)
    if anchor is None:
        raise MemtraceError(f"no case {case_id!r} in a complete trace {trace_id!r}")
    if anchor.answer is None:
        raise MemtraceError(f"case {case_id!r}: no answer operation reads its question")
    evidence = starting_evidence(store, anchor, options)
    graph = store.case_graph(anchor, evidence)
    trails = tuple(trace_all(graph, case_reader(options, graph)))
    return graph, trails, tuple(candidates(graph, trails))


def case_reader(options: Options, graph: CaseGraph) -> Reader:
    """The reader the case is read with: the chosen one, for the case's trace (``auto`` reads
    a statement copying a sentence of the trace's messages by its words)."""
    return options.reader.for_trace(graph.copying)


def analyse_case(
    store: AttributionStore, judge: Judge, trace_id: str, case_id: str, options: Options
) -> Analysis:
    started = time.perf_counter()
    graph, trails, found_candidates = case_candidates(store, trace_id, case_id, options)
    anchor = graph.anchor
    # One query for every candidate's view, and only for judges that read them.
    operations = (
        store.operation_views(trace_id, [c.op.id for c in found_candidates])
        if judge.reads_operations
        else {}
    )
    reader = case_reader(options, graph)
    view = CaseView(graph, trails, operations, reader)
    found = search(options.strategy, judge, view, found_candidates)
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
        overridden_from=found.overridden_from.op.id if found.overridden_from else None,
        overridden_type=found.overridden_type if found.overridden_from else None,
        replays=found.replays,
        replay_outcomes=found.outcomes,
        failure_mode=found.failure_mode,
        reading=reader.name,
    )
    return Analysis(anchor, graph, trails, found_candidates, verdict)


def attribute_case(
    store: AttributionStore, judge: Judge, trace_id: str, case_id: str, options: Options
) -> Verdict:
    """One case; a failure is recorded on the verdict (``error``) instead of stopping a run."""
    started = time.perf_counter()
    try:
        return analyse_case(store, judge, trace_id, case_id, options).verdict
    except Neo4jUnavailableError:
        raise  # the database is gone: every further case would wait out the driver's retries
    except MemtraceError as exc:
        # What a failed case cost is counted too (requests sent, tokens, what was checked).
        usage = exc.usage if isinstance(exc, LLMError) and exc.usage else Usage()
        return Verdict(
            trace_id,
            case_id,
            None,
            None,
            f"attribution failed: {exc}",
            judge.name,
            judge.model,
            llm_calls=usage.calls,
            tokens_in=usage.tokens_in,
            tokens_out=usage.tokens_out,
            seconds=time.perf_counter() - started,
            strategy=options.strategy,
            evidence=options.evidence,
            error=str(exc),
            checked=exc.checked if isinstance(exc, JudgeError) else [],
        )


def attribute_cases(
    store: AttributionStore,
    judge: Judge,
    cases: Sequence[tuple[str, str]],
    options: Options,
    on_done: Callable[[Verdict], None] | None = None,
    workers: int = 4,
) -> list[Verdict]:
    """Attribute cases in parallel (each case is a few small read queries); keeps input order."""

    def one(case: tuple[str, str]) -> Verdict:
        verdict = attribute_case(store, judge, case[0], case[1], options)
        if on_done is not None:
            on_done(verdict)
        return verdict

    if workers <= 1 or len(cases) <= 1:
        return [one(case) for case in cases]
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return list(pool.map(one, cases))
    finally:  # after an error, the queued cases are dropped instead of run
        pool.shutdown(wait=True, cancel_futures=True)


WRITE_EVERY = 8  # verdicts per write: what a crash can lose, and one round trip per group


def run_attribution(
    store: AttributionStore,
    judge: Judge,
    options: Options,
    *,
    cases: Sequence[tuple[str, str]] | None = None,
    trace_id: str | None = None,
    run_id: str | None = None,
    write: bool = True,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[Verdict], None] | None = None,
    workers: int = 8,
    resume: bool = False,
    shard: Shard | None = None,
) -> tuple[str, list[Verdict]]:
    """Attribute ``cases`` (default: every failed case, of ``trace_id`` when given) and write
    them under a run id as they finish, in groups of ``WRITE_EVERY``, so a crash keeps the
    finished ones. With ``resume`` the cases this run already attributed without an error are
    skipped (and not returned); with ``shard`` only the cases of that shard's traces."""
    if trace_id is not None:
        require_complete_trace(store, trace_id)
    if cases is None:
        cases = store.failed_cases(trace_id)
    if shard is not None:
        cases = [case for case in cases if shard.holds(case[0])]
    resolved = run_id or options.run_id(judge)
    if resume:
        finished = store.finished_cases(resolved)
        cases = [case for case in cases if case not in finished]
    if on_start is not None:
        on_start(len(cases))
    pending: list[Verdict] = []
    lock = threading.Lock()

    def done(verdict: Verdict) -> None:
        if write:
            with lock:
                pending.append(verdict)
                if len(pending) >= WRITE_EVERY:
                    store.write_attributions(resolved, pending)
                    pending.clear()
        if on_done is not None:
            on_done(verdict)

    verdicts = attribute_cases(store, judge, cases, options, on_done=done, workers=workers)
    if write and pending:
        store.write_attributions(resolved, pending)
    return resolved, verdicts


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based): the traces whose id hashes to it. Machines that
    run ``attribute --shard 1/3``, ``2/3`` and ``3/3`` split the cases by trace, each case once."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index}/{self.count}: expected 1 <= i <= n")

    def holds(self, trace_id: str) -> bool:
        # crc32, not hash(): the same on every machine and in every process
        return zlib.crc32(trace_id.encode()) % self.count == self.index - 1


NAMED_UNSCORED = 5  # case ids a line names


@dataclass(frozen=True)
class Unscored:
    """Cases without a score (no judge_score, no failed flag) among those a run could take:
    attribution takes only failed cases, so these are neither attributed nor passed."""

    scores: tuple[CaseScores, ...]

    @property
    def cases(self) -> int:
        return sum(trace.cases for trace in self.scores)

    @property
    def ids(self) -> list[tuple[str, str]]:
        return [(trace.trace_id, case) for trace in self.scores for case in trace.unscored]

    @property
    def nothing_scored(self) -> bool:
        """Cases exist and not one has a score: there is nothing attribution could do."""
        return self.cases > 0 and len(self.ids) == self.cases

    def line(self) -> str | None:
        """One line counting and naming them (None when every case has a score)."""
        ids = self.ids
        if not ids:
            return None
        named = ", ".join(case for _, case in ids[:NAMED_UNSCORED])
        more = f" and {len(ids) - NAMED_UNSCORED} more" if len(ids) > NAMED_UNSCORED else ""
        whole = [t.trace_id for t in self.scores if t.cases and len(t.unscored) == t.cases]
        traces = f"; every case of {', '.join(whole)}" if whole and not self.nothing_scored else ""
        return (
            f"{len(ids)} of {self.cases} cases have no score (no judge_score or failed), so they "
            f"were neither attributed nor counted as passed: {named}{more}{traces}. Record "
            "judge_score= (0 = wrong) or failed= on each case; `memtrace check TRACE_FILE` "
            "lists them"
        )


def unscored_cases(store: AttributionStore, trace_id: str | None) -> Unscored:
    """The cases of ``trace_id`` (or of every complete trace) that have no score."""
    return Unscored(tuple(store.case_scores(trace_id)))


def require_complete_trace(store: AttributionStore, trace_id: str) -> None:
    """Refuse a trace that does not exist or whose load has not completed."""
    state = store.trace_state(trace_id)
    if state is None:
        raise MemtraceError(f"no trace {trace_id!r}; `memtrace db stats` lists the loaded traces")
    if is_reserved_trace_id(trace_id):
        raise MemtraceError(
            f"{trace_id!r} is a copy a re-load of another trace wrote ({state}), never read as a "
            "trace; give that trace's own id (`memtrace db stats` lists both)"
        )
    if state != "complete":
        raise MemtraceError(
            f"trace {trace_id!r} is {state}: its load is still running or was interrupted; "
            f"load it again (or remove it with `memtrace db delete --trace {trace_id}`)"
        )


def failure_summary(verdicts: Sequence[Verdict]) -> str | None:
    """One line saying how many cases failed and why (each distinct reason in full)."""
    reasons: dict[str, int] = {}
    for verdict in verdicts:
        if verdict.error:
            reasons[verdict.error] = reasons.get(verdict.error, 0) + 1
    if not reasons:
        return None
    failed = sum(reasons.values())
    why = "; ".join(f"{reason} (x{n})" if n > 1 else reason for reason, n in reasons.items())
    return f"{failed} of {len(verdicts)} cases failed: {why}"


def untrailed_summary(verdicts: Sequence[Verdict]) -> str | None:
    """The finding that decided verdicts resting on no evidence trail, with its fix (``None``
    when every verdict followed one)."""
    cases = [v.case_id for v in verdicts if v.reason.startswith(NO_TRAIL)]
    if not cases:
        return None
    named = ", ".join(cases[:3]) + (f" and {len(cases) - 3} more" if len(cases) > 3 else "")
    return (
        f"{len(cases)} of {len(verdicts)} verdicts rest on no evidence trail ({named}): their "
        "evidence is in no message of the trace, so each is blamed on the answer at confidence "
        f"{CONFIDENCE_NO_TRAIL}; record the conversation's messages (category 'message') and "
        "each case's evidence (`memtrace check` names what is missing; requests of one user "
        "or session load as one timeline with --timelines)"
    )


def resolve_case(store: AttributionStore, case_id: str, trace_id: str | None) -> str:
    """The trace holding ``case_id``; an error when it is missing or ambiguous."""
    if trace_id is not None:
        return trace_id
    traces = store.traces_with_case(case_id)
    if not traces:
        raise MemtraceError(f"no complete trace has a case {case_id!r}")
    if len(traces) > 1:
        raise MemtraceError(f"case {case_id!r} is in several traces ({', '.join(traces)}): --trace")
    return traces[0]


def has_labels(store: AttributionStore, run_id: str, trace_id: str | None = None) -> bool:
    """Whether run ``run_id`` attributed a case with a label ``evaluation_rows`` scores (so
    that ``memtrace eval`` is worth suggesting)."""
    rows = store.evaluation_rows(run_id, trace_id)
    return bool((rows["judge"].notna() & ~rows["label_type"].isin(ANNOTATION_ONLY_TYPES)).any())


def evaluation_rows(
    store: AttributionStore,
    run_id: str | None,
    trace_id: str | None,
    label_source: LabelSource | None = None,
) -> pd.DataFrame:
    """Labels joined with a run's attributions, plus the whole-trace token estimate.

    Labels of one source: ``label_source``, else the source that labels most of the run's cases
    (``rows.attrs["label_source"]`` says which), so that a case labelled by planted faults and a
    replay is not counted twice. One row per label of it: a case several human reviewers labelled
    (each reviewer's latest review) is scored once against each. Labels of the annotation-only
    types (AnnotationError, LLMAsAJudgeError: not a memory failure) are left out.
    """
    if run_id is None:
        run_id = store.latest_run()
        if run_id is None:
            raise MemtraceError("no attributions yet: run `memtrace attribute` first")
    elif not store.run_exists(run_id):
        latest = store.latest_run()
        hint = f" (the latest run is {latest!r})" if latest else " (no attributions yet)"
        raise MemtraceError(f"no attribution run {run_id!r}{hint}")
    if trace_id is not None:
        require_complete_trace(store, trace_id)
    rows = store.evaluation_rows(run_id, trace_id, label_source)
    # Score the cases this run attempted (errored ones included: they count as wrong); labeled
    # cases it never tried (a run over some --case ids) are not part of it.
    attempted = rows["judge"].notna() & ~rows["label_type"].isin(ANNOTATION_ONLY_TYPES)
    rows = rows[attempted].reset_index(drop=True)
    sizes = store.trace_sizes(list(rows["trace_id"].unique()))
    rows["flat_tokens"] = rows["trace_id"].map(sizes).astype(float) / CHARS_PER_TOKEN
    if rows.empty:
        where = f" in trace {trace_id!r}" if trace_id else ""
        labels = f"{label_source} " if label_source else ""
        hint = (
            "confirm or correct its verdicts with `memtrace review`"
            if label_source == "human"
            else "labels come with the trace, e.g. from `memtrace bench make`"
        )
        raise MemtraceError(
            f"run {run_id!r} attributed no case with a {labels}label{where}: nothing to score "
            f"against ({hint})"
        )
    if label_source is None:
        label_source = _main_source(rows)
        rows = rows[rows["label_source"].isin(STORED_SOURCES[label_source])]
        rows = rows.reset_index(drop=True)
    rows.attrs["run_id"] = run_id
    rows.attrs["label_source"] = label_source
    return rows


def _main_source(rows: pd.DataFrame) -> LabelSource:
    """The label source that labels most of the run's cases (ties: ``LABEL_SOURCES`` order):
    scoring against every source at once would count a case once per source."""
    covered = {
        source: len(
            rows[rows["label_source"].isin(stored)].drop_duplicates(["trace_id", "case_id"])
        )
        for source, stored in STORED_SOURCES.items()
    }
    return max(LABEL_SOURCES, key=lambda source: (covered[source], -LABEL_SOURCES.index(source)))
