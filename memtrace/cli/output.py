"""Rich consoles for the CLI.

Without a terminal rich assumes 80 columns and truncates table cells ("sys…"), which makes
`memtrace db stats > stats.txt` or a pipe into grep lose data. Piped output gets a wide
console instead; COLUMNS still wins when set.
"""

from __future__ import annotations

import os

from rich.console import Console

PIPE_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPE_WIDTH)
    return console
