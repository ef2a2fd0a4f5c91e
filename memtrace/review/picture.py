"""A small SVG of a case's subgraph, rendered server-side: the candidate operations in execution
order (the blamed one red) with the variables each read (above) and wrote (below).

Pure: operation views in, SVG text out (every label escaped). Nothing is fetched by the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from memtrace.attribution.model import OperationView

COLUMN = 120  # px per node column
ROWS = {"read": 40, "op": 130, "written": 220}
MAX_VARIABLES = 40  # beyond this the picture is a wall; the list below it has every value


def _short(text: str, width: int = 16) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def case_svg(ops: Sequence[OperationView], blamed: str | None, answer: str | None) -> str:
    columns: dict[str, tuple[int, int]] = {}  # node key -> (x, y)
    labels: dict[str, tuple[str, str]] = {}  # node key -> (text, css class)
    edges: list[tuple[str, str]] = []
    column = 0

    def place(key: str, row: str, text: str, css: str) -> None:
        nonlocal column
        if key in columns:
            return
        columns[key] = (column * COLUMN + COLUMN // 2, ROWS[row])
        labels[key] = (text, css)
        column += 1

    variables = 0
    for op in sorted(ops, key=lambda o: o.seq):
        for value in op.inputs:
            if f"v:{value['id']}" not in columns and variables < MAX_VARIABLES:
                variables += 1
                place(f"v:{value['id']}", "read", str(value["id"]), "var")
        css = "op blamed" if op.id == blamed else ("op answer" if op.id == answer else "op")
        name = (op.name or op.id).rsplit(".", 1)[-1]  # memory_system.extract_facts -> extract_facts
        place(f"o:{op.id}", "op", f"#{op.seq} {name}", css)
        edges += [(f"v:{v['id']}", f"o:{op.id}") for v in op.inputs]
        for value in op.outputs:
            if f"v:{value['id']}" not in columns and variables < MAX_VARIABLES:
                variables += 1
                place(f"v:{value['id']}", "written", str(value["id"]), "var")
        edges += [(f"o:{op.id}", f"v:{v['id']}") for v in op.outputs]
    width = max(column, 1) * COLUMN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="subgraph" width="{width}" height="260" '
        f'viewBox="0 0 {width} 260" role="img" aria-label="case subgraph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
    ]
    for source, target in edges:
        if source in columns and target in columns:
            (x1, y1), (x2, y2) = columns[source], columns[target]
            parts.append(
                f'<line class="edge" x1="{x1}" y1="{y1 + 14 if y1 < y2 else y1 - 14}" '
                f'x2="{x2}" y2="{y2 - 14 if y1 < y2 else y2 + 14}" marker-end="url(#arrow)"/>'
            )
    for key, (x, y) in columns.items():
        text, css = labels[key]
        parts.append(
            f'<g class="{css}"><title>{escape(text)}</title>'
            f'<rect x="{x - 55}" y="{y - 14}" width="110" height="28" rx="6"/>'
            f'<text x="{x}" y="{y + 4}" text-anchor="middle">{escape(_short(text))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
