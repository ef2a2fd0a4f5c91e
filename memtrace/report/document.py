"""The report as a small document model, built once and rendered to HTML and to Markdown.

Building is pure (ReportData in, Document out), so both formats say exactly the same things.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

import pandas as pd

from memtrace.patterns import with_headroom
from memtrace.patterns.classes import class_key
from memtrace.patterns.export import for_people
from memtrace.patterns.reader import pattern_query
from memtrace.report.charts import Chart
from memtrace.report.data import ReportData

EXCERPT = 280  # characters of a variable's value shown in a case
SHOWN_CLASSES_TABLE = 50


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Facts:
    items: list[tuple[str, str]]


@dataclass(frozen=True)
class TableBlock:
    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Figure:
    chart: Chart


@dataclass(frozen=True)
class Code:
    text: str
    link: str | None = None  # opens the text in Neo4j Browser's editor
    language: str = "cypher"


@dataclass(frozen=True)
class Items:
    """A bullet list of (label, text) pairs; a list of texts becomes a nested list."""

    items: list[tuple[str, str | list[str]]]


@dataclass(frozen=True)
class Bullets:
    items: list[str]


Block = Paragraph | Facts | TableBlock | Figure | Code | Items | Bullets


@dataclass
class Section:
    id: str
    title: str
    level: int = 2
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class Document:
    title: str
    sections: list[Section]


def excerpt(value: object, limit: int = EXCERPT) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fmt(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "-"
    if isinstance(value, float):
        return "-" if value != value else f"{value:.2f}"
    return "-" if value is None else str(value)


def _share(value: float) -> str:
    return "-" if value != value else f"{value:.0%}"


def table(frame: pd.DataFrame, columns: Sequence[str], shares: Sequence[str] = ()) -> TableBlock:
    rows = [
        [_share(float(row[c])) if c in shares else _fmt(row[c]) for c in columns]
        for row in frame.to_dict(orient="records")
    ]
    return TableBlock([c.replace("_", " ") for c in columns], rows)


def case_params(run_id: str, trace_id: str, case_id: str) -> str:
    """The Browser command that sets the case view's parameters."""
    values = {"run_id": run_id, "trace_id": trace_id, "case_id": case_id}
    return ":params {" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in values.items()) + "}"


def browser_link(browser_url: str | None, params: str) -> str | None:
    """Opens the Browser with the parameters in the editor: Browser 5 shows only a summary for
    each statement of a multi-statement run, so the parameters and the query run one by one."""
    if browser_url is None:
        return None
    arg = quote(params.removeprefix(":params "), safe="")
    return f"{browser_url.rstrip('/')}/?cmd=params&arg={arg}"


def _summary(data: ReportData) -> Section:
    totals = data.summary.select_dtypes("number").sum() if not data.summary.empty else None
    section = Section("summary", "Summary")

    def total(column: str) -> int:
        return int(totals[column]) if totals is not None else 0

    labeled = total("labeled")
    accuracy = (
        f"{total('op_matches') / labeled:.0%} operation, {total('type_matches') / labeled:.0%} "
        f"error type ({labeled} labeled cases)"
        if labeled
        else "no labels in these traces"
    )
    section.blocks.append(
        Facts(
            [
                ("attribution run", data.run_id),
                ("systems", ", ".join(map(str, data.summary.get("system", []))) or "-"),
                ("traces", str(total("traces"))),
                ("cases", str(total("cases"))),
                ("failed", str(total("failed"))),
                ("attributed", str(total("attributed"))),
                ("attribution failed", str(total("attribution_errors"))),
                ("failure classes", str(len(data.classes))),
                ("agreement with labels", accuracy),
            ]
        )
    )
    if not data.summary.empty:
        section.blocks.append(
            table(
                data.summary,
                [
                    "system",
                    "traces",
                    "cases",
                    "failed",
                    "attributed",
                    "blamed",
                    "attribution_errors",
                    "labeled",
                    "op_matches",
                    "type_matches",
                ],
            )
        )
    return section


