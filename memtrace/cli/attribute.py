"""`memtrace attribute`, `eval` and `explain`: thin commands over memtrace.attribution."""

from __future__ import annotations

import json
import time
from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from rich.tree import Tree

from memtrace.attribution import calibration
from memtrace.attribution.evaluate import score
from memtrace.attribution.evidence import EVIDENCE_MODES, RETRIEVAL_QUERIES, RETRIEVERS
from memtrace.attribution.judges import Judge
from memtrace.attribution.model import Verdict
from memtrace.attribution.pipeline import (
    Analysis,
    Options,
    Shard,
    analyse_case,
    evaluation_rows,
    failure_summary,
    has_labels,
    resolve_case,
    run_attribution,
    unscored_cases,
    untrailed_summary,
)
from memtrace.attribution.records import memtrace_record
from memtrace.attribution.registry import (
    AUTO,
    JUDGE_CHOICES,
    choose_judge,
    embedder,
    make_judge,
)
from memtrace.attribution.store import AttributionStore, explain_cypher
from memtrace.attribution.walk import STRATEGY_NAMES
from memtrace.cli.options import choice, llm_options, neo4j_options, replayer_option
from memtrace.cli.output import frame_table, make_console, strict_json
from memtrace.db import connect
from memtrace.errors import MemtraceError
from memtrace.reading import READERS, make_reader
from memtrace.replay.graph import LoadedTraces
from memtrace.settings import Settings
from memtrace.taxonomy import LABEL_SOURCES

console = make_console()
err = make_console(stderr=True)

judge_option = click.option(
    "--judge",
    type=click.Choice(JUDGE_CHOICES),
    default=AUTO,
    show_default=True,
    help="auto: replay (executed counterfactuals) where every trace of the run can be "
    "replayed, else hybrid (offline proposes, the LLM checks) when an LLM endpoint is "
    "configured, else offline. It says which it chose.",
)
evidence_option = click.option(
    "--evidence",
    type=click.Choice(EVIDENCE_MODES),
    default="gold",
    show_default=True,
    help="Starting evidence: the case's gold evidence, or messages retrieved for the question.",
)
retriever_option = click.option(
    "--retriever", type=click.Choice(RETRIEVERS), default="bm25", show_default=True
)
retrieval_query_option = click.option(
    "--retrieval-query",
    type=click.Choice(RETRIEVAL_QUERIES),
    default="question+answer",
    show_default=True,
    help="The gold answer defines the failure, so it may help find the evidence (MemTrace's "
    "default); question alone finds less.",
)
reading_option = click.option(
    "--reading",
    type=click.Choice(tuple(READERS)),
    help="How memories and contexts are read: by meaning (a small packaged model, the extra "
    "sentence-transformers) or by their words; auto reads a trace by its words where its "
    "memories copy its messages' words, else by meaning where the extra is installed "
    "[default: the settings' reading, MEMTRACE_READING, else auto].",
)


def _options(
    evidence: str,
    strategy: str,
    retriever: str,
    query: str,
    reading: str | None,
    settings: Settings,
) -> Options:
    chosen_retriever = choice(retriever, RETRIEVERS)
    return Options(
        reader=make_reader(choice(reading or settings.reading, tuple(READERS))),
        evidence=choice(evidence, EVIDENCE_MODES),
        strategy=choice(strategy, STRATEGY_NAMES),
        retriever=chosen_retriever,
        retrieval_query=choice(query, RETRIEVAL_QUERIES),
        embed=embedder(settings, chosen_retriever),
    )


def _judge(
    requested: str, settings: Settings, replayers: LoadedTraces, trace_ids: list[str], quiet: bool
) -> Judge:
    """The judge of a run (``choose_judge``), announced on stderr unless it was asked for."""
    choice = choose_judge(requested, settings, trace_ids, replayers.refusal)
    if requested == AUTO and not quiet:
        err.print(f"judge: {choice.name} ({escape(choice.why)})", highlight=False)
    return make_judge(choice.name, settings, replayers)


