"""Append-only JSON Lines output: one ``write`` + ``flush`` per record, under a lock.

Each record is written as one complete line before the next starts, and a record is only
written once everything it references has been written (see ``Tracer``). So a crash leaves a
file whose complete lines form a valid trace; only a torn last line can be damaged, and
``complete_prefix`` cuts it off.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, TextIO


class JsonlWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: TextIO = path.open("w", encoding="utf-8", newline="\n")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()
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