def _start_here(data: ReportData) -> Section:
    """The answer first: the class to fix first (by net headroom when the what-if was measured,
    else by cases), what it would buy, the inputs to change, one case and the commands."""
    section = Section("start-here", "Start here")
    if data.classes.empty:
        section.blocks.append(Paragraph("No attributed failures in this run: nothing to fix."))
        return section
    measured = not data.headroom.empty and data.what_if is not None
    ranked = with_headroom(data.classes, data.headroom) if measured else data.classes
    if measured:
        ranked = ranked.sort_values(["net", "cases"], ascending=False, na_position="last")
    first = ranked.iloc[0].to_dict()
    index = 1 + next((n for n, key in enumerate(_keys(data.classes)) if key == class_key(first)), 0)
    failed = int(data.summary["failed"].sum()) if "failed" in data.summary else 0
    facts = [
        (
            "fix first",
            f"{first['system']} {first['op_name']} - {first['error_type']} "
            f"({first['cases']} of {failed} failed cases)",
        )
    ]
    if measured and first.get("net") is not None and first["net"] == first["net"]:
        delta = first.get("accuracy_delta")
        facts.append(
            (
                "what fixing it buys",
                f"net {int(first['net']):+d} answers ({first['rescued']} rescued, "
                f"{first['also_rescued']} more on the way, {first['broken']} broken"
                + (f"; {float(delta):+.1%} accuracy" if isinstance(delta, float) else "")
                + ")",
            )
        )
        share = first.get("fix_alone_share")
        if share is not None and share == share:
            facts.append(("fixed alone", f"{float(share):.0%} of its cases need no other fix"))
    else:
        facts.append(
            (
                "ranked by",
                f"cases (what fixing it buys is not measured: `memtrace patterns --run "
                f"{data.run_id} --what-if`)",
            )
        )
    inputs = first.get("inputs") or []
    facts.append(
        (
            "inputs to change",
            ", ".join(map(str, inputs))
            if inputs
            else "none: it reads no prompt or parameter, so its code (or model) must change",
        )
    )
    refs = first.get("case_refs") or []
    if refs:
        trace_id, case_id = (str(part) for part in refs[0])
        facts.append(("one case", f"{case_id} (trace {trace_id}), in class {index} below"))
    section.blocks.append(Facts(facts))
    commands = []
    if refs:
        commands.append(f"memtrace explain {case_id} --trace {trace_id}   # why this case failed")
    if inputs:
        mode = "parameters" if first.get("parameters") else "prompts"
        commands.append(
            f"memtrace optimize {first['system']} --mode {mode} --route-by headroom "
            "--train 1,2,3 --heldout 4,5,6   # your conversation split"
        )
    commands.append(f"memtrace review --run {data.run_id}   # confirm or correct the verdicts")
    section.blocks.append(Code("\n".join(commands), language="bash"))
    return section


def _keys(classes: pd.DataFrame) -> list[str]:
    return [class_key(row) for row in classes.to_dict(orient="records")]


def readable(value: object) -> str:
    """A stored value as a person reads it: a JSON object's fields as ``key: value`` pairs, a
    JSON list's items joined; anything else as it is."""
    text = "" if value is None else str(value)
    try:
        return _spelled(json.loads(text))
    except ValueError:
        return text


def _spelled(value: object) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_spelled(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_spelled(item) for item in value) or "(empty list)"
    return str(value)


def _case_items(case: Mapping[Hashable, object]) -> list[tuple[str, str | list[str]]]:
    def variables(key: str) -> str | list[str]:
        values = case[key]
        assert isinstance(values, list)
        shown = [f"{v['id']}: {excerpt(readable(v['value']), 160)}" for v in values if v.get("id")]
        return shown or "-"

    confidence = case["confidence"]
    return [
        ("question", excerpt(case["question"])),
        ("gold answer", _fmt(case["golden_answers"])),
        ("prediction", excerpt(case["prediction"])),
        ("verdict", f"{case['error_type']} at {case['op_id']} ({case['op_name']})"),
        ("confidence", _fmt(confidence)),
        ("reason", excerpt(case["reason"], 600)),
        ("blamed operation read", variables("op_inputs")),
        ("blamed operation wrote", variables("op_outputs")),
        ("evidence", variables("evidence")),
    ]


