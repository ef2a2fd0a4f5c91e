"""A small SVG of a case's subgraph, rendered server-side and laid out to fit its box: one row per
candidate operation in execution order (the blamed one red, the answer purple), the variables it
read on the left and those it wrote on the right, each labelled by its short name and version. A
variable an earlier operation of the picture wrote is marked with that operation's number.

Pure: operation views in, SVG text out (every label escaped). Nothing is fetched by the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from memtrace.attribution.model import OperationView

WIDTH = 1160  # the viewBox; the page scales it to its box (about this wide at 1280 px)
CELL = {"read": (0, 390), "op": (440, 720), "written": (770, 1160)}  # x from, x to
CHIP_HEIGHT = 22
ROW_GAP = 14
PER_CELL = 4  # variables shown per side of a row; the rest are counted in a "more" chip
CHARS_PER_PX = 1 / 6.6  # 12 px system-ui: a generous average width per character


def middle_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in the middle: the ends of ids (a unit's
    number, a session and turn) are what tells them apart."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def variable_label(value: Mapping[str, Any]) -> str:
    """A variable's short name and version ("memory-unit-00003 v1"), its class first when it
    has one (a case's question, gold answer and prediction share the case's name), else its id."""
    name = value.get("name") or value.get("id") or "?"
    if value.get("class_name"):
        name = f"{value['class_name']}:{name}"
    version = value.get("version")
    return f"{name} v{version}" if version is not None else str(name)


def op_label(op: OperationView, chars: int) -> str:
    name = op.name or op.id
    if len(name) + 5 > chars:
        name = name.rsplit(".", 1)[-1]  # memory_system.extract_facts -> extract_facts
    return middle_cut(f"#{op.seq} {name}", chars)


def case_svg(ops: Sequence[OperationView], blamed: str | None, answer: str | None) -> str:
    ordered = sorted(ops, key=lambda o: o.seq)
    written_by: dict[str, int] = {}  # variable id -> seq of the first op of the picture writing it
    for op in ordered:
        for value in op.outputs:
            written_by.setdefault(str(value["id"]), op.seq)
    body: list[str] = []
    edges: list[str] = []
    y = ROW_GAP
    for op in ordered:
        reads, writes = list(op.inputs), list(op.outputs)
        height = max(_shown(len(reads)), _shown(len(writes)), 1) * (CHIP_HEIGHT + 4)
        middle = y + height // 2
        x0, x1 = CELL["op"]
        css = "op blamed" if op.id == blamed else ("op answer" if op.id == answer else "op")
        body.append(_box(css, x0, middle - 15, x1 - x0, 30, op_label(op, _chars(x1 - x0)),
                         f"{op.name or op.id} ({op.kind}, {op.id})"))  # fmt: skip
        for side, values in (("read", reads), ("written", writes)):
            cx0, cx1 = CELL[side]
            for n, (label, title, chip_css) in enumerate(_chips(values, op.seq, written_by)):
                top = y + n * (CHIP_HEIGHT + 4)
                body.append(_box(chip_css, cx0, top, cx1 - cx0, CHIP_HEIGHT,
                                 middle_cut(label, _chars(cx1 - cx0)), title))  # fmt: skip
                chip_y = top + CHIP_HEIGHT // 2
                if side == "read":
                    edges.append(_edge(cx1, chip_y, x0, middle))
                else:
                    edges.append(_edge(x1, middle, cx0, chip_y))
        y += height + ROW_GAP
    height = max(y, 40)
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="subgraph" viewBox="0 0 {WIDTH} '
            f'{height}" preserveAspectRatio="xMinYMin meet" role="img" '
            f'aria-label="case subgraph">',
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
            'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
            *edges,
            *body,
            "</svg>",
        ]
    )


def _shown(count: int) -> int:
    return count if count <= PER_CELL else PER_CELL + 1


def _chips(
    values: Sequence[Mapping[str, Any]], seq: int, written_by: Mapping[str, int]
) -> list[tuple[str, str, str]]:
    """(label, tooltip, css) per chip of one side of a row."""
    chips = []
    shown = values if len(values) <= PER_CELL else values[:PER_CELL]
    for value in shown:
        label = variable_label(value)
        source = written_by.get(str(value["id"]))
        title = f"{value['id']}" + (f" ({value['category']})" if value.get("category") else "")
        if source is not None and source < seq:
            chips.append((f"{label} ← #{source}", title, "var shared"))
        else:
            chips.append((label, title, "var"))
    if len(values) > PER_CELL:
        rest = len(values) - PER_CELL
        chips.append((f"+ {rest} more", "listed with the candidate above", "more"))
    return chips


def _chars(width_px: int) -> int:
    return max(8, int((width_px - 12) * CHARS_PER_PX))


def _box(css: str, x: int, y: int, width: int, height: int, text: str, title: str) -> str:
    return (
        f'<g class="{css}"><title>{escape(title)}</title>'
        f'<rect x="{x}" y="{y}" width="{width}" height="{height}" rx="5"/>'
        f'<text x="{x + width // 2}" y="{y + height // 2 + 4}" text-anchor="middle">'
        f"{escape(text)}</text></g>"
    )


def _edge(x1: int, y1: int, x2: int, y2: int) -> str:
    bend = (x2 - x1) // 2
    return (
        f'<path class="edge" d="M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}" '
        'marker-end="url(#arrow)"/>'
    )
