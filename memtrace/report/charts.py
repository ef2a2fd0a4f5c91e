"""Static charts rendered in-process with matplotlib (Agg, no pyplot state, no network).

Each chart is PNG bytes: the HTML embeds them as data URIs, the Markdown twin links the files.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from memtrace.patterns.breakdowns import FUNNEL_STAGES
from memtrace.report.data import ReportData
from memtrace.taxonomy import ERROR_TYPES

# pipeline order on the x axis; the failed attributions last
STAGE_ORDER = ("extraction", "embedding", "update", "retrieval", "generation", "judge", "other")
TOP_CLASSES = 10


@dataclass(frozen=True)
class Chart:
    name: str  # file stem, also the HTML element id
    title: str
    png: bytes


def _render(draw: Callable[[Axes], None], size: tuple[float, float] = (7.0, 3.6)) -> bytes:
    figure = Figure(figsize=size, dpi=100, layout="constrained")
    draw(figure.add_subplot())
    buffer = io.BytesIO()
    # no Software tag: the file carries nothing but the picture
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _empty(axes: Axes, text: str) -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes)
    axes.set_axis_off()


def failures_by_stage(classes: pd.DataFrame) -> bytes:
    def draw(axes: Axes) -> None:
        if classes.empty:
            return _empty(axes, "no attributed failures")
        table = classes.pivot_table(
            index="stage", columns="error_type", values="cases", aggfunc="sum", fill_value=0
        )
        stages = [s for s in STAGE_ORDER if s in table.index] + [
            s for s in table.index if s not in STAGE_ORDER
        ]
        types = [t for t in ERROR_TYPES if t in table.columns]
        table = table.reindex(index=stages, columns=types, fill_value=0)
        bottom = [0] * len(stages)
        for error_type in types:
            values = [int(v) for v in table[error_type]]
            axes.bar(stages, values, bottom=bottom, label=error_type)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        axes.set_ylabel("failed cases")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("stage of the blamed operation")
        axes.legend(fontsize="small")

    return _render(draw)


def evidence_funnel(funnel: pd.DataFrame) -> bytes:
    def draw(axes: Axes) -> None:
        if funnel.empty or int(funnel["evidence"].sum()) == 0:
            return _empty(axes, "no evidence recorded for the failed cases")
        systems = sorted(set(funnel["system"].astype(str)))
        width = 0.8 / len(systems)
        for i, system in enumerate(systems):
            rows = funnel[(funnel["system"] == system) & funnel["stage"].isin(FUNNEL_STAGES)]
            share = dict(zip(rows["stage"], rows["share"].astype(float), strict=True))
            xs = [j + i * width for j in range(len(FUNNEL_STAGES))]
            axes.bar(xs, [share[s] for s in FUNNEL_STAGES], width, label=system)
        axes.set_xticks([j + 0.4 - width / 2 for j in range(len(FUNNEL_STAGES))])
        axes.set_xticklabels([s.replace("_", " ") for s in FUNNEL_STAGES])
        axes.set_ylabel("share of the evidence needed")
        axes.set_ylim(0, 1.05)
        axes.legend(fontsize="small")

    return _render(draw)


def _label(row: Mapping[Hashable, object]) -> str:
    return f"{row['system']} {str(row['op_name']).split('.')[-1]} / {row['error_type']}"


def top_classes(classes: pd.DataFrame) -> bytes:
    top = classes.head(TOP_CLASSES).iloc[::-1]

    def draw(axes: Axes) -> None:
        if top.empty:
            return _empty(axes, "no failure classes")
        rows = top.to_dict(orient="records")
        colors = ["tab:blue" if row["optimizable"] else "tab:gray" for row in rows]
        axes.barh([_label(row) for row in rows], [int(row["cases"]) for row in rows], color=colors)
        axes.set_xlabel("failed cases (gray: no optimizable input)")

    return _render(draw, (7.0, 0.45 * max(len(top), 2) + 1.2))


def comparison(table: pd.DataFrame, run_a: str, run_b: str) -> bytes:
    changed = table[table["status"] != "unchanged"].head(TOP_CLASSES).iloc[::-1]

    def draw(axes: Axes) -> None:
        if changed.empty:
            return _empty(axes, f"no class changed between {run_a} and {run_b}")
        rows = changed.to_dict(orient="records")
        labels = [_label(row) for row in rows]
        ys = range(len(rows))
        axes.barh([y + 0.2 for y in ys], [int(r["cases_a"]) for r in rows], 0.4, label=run_a)
        axes.barh([y - 0.2 for y in ys], [int(r["cases_b"]) for r in rows], 0.4, label=run_b)
        axes.set_yticks(list(ys))
        axes.set_yticklabels(labels)
        axes.set_xlabel("failed cases")
        axes.legend(fontsize="small")

    return _render(draw, (7.0, 0.5 * max(len(changed), 2) + 1.2))


def headroom(rows: pd.DataFrame) -> bytes:
    """What fixing each class would buy: its cases, the cases its repair rescues, and the
    passing answers it breaks, per class (largest net headroom on top)."""
    measured = rows[rows["replayable"].fillna(False).astype(bool)].head(TOP_CLASSES).iloc[::-1]

    def draw(axes: Axes) -> None:
        if measured.empty:
            return _empty(axes, "no class could be replayed")
        records = measured.to_dict(orient="records")
        ys = range(len(records))
        cases = [int(r["cases"]) for r in records]
        rescued = [int(r["rescued"]) + int(r["also_rescued"]) for r in records]
        broken = [int(r["broken"]) for r in records]
        axes.barh([y + 0.27 for y in ys], cases, 0.27, color="tab:gray", label="cases")
        axes.barh(list(ys), rescued, 0.27, color="tab:green", label="rescued by the repair")
        axes.barh([y - 0.27 for y in ys], broken, 0.27, color="tab:red", label="broken by it")
        axes.set_yticks(list(ys))
        axes.set_yticklabels([_label(r) for r in records])
        axes.set_xlabel("failed cases")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.legend(fontsize="small")

    return _render(draw, (7.0, 0.6 * max(len(measured), 2) + 1.4))


def charts(data: ReportData) -> list[Chart]:
    """Every chart of the report, in reading order."""
    made = [
        Chart(
            "failures-by-stage", "Failures by stage and error type", failures_by_stage(data.classes)
        ),
        Chart("evidence-funnel", "Evidence-loss funnel", evidence_funnel(data.funnel)),
        Chart("top-classes", "Top failure classes", top_classes(data.classes)),
    ]
    if not data.headroom.empty:
        made.append(Chart("headroom", "What fixing each class would buy", headroom(data.headroom)))
    if data.compare_run is not None:
        made.append(
            Chart(
                "comparison",
                f"Failure classes: {data.compare_run} -> {data.run_id}",
                comparison(data.comparison, data.compare_run, data.run_id),
            )
        )
    return made