def _summary(run_id: str, verdicts: list[Verdict], wall_seconds: float) -> Table:
    table = Table(title=f"attribution run {run_id}: {len(verdicts)} cases")
    for column in ("error type", "cases", "llm calls", "tokens in", "tokens out", "replays"):
        table.add_column(column, justify="right" if column != "error type" else "left")
    groups: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        key = "(failed, reason below)" if verdict.error else str(verdict.error_type)
        groups.setdefault(key, []).append(verdict)
    for key, items in sorted(groups.items()):
        table.add_row(
            key,
            str(len(items)),
            str(sum(v.llm_calls for v in items)),
            str(sum(v.tokens_in for v in items)),
            str(sum(v.tokens_out for v in items)),
            str(sum(v.replays for v in items)),
        )
    # one figure, the wall time: the cases' own seconds overlap (they run in parallel)
    table.caption = f"took {wall_seconds:.1f} s"
    return table


def _shard(value: str | None) -> Shard | None:
    if value is None:
        return None
    index, _, count = value.partition("/")
    try:
        return Shard(int(index), int(count))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected I/N with 1 <= I <= N, e.g. 2/3") from None


@click.command("attribute")
@click.option("--trace", "trace_id", help="Only this trace (default: every complete trace).")
@click.option("--all-failed", is_flag=True, help="Every failed case (the default without --case).")
@click.option("--case", "case_ids", multiple=True, help="Only these case ids (needs --trace).")
@judge_option
@evidence_option
@click.option("--strategy", type=click.Choice(STRATEGY_NAMES), default="linear", show_default=True)
@retriever_option
@retrieval_query_option
@reading_option
@click.option(
    "--run-id", help="Results replace this run's earlier ones [default: judge-evidence-strategy]."
)
@click.option("--workers", type=int, default=8, show_default=True, help="Cases in parallel.")
@replayer_option
@click.option("--no-write", is_flag=True, help="Do not write :Attribution nodes.")
@click.option(
    "--resume",
    is_flag=True,
    help="Keep this run's verdicts of cases it already finished (e.g. before a crash); "
    "attribute only the rest.",
)
@click.option(
    "--shard",
    callback=lambda _ctx, _param, value: _shard(value),
    metavar="I/N",
    help="Only the cases of shard I of N (split by trace): run 1/N ... N/N on N machines.",
)
@click.option("--json", "as_json", is_flag=True, help="Print MemTrace-compatible JSON records.")
@neo4j_options
@llm_options
def attribute_command(
    settings: Settings,
    trace_id: str | None,
    all_failed: bool,
    case_ids: tuple[str, ...],
    judge: str,
    evidence: str,
    strategy: str,
    retriever: str,
    retrieval_query: str,
    reading: str | None,
    run_id: str | None,
    workers: int,
    replayer: str | None,
    no_write: bool,
    resume: bool,
    shard: Shard | None,
    as_json: bool,
) -> None:
    """Name the earliest decisive faulty operation and error type of failed cases."""
    if case_ids and all_failed:
        raise click.UsageError("--case and --all-failed exclude each other")
    if case_ids and trace_id is None:
        raise click.UsageError("--case needs --trace")
    options = _options(evidence, strategy, retriever, retrieval_query, reading, settings)
    if not as_json:
        err.print(f"reading: {options.reader.name}", highlight=False)
    cases = [(trace_id, case_id) for case_id in case_ids] if trace_id and case_ids else None
    with connect(settings) as db:
        store = AttributionStore(db)
        traces: list[str] = []
        if judge == AUTO:  # the traces the run covers
            traces = [trace_id] if trace_id else sorted({t for t, _ in store.failed_cases(None)})
        chosen = _judge(judge, settings, LoadedTraces(db, settings, replayer), traces, as_json)
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            disable=as_json,
            transient=True,  # the summary's caption says how long it took
        ) as bar:
            started = time.perf_counter()
            task = bar.add_task(f"attributing ({chosen.name})", total=None)
            resolved, verdicts = run_attribution(
                store,
                chosen,
                options,
                cases=cases,
                trace_id=trace_id,
                run_id=run_id,
                write=not no_write,
                on_start=lambda total: bar.update(task, total=total),
                on_done=lambda _: bar.advance(task),
                workers=workers,
                resume=resume,
                shard=shard,
            )
        wall_seconds = time.perf_counter() - started
        # named cases are attributed whatever their score; otherwise say what was never taken
        unscored = unscored_cases(store, trace_id) if cases is None else None
        written = not no_write and not as_json and bool(verdicts)
        next_step = _next_step(store, resolved, trace_id) if written else ""
    if as_json:
        records = [memtrace_record(v) for v in verdicts]
        records += [_unscored_record(*case) for case in (unscored.ids if unscored else [])]
        click.echo(strict_json(records))
    where = f"trace {trace_id!r}" if trace_id else "the complete traces"
    if unscored is not None and unscored.nothing_scored:  # unknown is not passed
        raise MemtraceError(f"nothing to attribute in {where}: {unscored.line()}")
    if unscored is not None and (line := unscored.line()):
        err.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)
    if not as_json and not verdicts:  # no failed case: nothing to do is not a failure
        console.print(
            f"run {resolved}: every case is already attributed, nothing to resume"
            if resume
            else f"no failed cases in {where}: nothing to attribute"
        )
        return
    if not as_json:
        console.print(_summary(resolved, verdicts, wall_seconds))
    untrailed = untrailed_summary(verdicts)
    if untrailed:
        err.print(f"[yellow]warning:[/] {escape(untrailed)}", highlight=False, soft_wrap=True)
    failures = failure_summary(verdicts)
    if failures and all(v.error for v in verdicts):
        raise MemtraceError(f"nothing attributed: {failures}")
    if failures:
        err.print(f"[yellow]warning:[/] {escape(failures)}", highlight=False, soft_wrap=True)
    if not no_write and not as_json:
        console.print(f"written as run [bold]{resolved}[/]; {next_step}")