def _class_section(index: int, row: Mapping[Hashable, object], data: ReportData) -> Section:
    title = f"Class {index}: {row['system']} {row['op_name']} - {row['error_type']}"
    section = Section(f"class-{index}", title)
    inputs = row["inputs"]
    section.blocks.append(
        Facts(
            [
                ("cases", str(row["cases"])),
                ("share of the system's failures", _share(float(str(row["share_of_failures"])))),
                (
                    "share of the operation's executions blamed",
                    _share(float(str(row["share_of_executions"]))),
                ),
                ("stage", str(row["stage"])),
                ("median confidence", _fmt(row["median_confidence"])),
                ("inputs read", _fmt(inputs) if inputs else "no optimizable input"),
            ]
        )
    )
    refs = row["case_refs"]
    assert isinstance(refs, list)
    details = {(str(d["trace_id"]), str(d["case_id"])): d for d in data.examples.to_dict("records")}
    for trace_id, case_id in refs[:3]:
        case = details.get((trace_id, case_id))
        if case is None:
            continue
        section.blocks.append(Paragraph(f"Case {case_id} (trace {trace_id})"))
        section.blocks.append(Items(_case_items(case)))
        params = case_params(data.run_id, trace_id, case_id)
        section.blocks.append(
            Paragraph(
                "In Neo4j Browser, run these parameters, then the case view query "
                "(section 'Open a case in Neo4j Browser'):"
            )
        )
        section.blocks.append(Code(params, browser_link(data.browser_url, params)))
    return section


def _case_view() -> Section:
    """The case view query, once for every case above (each case gives its parameters)."""
    return Section(
        "case-view",
        "Open a case in Neo4j Browser",
        blocks=[
            Paragraph(
                "Set a case's parameters (each example case above lists them), then run this "
                "query: the case's question, answer, verdict and the blamed operation's "
                "neighbourhood."
            ),
            Code(pattern_query("case_view").text),
        ],
    )


@dataclass(frozen=True)
class NarrativeText:
    """The LLM's analysis, or why there is none although it was asked for."""

    summary: str
    findings: list[str]
    model: str
    error: str | None = None


def _narrative(narrative: NarrativeText) -> Section:
    section = Section("narrative", "Analysis")
    if narrative.error is not None:
        section.blocks.append(Paragraph(f"The written analysis failed: {narrative.error}"))
        return section
    section.blocks.append(Paragraph(narrative.summary))
    section.blocks.append(Bullets(narrative.findings))
    section.blocks.append(Paragraph(f"Written by {narrative.model} from the numbers above."))
    return section


