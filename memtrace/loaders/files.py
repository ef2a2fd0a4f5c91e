"""Reading a whole trace file as text, with the errors every format reports the same way."""

from __future__ import annotations

from pathlib import Path

from memtrace.errors import InputError


def read_text(file: Path, empty_problem: str) -> str:
    """The file's UTF-8 text; ``empty_problem`` is the error for a file with nothing in it."""
    path = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    if not text.strip():
        raise InputError(path, None, empty_problem)
    return text
