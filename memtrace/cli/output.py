"""Rich consoles and tables for the CLI.

Without a terminal rich assumes 80 columns and truncates table cells ("sys…"), which makes
`memtrace db stats > stats.txt` or a pipe into grep lose data. Piped output gets a wide
console instead; COLUMNS still wins when set.
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.text import Text

if TYPE_CHECKING:  # every command imports this module; only `eval` needs pandas
    import pandas as pd

PIPE_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPE_WIDTH)
    return console


def frame_table(frame: pd.DataFrame, title: str, width: int) -> Group:
    """A DataFrame as a ``fit_table``, floats to three decimals; text columns named ``note`` go
    under their row, the first column is never cut."""
    columns = [
        Column(
            str(name),
            str(name).replace("_", " "),
            numeric=frame[name].dtype.kind in "iuf",
            whole=n == 0,
            long=name == "note",
        )
        for n, name in enumerate(frame.columns)
    ]
    rows = [
        {str(name): _cell(value) for name, value in zip(frame.columns, row, strict=True)}
        for row in frame.itertuples(index=False)
    ]
    return fit_table(rows, columns, title, width)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def strict_json(value: Any) -> str:
    """JSON any strict parser reads: NaN and infinities (pandas' "no number") become null."""
    return json.dumps(_finite(value), indent=2, ensure_ascii=False, allow_nan=False, default=str)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(key): _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


@dataclass(frozen=True)
class Column:
    """One column of a ``fit_table``: ``whole`` values (operation names, ids) are never cut or
    moved; ``long`` ones (free text, lists) go under their row; ``numeric`` ones align right."""

    key: str
    header: str
    numeric: bool = False
    whole: bool = False
    long: bool = False


GAP = 2
INDENT = 4


def fit_table(
    rows: Sequence[Mapping[str, str]], columns: Sequence[Column], title: str, width: int
) -> Group:
    """Rows as a table that fits ``width`` columns without cutting a value.

    Columns empty in every row are left out and columns with one value in every row are said
    once under the title; long text goes on its own lines under its row; when the rest is still
    too wide, each row becomes a block (its whole values on one line, the others as
    ``header value`` pairs under it). Wrapping, never truncation: no value is lost at any width.
    """
    shown, constants = _informative(rows, columns)
    inline = [c for c in shown if not c.long]
    under = [c for c in shown if c.long]
    widths = {c.key: max([len(c.header), *(len(r[c.key]) for r in rows)]) for c in inline}
    lines = [Text(title, style="bold")]
    if constants:
        said = " · ".join(pair.replace(" ", "\u00a0") for pair in constants)
        lines += _wrapped(f"every row: {said}", width, indent=0)
    if sum(widths.values()) + GAP * (len(inline) - 1) <= width:
        header = _aligned({c.key: c.header for c in inline}, inline, widths)
        lines += [Text(header, style="bold"), Text("─" * min(width, len(header)), style="dim")]
        for row in rows:
            lines.append(Text(_aligned(row, inline, widths)))
            lines += _under(row, under, width)
    else:
        whole = [c for c in inline if c.whole] or inline[:1]
        pairs = [c for c in inline if c not in whole]
        for row in rows:
            lines.append(Text("  ".join(row[c.key] for c in whole), style="bold"))
            # a header and its value stay on one line (no-break spaces)
            detail = " · ".join(
                f"{c.header} {row[c.key]}".replace(" ", "\u00a0") for c in pairs if row[c.key]
            )
            lines += _wrapped(detail, width)
            lines += _under(row, under, width)
    return Group(*lines)


def _informative(
    rows: Sequence[Mapping[str, str]], columns: Sequence[Column]
) -> tuple[list[Column], list[str]]:
    shown, constants = [], []
    for column in columns:
        values = {row[column.key] for row in rows}
        if values <= {"", "-"}:
            continue
        if len(rows) > 1 and len(values) == 1 and not column.whole:
            constants.append(f"{column.header} {values.pop()}")
            continue
        shown.append(column)
    return shown, constants


def _aligned(row: Mapping[str, str], columns: Sequence[Column], widths: Mapping[str, int]) -> str:
    cells = [
        row[c.key].rjust(widths[c.key]) if c.numeric else row[c.key].ljust(widths[c.key])
        for c in columns
    ]
    return (" " * GAP).join(cells).rstrip()


def _under(row: Mapping[str, str], columns: Sequence[Column], width: int) -> list[Text]:
    return [
        line
        for c in columns
        if row[c.key] not in ("", "-")
        for line in _wrapped(f"{c.header}: {row[c.key]}", width)
    ]


def _wrapped(text: str, width: int, indent: int = INDENT) -> list[Text]:
    # break_long_words=False: an operation name or id longer than a line stays whole
    return [
        Text(line)
        for line in textwrap.wrap(
            text,
            width=max(20, width),
            initial_indent=" " * indent,
            subsequent_indent=" " * (indent + 2),
            break_long_words=False,
            break_on_hyphens=False,
        )
    ]