def _headroom(data: ReportData) -> Section:
    """What fixing each class would buy (the stored executed what-if), or how to measure it."""
    section = Section("what-fixing-buys", "What fixing each class would buy")
    if data.headroom.empty or data.what_if is None:
        section.blocks.append(
            Paragraph(
                "Not measured for this run: `memtrace patterns --run "
                f"{data.run_id} --what-if` replays each class with its blamed operations "
                "repaired and stores what it would buy."
            )
        )
        return section
    run = data.what_if
    section.blocks.append(
        Paragraph(
            "Each class replayed with every blamed operation of its cases repaired (the replay "
            "engine's oracle repairs; an answer step's oracle is the gold answer) and the rest "
            "of the system as it is: cases of the class rescued, other failed cases rescued on "
            "the way, passing answers broken, and the net change of accuracy. Fix alone: the "
            "share of its cases that their own repair alone rescues."
        )
    )
    joint = run.get("joint_keys") or []
    assert isinstance(joint, list)
    named = {  # a class key holds its inputs too: a reader knows a class by op and type
        str(row["key"]): f"{row['system']} {row['op_name']} - {row['error_type']}"
        for row in data.headroom.to_dict(orient="records")
    }
    total = run.get("total_cases")
    delta = run.get("joint_accuracy_delta")
    section.blocks.append(
        Facts(
            [
                (
                    f"top {len(joint)} classes repaired together",
                    f"{run.get('joint_rescued')} rescued, {run.get('joint_broken')} broken, "
                    f"net {run.get('joint_net'):+} "
                    f"({delta:+.1%} of {total} cases)"
                    if joint and isinstance(delta, float)
                    else "-",
                ),
                ("classes together", "; ".join(named.get(str(k), str(k)) for k in joint) or "-"),
                ("system runs replayed", str(run.get("replays"))),
                ("measured", for_people(run.get("computed_at"))),
            ]
        )
    )
    rows = data.headroom.assign(
        accuracy_delta=data.headroom["accuracy_delta"].map(
            lambda v: "-" if v is None or v != v else f"{float(v):+.1%}"
        ),
        fix_alone_share=pd.to_numeric(data.headroom["fix_alone_share"]).astype(float),
    )
    section.blocks.append(
        table(
            rows,
            [
                "system",
                "op_name",
                "error_type",
                "cases",
                "rescued",
                "also_rescued",
                "broken",
                "net",
                "accuracy_delta",
                "fix_alone_share",
            ],
            shares=["fix_alone_share"],
        )
    )
    reasons = [
        f"{row['system']} {row['op_name']} / {row['error_type']}: {row['why']}"
        for row in data.headroom.to_dict(orient="records")
        if row.get("why") and row.get("rescued") != row.get("cases")
    ]
    if reasons:
        section.blocks.append(Paragraph("Where a repair rescues fewer cases than the class holds:"))
        section.blocks.append(Bullets(reasons))
    refused = run.get("not_replayable") or []
    if isinstance(refused, list) and refused:
        section.blocks.append(Paragraph("Traces that could not be replayed:"))
        section.blocks.append(Bullets([str(r) for r in refused]))
    return section


def _optimization(data: ReportData) -> Section:
    """Before and after an optimization run: accuracies, then every candidate's versions."""
    run = data.optimization

    def change(name: str) -> str:
        before, after = run.get(f"initial_{name}"), run.get(f"final_{name}")
        if not isinstance(before, float) or not isinstance(after, float):
            return "not finished"
        return f"{before:.1%} -> {after:.1%} ({after - before:+.1%})"

    section = Section("optimization", f"Optimization {data.optimization_run}: before and after")
    section.blocks.append(
        Facts(
            [
                ("system, mode", f"{run.get('system')}, {run.get('mode')}"),
                ("guided by attribution", str(run.get("guided"))),
                ("held-out accuracy", change("heldout")),
                ("train accuracy", change("train")),
                ("budget spent (system runs)", f"{run.get('budget_spent')} of {run.get('budget')}"),
                ("stopped", str(run.get("stopped"))),
            ]
        )
    )
    section.blocks.append(
        Paragraph(
            "Every candidate, accepted or not: the new version of each variable it changed, "
            "derived from the incumbent's version, with its scores and the failure classes "
            "that routed it (accepted only if train rose and held-out did not drop)."
        )
    )
    section.blocks.append(
        table(
            data.lineage,
            [
                "round",
                "kind",
                "name",
                "version",
                "parent",
                "value",
                "score_train",
                "score_heldout",
                "accepted",
                "reason",
                "classes",
            ],
        )
        if not data.lineage.empty
        else Paragraph("No candidate was proposed.")
    )
    return section


