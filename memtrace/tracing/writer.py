"""Append-only JSON Lines output: one unbuffered ``write`` per record, under a lock.

Each record is written as one complete line before the next starts, and a record is only
written once everything it references has been written (see ``Tracer``). So a crash leaves a
file whose complete lines form a valid trace; only a torn last line can be damaged, and
``complete_prefix`` cuts it off.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson


class JsonlWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Unbuffered: each record reaches the OS in one write() call, nothing waits in memory.
        self._file = path.open("wb", buffering=0)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
        with self._lock:
            self._file.write(line)

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                os.fsync(self._file.fileno())
                self._file.close()


def complete_prefix(path: Path) -> int:
    """Truncate ``path`` after its last complete line (a crash may tear the last one).

    Returns the number of bytes removed.
    """
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        with path.open("r+b") as file:
            file.truncate(keep)
    return len(data) - keep