def _next_step(store: AttributionStore, run_id: str, trace_id: str | None) -> str:
    """Where to go from a written run: scoring it where its cases have labels, else the
    classes and the review that makes labels (``eval`` would find nothing to score)."""
    if has_labels(store, run_id, trace_id):
        return f"score it with `memtrace eval --run-id {run_id}`"
    return (
        f"its failure classes: `memtrace patterns --run {run_id}`; no case has a label to score "
        "it against (`memtrace review` confirms or corrects verdicts, then `memtrace eval "
        "--labels human` scores them)"
    )


def _unscored_record(trace_id: str, case_id: str) -> dict[str, Any]:
    """A case attribution did not take because it has no score (in ``attribute --json``)."""
    return {
        "trace_id": trace_id,
        "case_id": case_id,
        "error_attribution_result": None,
        "unscored": True,
        "reason": "no judge_score or failed flag: neither attributed nor counted as passed",
    }


@click.command("eval")
@click.option("--run-id", help="The attribution run to score [default: the latest].")
@click.option("--trace", "trace_id", help="Only this trace.")
@click.option(
    "--labels",
    "label_source",
    type=click.Choice(LABEL_SOURCES),
    default=None,
    help="Score against the labels of this source [default: the source that labels most of "
    "the run's cases; the output names it].",
)
@click.option("--json", "as_json", is_flag=True)
@neo4j_options
def eval_command(
    settings: Settings,
    run_id: str | None,
    trace_id: str | None,
    label_source: str | None,
    as_json: bool,
) -> None:
    """Score a run's attributions against the labels (and two baselines)."""
    source = choice(label_source, LABEL_SOURCES) if label_source else None
    with connect(settings) as db:
        rows = evaluation_rows(AttributionStore(db), run_id, trace_id, source)
    scores = score(rows)
    resolved = rows.attrs["run_id"]
    used = rows.attrs["label_source"]
    if as_json:
        payload = {
            "run_id": resolved,
            "labels": used,
            "summary": scores.summary.to_dict(orient="records"),
            "by_type": scores.by_type.to_dict(orient="records"),
            "confusion": scores.confusion.to_dict(orient="index"),
        }
        click.echo(strict_json(payload))
        return
    short = {
        "attributed": "done",
        "errored": "errors",
        "op_accuracy": "op acc",
        "type_accuracy": "type acc",
        "stage_accuracy": "stage acc",
        "llm_calls_median": "calls p50",
        "tokens_per_case": "tokens/case",
        "seconds_per_case": "latency s",  # mean per case, cases run in parallel: not 1/throughput
    }
    summary = scores.summary.rename(columns=short)
    cases = len(rows.drop_duplicates(["trace_id", "case_id"]))
    counted = f"{cases} cases" + (f", {len(rows)} labels" if len(rows) != cases else "")
    chosen = "" if source else " (labelling most of its cases; --labels to choose)"
    width = console.width
    title = f"run {resolved} vs {used} labels{chosen}: {counted}; accuracy and cost per label"
    console.print(frame_table(summary, title, width))
    console.print(frame_table(scores.by_type, "by labeled error type", width))
    console.print(
        frame_table(scores.confusion.reset_index(), "confusion (label x predicted)", width)
    )


