"""Render a Document: self-contained HTML (charts as data URIs, no external resource) and a
Markdown twin (charts as PNG files beside it). Formats are a registry by name."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memtrace.report.document import (
    Block,
    Bullets,
    Code,
    Document,
    Facts,
    Figure,
    Items,
    Paragraph,
    TableBlock,
)

CHART_DIR = "charts"

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222;
       line-height: 1.45; padding: 0 1rem; overflow-wrap: break-word; }
#start-here { background: #fff8e6; border: 1px solid #f0d28a; border-radius: 6px;
              padding: .2rem 1rem .6rem; }
#start-here h2 { margin-top: .6rem; border: none; }
.table-box { max-width: 100%; overflow-x: auto; }
h1 { font-size: 1.6rem; } h2 { border-bottom: 1px solid #ddd; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
pre { background: #f6f8fa; padding: .6rem; white-space: pre-wrap; font-size: .8rem; }
figure { margin: 1rem 0; } figcaption { font-weight: 600; }
img { max-width: 100%; }
nav li { display: inline; margin-right: 1rem; }
"""


def _h(text: str) -> str:
    return html.escape(text, quote=True)


def _html_value(value: str | list[str]) -> str:
    if isinstance(value, str):
        return _h(value)
    return "<ul>" + "".join(f"<li>{_h(item)}</li>" for item in value) + "</ul>"


def _md_value(value: str | list[str]) -> str:
    if isinstance(value, str):
        return _md(value)
    return "".join(f"\n  - {_md(item)}" for item in value)


def _html_block(block: Block) -> str:
    if isinstance(block, Paragraph):
        return f"<p>{_h(block.text)}</p>"
    if isinstance(block, Facts):
        items = "".join(f"<dt>{_h(k)}</dt><dd>{_h(v)}</dd>" for k, v in block.items)
        return f'<dl class="facts">{items}</dl>'
    if isinstance(block, Items):
        items = "".join(f"<li><b>{_h(k)}</b>: {_html_value(v)}</li>" for k, v in block.items)
        return f"<ul>{items}</ul>"
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{_h(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, TableBlock):
        head = "".join(f"<th>{_h(c)}</th>" for c in block.header)
        body = "".join(
            "<tr>" + "".join(f"<td>{_h(c)}</td>" for c in row) + "</tr>" for row in block.rows
        )
        return (
            f'<div class="table-box"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>"
        )
    if isinstance(block, Figure):
        data = base64.b64encode(block.chart.png).decode("ascii")
        return (
            f'<figure id="chart-{_h(block.chart.name)}"><figcaption>{_h(block.chart.title)}'
            f'</figcaption><img alt="{_h(block.chart.title)}" src="data:image/png;base64,{data}">'
            "</figure>"
        )
    link = (
        f'<p><a class="browser-link" href="{_h(block.link)}">open in Neo4j Browser</a></p>'
        if block.link
        else ""
    )
    return f'<pre class="{_h(block.language)}">{_h(block.text)}</pre>{link}'


def render_html(document: Document) -> str:
    nav = "".join(f'<li><a href="#{_h(s.id)}">{_h(s.title)}</a></li>' for s in document.sections)
    sections = [
        f'<section id="{_h(s.id)}"><h{s.level}>{_h(s.title)}</h{s.level}>'
        + "".join(_html_block(b) for b in s.blocks)
        + "</section>"
        for s in document.sections
    ]
    # the first section (the answer) before the table of contents
    body = "".join(sections[:1]) + f"<nav><ul>{nav}</ul></nav>" + "".join(sections[1:])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_h(document.title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{_h(document.title)}</h1>{body}</body></html>\n"
    )


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_block(block: Block) -> str:
    if isinstance(block, Paragraph):
        return block.text
    if isinstance(block, Facts):
        return "\n".join(f"- **{_md(k)}**: {_md(v)}" for k, v in block.items)
    if isinstance(block, Items):
        return "\n".join(f"- **{_md(k)}**: {_md_value(v)}" for k, v in block.items)
    if isinstance(block, Bullets):
        return "\n".join(f"- {_md(item)}" for item in block.items)
    if isinstance(block, TableBlock):
        lines = ["| " + " | ".join(map(_md, block.header)) + " |"]
        lines.append("|" + "---|" * len(block.header))
        lines.extend("| " + " | ".join(map(_md, row)) + " |" for row in block.rows)
        return "\n".join(lines)
    if isinstance(block, Figure):
        return f"![{block.chart.title}]({CHART_DIR}/{block.chart.name}.png)"
    assert isinstance(block, Code)
    link = f"\n\n[open in Neo4j Browser]({block.link})" if block.link else ""
    return f"```{block.language}\n{block.text.rstrip()}\n```{link}"


def render_markdown(document: Document) -> str:
    parts = [f"# {document.title}"]
    for section in document.sections:
        parts.append(f"{'#' * section.level} {section.title}")
        parts.extend(_md_block(b) for b in section.blocks)
    return "\n\n".join(parts) + "\n"


@dataclass(frozen=True)
class Format:
    filename: str
    render: Callable[[Document], str]


FORMATS: dict[str, Format] = {
    "html": Format("report.html", render_html),
    "markdown": Format("report.md", render_markdown),
}


def write(document: Document, out: Path) -> list[Path]:
    """Write every format (and the Markdown's chart files) into ``out``; returns the files."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    charts = out / CHART_DIR
    charts.mkdir(exist_ok=True)
    for section in document.sections:
        for block in section.blocks:
            if isinstance(block, Figure):
                path = charts / f"{block.chart.name}.png"
                path.write_bytes(block.chart.png)
                written.append(path)
    for fmt in FORMATS.values():
        path = out / fmt.filename
        path.write_text(fmt.render(document), encoding="utf-8")
        written.append(path)
    return written