def _age_caption(ages: pd.DataFrame) -> str:
    """What the age table counts, and out of how many."""
    totals = ages.groupby("system")["evidence"].sum()
    out_of = ", ".join(f"{system} {int(n)}" for system, n in totals.items()) or "none"
    return (
        "By the evidence's age at question time: the messages recorded between the evidence "
        "message and the question. The buckets follow this run's ages (boundaries near their "
        "quantiles, rounded to readable numbers), the same for every system. Evidence: "
        f"evidence messages of the failed questions, out of each system's total ({out_of}); "
        "cases: failed questions with evidence in the bucket (one citing messages of several "
        "ages counts in each)."
    )


def build(
    data: ReportData,
    charts: list[Chart],
    narrative: NarrativeText | None = None,
    *,
    max_classes: int = 10,
) -> Document:
    sections = [_start_here(data), _summary(data)]
    if narrative is not None:
        sections.append(_narrative(narrative))
    sections.append(Section("charts", "Charts", blocks=[Figure(c) for c in charts]))
    classes = Section("classes", "Failure classes")
    classes.blocks.append(
        Paragraph(
            "One class per blamed operation, error type and the prompt and parameter versions "
            "it read; 'no optimizable input' marks operations that read neither."
        )
        if not data.classes.empty
        else Paragraph("No attributed failures in this run.")
    )
    if not data.classes.empty:
        classes.blocks.append(
            table(
                data.classes.head(SHOWN_CLASSES_TABLE),
                [
                    "system",
                    "op_name",
                    "stage",
                    "error_type",
                    "inputs",
                    "cases",
                    "share_of_failures",
                    "share_of_executions",
                    "median_confidence",
                ],
                shares=["share_of_failures", "share_of_executions"],
            )
        )
    sections.append(classes)
    sections.append(_headroom(data))
    for index, row in enumerate(data.classes.head(max_classes).to_dict("records"), start=1):
        sections.append(_class_section(index, row, data))
    sections.append(
        Section(
            "categories",
            "Question categories",
            blocks=[
                Paragraph(
                    "Attributed failed cases by question category and error type; share of "
                    "category: of the category's attributed failed cases in that system."
                ),
                table(
                    data.categories,
                    ["system", "category", "error_type", "cases", "share_of_category"],
                    shares=["share_of_category"],
                ),
            ],
        )
    )
    sections.append(
        Section(
            "evidence-position",
            "Where the evidence sits",
            blocks=[
                Paragraph("By the session holding the evidence message:"),
                table(
                    data.sessions, ["system", "session_index", "error_type", "cases", "evidence"]
                ),
                Paragraph(_age_caption(data.ages)),
                table(data.ages, ["system", "age", "error_type", "cases", "evidence"]),
            ],
        )
    )
    sections.append(
        Section(
            "funnel",
            "Evidence-loss funnel",
            blocks=[
                Paragraph(
                    "Failed questions only: of the evidence messages they needed, how many got "
                    "past each stage (from each case's verdict: the stage its evidence was lost "
                    "at); share: of those evidence messages, per system."
                ),
                table(data.funnel, ["system", "stage", "evidence", "share"], shares=["share"]),
            ],
        )
    )
    if data.compare_run is not None:
        sections.append(
            Section(
                "comparison",
                f"Run comparison: {data.compare_run} -> {data.run_id}",
                blocks=[
                    table(
                        data.comparison,
                        [
                            "status",
                            "system",
                            "op_name",
                            "error_type",
                            "cases_a",
                            "cases_b",
                            "change",
                        ],
                    )
                ],
            )
        )
    if data.optimization_run is not None:
        sections.append(_optimization(data))
    if not data.classes.empty:
        sections.append(_case_view())
    failed = Section("failed-attributions", "Cases whose attribution failed")
    failed.blocks.append(
        table(data.failed, ["system", "trace_id", "case_id", "error"])
        if not data.failed.empty
        else Paragraph("None: every failed case was attributed.")
    )
    sections.append(failed)
    return Document(f"memtrace diagnostic report - run {data.run_id}", sections)