def _explain_tree(analysis: Analysis, system: str | None) -> Tree:
    anchor, verdict = analysis.anchor, analysis.verdict
    tree = Tree(f"[bold]case {anchor.case_id}[/] ({anchor.trace_id})")
    tree.add(f"question: {anchor.question}")
    tree.add(f"gold: {', '.join(anchor.golden_answers)}")
    tree.add(f"prediction: {anchor.prediction}")
    uncovered = [e.id for e in analysis.graph.evidence if not e.covers]
    if uncovered:
        tree.add(
            "[yellow]no retrieved message covers the gold answer[/]: followed the best-ranked "
            f"statement {', '.join(uncovered)}, which may not hold it"
        )
    trails = tree.add(f"[bold]evidence trails[/] (read: {verdict.reading or 'lexical'})")
    for trail in analysis.trails:
        role = "key sentence" if trail.role == "key" else f"holds {', '.join(trail.answer_words)}"
        unsure = "" if trail.sure else " [yellow](the reader cannot tell)[/]"
        node = trails.add(f"{trail.message_id} ({role}): [italic]{trail.key_sentence}[/]{unsure}")
        stop = (
            f" at {trail.stop.name or trail.stop.kind} {trail.stop.id} (#{trail.stop.seq})"
            if trail.stop
            else ""
        )
        spared = "" if trail.needed else " (its gold-answer words reached the context anyway)"
        node.add(f"{trail.stage}{stop}: {trail.detail}{spared}")
        if trail.holders:
            node.add(f"held by {', '.join(trail.holders[:4])}")
    checked = set(verdict.checked)
    candidates = tree.add("[bold]candidates[/] (execution order)")
    for candidate in analysis.candidates:
        mark = (
            "*"
            if candidate.op.id == verdict.op_id
            else ("checked" if candidate.op.id in checked else "")
        )
        candidates.add(
            f"#{candidate.op.seq} {candidate.op.kind} {candidate.op.id} ({candidate.role}) {mark}"
        )
    tree.add(
        f"[bold]verdict[/]: {verdict.error_type} at {verdict.op_id} "
        f"(judge {verdict.judge}, confidence {verdict.confidence:.2f}) - {verdict.reason}"
    )
    tree.add(f"confidence: {calibration.describe(verdict.judge, system)}")
    if verdict.replay_outcomes:
        tree.add(_replay_tree(json.loads(verdict.replay_outcomes)))
    if verdict.overridden_from:
        tree.add(
            f"[bold]overridden[/]: the offline proposal was {verdict.overridden_type} at "
            f"{verdict.overridden_from}"
        )
    return tree


