"""`memtrace attribute`, `eval` and `explain`: thin commands over memtrace.attribution."""

from __future__ import annotations

import json
from typing import Any

import click
import pandas as pd
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from rich.tree import Tree

from memtrace.attribution.evaluate import score
from memtrace.attribution.graph import TraceReader
from memtrace.attribution.model import Verdict
from memtrace.attribution.run import (
    Analysis,
    Options,
    analyse_case,
    embedder,
    evaluation_rows,
    make_judge,
    memtrace_record,
    resolve_case,
    run_attribution,
)
from memtrace.cli.options import neo4j_options
from memtrace.cli.output import make_console
from memtrace.cypher import get_query
from memtrace.db import connect
from memtrace.settings import Settings

console = make_console()
err = make_console(stderr=True)

judge_option = click.option(
    "--judge",
    type=click.Choice(["offline", "llm"]),
    default=None,
    help="Default: llm when an LLM endpoint is configured, else offline.",
)
evidence_option = click.option(
    "--evidence",
    type=click.Choice(["gold", "retrieved"]),
    default="gold",
    show_default=True,
    help="Starting evidence: the case's gold evidence, or messages retrieved for the question.",
)
retriever_option = click.option(
    "--retriever", type=click.Choice(["bm25", "dense", "hybrid"]), default="bm25", show_default=True
)
retrieval_query_option = click.option(
    "--retrieval-query",
    type=click.Choice(["question", "question+answer"]),
    default="question+answer",
    show_default=True,
    help="The gold answer defines the failure, so it may help find the evidence (MemTrace's "
    "default); question alone finds less.",
)


def _options(
    evidence: str, strategy: str, retriever: str, query: str, settings: Settings
) -> Options:
    return Options(
        evidence=evidence,  # type: ignore[arg-type]
        strategy=strategy,  # type: ignore[arg-type]
        retriever=retriever,  # type: ignore[arg-type]
        retrieval_query=query,  # type: ignore[arg-type]
        embed=embedder(settings, retriever),  # type: ignore[arg-type]
    )


def _summary(run_id: str, verdicts: list[Verdict]) -> Table:
    table = Table(title=f"attribution run {run_id}: {len(verdicts)} cases")
    for column in ("error type", "cases", "llm calls", "tokens in", "tokens out"):
        table.add_column(column, justify="right" if column != "error type" else "left")
    groups: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        key = "(failed: " + verdict.error[:40] + ")" if verdict.error else str(verdict.error_type)
        groups.setdefault(key, []).append(verdict)
    for key, items in sorted(groups.items()):
        table.add_row(
            key,
            str(len(items)),
            str(sum(v.llm_calls for v in items)),
            str(sum(v.tokens_in for v in items)),
            str(sum(v.tokens_out for v in items)),
        )
    seconds = sum(v.seconds for v in verdicts)
    table.caption = f"{seconds:.2f} s of case work"
    return table


@click.command("attribute")
@click.option("--trace", "trace_id", help="Only this trace (default: every complete trace).")
@click.option("--all-failed", is_flag=True, help="Every failed case (the default without --case).")
@click.option("--case", "case_ids", multiple=True, help="Only these case ids (needs --trace).")
@judge_option
@evidence_option
@click.option(
    "--strategy", type=click.Choice(["linear", "binary"]), default="linear", show_default=True
)
@retriever_option
@retrieval_query_option
@click.option(
    "--run-id", help="Results replace this run's earlier ones [default: judge-evidence-strategy]."
)
@click.option("--workers", type=int, default=8, show_default=True, help="Cases in parallel.")
@click.option("--no-write", is_flag=True, help="Do not write :Attribution nodes.")
@click.option("--json", "as_json", is_flag=True, help="Print MemTrace-compatible JSON records.")
@neo4j_options
def attribute_command(settings: Settings, **args: Any) -> None:
    """Name the earliest decisive faulty operation and error type of failed cases."""
    options = _options(
        args["evidence"], args["strategy"], args["retriever"], args["retrieval_query"], settings
    )
    if args["case_ids"] and args["all_failed"]:
        raise click.UsageError("--case and --all-failed exclude each other")
    with connect(settings) as db:
        judge = make_judge(args["judge"], settings, db)
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            disable=args["as_json"],
        ) as bar:
            task = bar.add_task(f"attributing ({judge.name})", total=None)
            run_id, verdicts = run_attribution(
                db,
                judge,
                options,
                trace_id=args["trace_id"],
                case_ids=args["case_ids"],
                run_id=args["run_id"],
                write=not args["no_write"],
                on_start=lambda total: bar.update(task, total=total),
                on_done=lambda _: bar.advance(task),
                workers=args["workers"],
            )
    if args["as_json"]:
        click.echo(json.dumps([memtrace_record(v) for v in verdicts], indent=2, ensure_ascii=False))
        return
    console.print(_summary(run_id, verdicts))
    if not args["no_write"]:
        console.print(
            f"written as run [bold]{run_id}[/]; score it with `memtrace eval --run-id {run_id}`"
        )


