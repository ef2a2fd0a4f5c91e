"""Rich consoles and tables for the CLI.

Without a terminal rich assumes 80 columns and truncates table cells ("sys…"), which makes
`memtrace db stats > stats.txt` or a pipe into grep lose data. Piped output gets a wide
console instead; COLUMNS still wins when set.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # every command imports this module; only `eval` needs pandas
    import pandas as pd

PIPE_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPE_WIDTH)
    return console


def frame_table(frame: pd.DataFrame, title: str) -> Table:
    """A DataFrame as a rich table, floats to three decimals."""
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    return table