def _replay_tree(outcomes: dict[str, Any]) -> Tree:
    """The replay judge's executed counterfactuals, one line per candidate: whether its repair
    (with the later ones) puts the evidence into the answer's context (the label's question),
    and what your answerer then does (rescued with your answerer)."""
    node = Tree(f"[bold]replays[/] ({outcomes['replays']}; {outcomes['status']})")
    yours = outcomes.get("with_your_answerer")
    if yours:
        where = f"{yours['error_type']} at {yours['op_id']}" if yours["op_id"] else "no single op"
        node.add(f"[bold]with your answerer[/]: {where} ({yours['status']})")
    for c in outcomes["candidates"]:
        reach = {True: "evidence in context", False: "evidence not in context", None: "not run"}
        downstream = {True: "rescued", False: "still wrong", None: "not run"}[c["downstream"]]
        alone = "rescued" if c["alone"] else "still wrong"
        mark = " [bold]decisive[/]" if c["decisive"] else ""
        mark += " [bold]rescues your answer[/]" if c.get("rescued") else ""
        changed = escape(c["changed"]) if c["changed"] else "repair changed nothing"
        node.add(
            f"{c['op_id']}{mark}: with later ones repaired {reach[c.get('context')]}, your "
            f"answerer {downstream}; alone {alone}; {changed}"
        )
    return node


@click.command("explain")
@click.argument("case_id")
@click.option("--trace", "trace_id", help="The case's trace (needed when the id is ambiguous).")
@judge_option
@evidence_option
@retriever_option
@retrieval_query_option
@reading_option
@replayer_option
@click.option("--json", "as_json", is_flag=True)
@neo4j_options
@llm_options
def explain_command(
    settings: Settings,
    case_id: str,
    trace_id: str | None,
    judge: str,
    evidence: str,
    retriever: str,
    retrieval_query: str,
    reading: str | None,
    replayer: str | None,
    as_json: bool,
) -> None:
    """Show a case's evidence trails, candidates and verdict, plus the Cypher to view it."""
    options = _options(evidence, "linear", retriever, retrieval_query, reading, settings)
    with connect(settings) as db:
        store = AttributionStore(db)
        resolved = resolve_case(store, case_id, trace_id)
        replayers = LoadedTraces(db, settings, replayer)
        chosen = _judge(judge, settings, replayers, [resolved], as_json)
        analysis = analyse_case(store, chosen, resolved, case_id, options)
        system = store.trace_system(resolved)
    answer_seq = analysis.anchor.answer.seq if analysis.anchor.answer else 0
    started = [e.id for e in analysis.graph.evidence]  # where the judge started
    cypher = explain_cypher(resolved, case_id, answer_seq, started)
    if as_json:
        record = memtrace_record(analysis.verdict)
        record["trails"] = [
            {
                "message_id": t.message_id,
                "key_sentence": t.key_sentence,
                "role": t.role,
                "answer_words": list(t.answer_words),
                "needed": t.needed,
                "sure": t.sure,
                "stage": t.stage,
                "stop_op": t.stop.id if t.stop else None,
                "error_type": t.error_type,
                "detail": t.detail,
            }
            for t in analysis.trails
        ]
        record["candidates"] = [c.op.id for c in analysis.candidates]
        record["confidence_scale"] = calibration.scale(analysis.verdict.judge, system)
        record["cypher"] = cypher
        click.echo(strict_json(record))
        return
    console.print(_explain_tree(analysis, system))
    console.print("\n[bold]Paste into Neo4j Browser:[/]")
    console.print(cypher, markup=False, highlight=False, soft_wrap=True)