def _frame_table(frame: pd.DataFrame, title: str) -> Table:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    return table


@click.command("eval")
@click.option("--run-id", help="The attribution run to score [default: the latest].")
@click.option("--trace", "trace_id", help="Only this trace.")
@click.option("--json", "as_json", is_flag=True)
@neo4j_options
def eval_command(
    settings: Settings, run_id: str | None, trace_id: str | None, as_json: bool
) -> None:
    """Score a run's attributions against the labels (and two baselines)."""
    with connect(settings) as db:
        rows = evaluation_rows(db, run_id, trace_id)
    scores = score(rows)
    resolved = rows.attrs["run_id"]
    if as_json:
        payload = {
            "run_id": resolved,
            "summary": scores.summary.to_dict(orient="records"),
            "by_type": scores.by_type.to_dict(orient="records"),
            "confusion": scores.confusion.to_dict(orient="index"),
        }
        click.echo(json.dumps(payload, indent=2, default=str))
        return
    short = {
        "attributed": "done",
        "op_accuracy": "op acc",
        "type_accuracy": "type acc",
        "stage_accuracy": "stage acc",
        "llm_calls_median": "calls p50",
        "tokens_per_case": "tokens/case",
        "seconds_per_case": "latency s",  # mean per case, cases run in parallel: not 1/throughput
    }
    summary = scores.summary.rename(columns=short)
    console.print(_frame_table(summary, f"run {resolved}: accuracy and cost per case"))
    console.print(_frame_table(scores.by_type, "by labeled error type"))
    console.print(_frame_table(scores.confusion.reset_index(), "confusion (label x predicted)"))


def _explain_tree(analysis: Analysis) -> Tree:
    anchor, verdict = analysis.anchor, analysis.verdict
    tree = Tree(f"[bold]case {anchor.case_id}[/] ({anchor.trace_id})")
    tree.add(f"question: {anchor.question}")
    tree.add(f"gold: {', '.join(anchor.golden_answers)}")
    tree.add(f"prediction: {anchor.prediction}")
    trails = tree.add("[bold]evidence trails[/]")
    for trail in analysis.trails:
        node = trails.add(f"{trail.message_id}: [italic]{trail.key_sentence}[/]")
        stop = (
            f" at {trail.stop.name or trail.stop.kind} {trail.stop.id} (#{trail.stop.seq})"
            if trail.stop
            else ""
        )
        node.add(f"{trail.stage}{stop}: {trail.detail}")
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
    return tree


def browser_cypher(trace_id: str, case_id: str, max_seq: int) -> str:
    """The explain view with :param lines, ready to paste into Neo4j Browser."""
    params = {"trace_id": trace_id, "case_id": case_id, "max_seq": max_seq}
    lines = [f":param {key} => {json.dumps(value)};" for key, value in params.items()]
    return "\n".join([*lines, get_query("attribution/explain_view").text])


@click.command("explain")
@click.argument("case_id")
@click.option("--trace", "trace_id", help="The case's trace (needed when the id is ambiguous).")
@judge_option
@evidence_option
@retriever_option
@retrieval_query_option
@click.option("--json", "as_json", is_flag=True)
@neo4j_options
def explain_command(settings: Settings, case_id: str, **args: Any) -> None:
    """Show a case's evidence trails, candidates and verdict, plus the Cypher to view it."""
    options = _options(
        args["evidence"], "linear", args["retriever"], args["retrieval_query"], settings
    )
    with connect(settings) as db:
        trace_id = resolve_case(db, case_id, args["trace_id"])
        judge = make_judge(args["judge"], settings, db)
        analysis = analyse_case(TraceReader(db), judge, trace_id, case_id, options)
    answer_seq = analysis.anchor.answer.seq if analysis.anchor.answer else 0
    cypher = browser_cypher(trace_id, case_id, answer_seq)
    if args["as_json"]:
        record = memtrace_record(analysis.verdict)
        record["trails"] = [
            {
                "message_id": t.message_id,
                "key_sentence": t.key_sentence,
                "stage": t.stage,
                "stop_op": t.stop.id if t.stop else None,
                "error_type": t.error_type,
                "detail": t.detail,
            }
            for t in analysis.trails
        ]
        record["candidates"] = [c.op.id for c in analysis.candidates]
        record["cypher"] = cypher
        click.echo(json.dumps(record, indent=2, ensure_ascii=False))
        return
    console.print(_explain_tree(analysis))
    console.print("\n[bold]Paste into Neo4j Browser:[/]")
    console.print(cypher, markup=False, highlight=False, soft_wrap=True)
