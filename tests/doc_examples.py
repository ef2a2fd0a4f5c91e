"""Docs that run: every Python and shell example of README.md and docs/*.md is executed.

A fenced block whose info string starts with ``python``, ``bash``, ``sh`` or ``shell`` is an
example. The line right above its fence may mark it, visibly in the Markdown source:

    <!-- example: needs neo4j -->          run by tests/integration (the managed or NEO4J_* server)
    <!-- example: not run: REASON -->      not run, for the reason given (counted)

Unmarked examples run offline in tests/unit. A file whose first lines hold
``<!-- examples in this file: not run: REASON -->`` marks every example in it. The examples of
one file run in order in one fresh folder, so a later one may use what an earlier one wrote
(a trace, then `memtrace check` of it); shell examples run under ``bash -e -o pipefail`` with
the ``memtrace`` of the interpreter running the tests first on PATH.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parent.parent
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
LANGUAGES = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
TIMEOUT = 300  # seconds per example

Mode = Literal["offline", "neo4j", "not run"]
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
_MARK = re.compile(r"^<!--\s*example:\s*(needs neo4j|not run:\s*(?P<reason>.+?))\s*-->\s*$")
_FILE_MARK = re.compile(r"^<!--\s*examples in this file:\s*not run:\s*(?P<reason>.+?)\s*-->\s*$")
_ANY_MARK = re.compile(r"^<!--\s*examples?( in this file)?:")


@dataclass(frozen=True)
class Example:
    path: Path
    line: int  # of the opening fence, from 1
    language: Literal["python", "shell"]
    code: str
    mode: Mode
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def examples(path: Path) -> list[Example]:
    """The examples of one Markdown file, in order; a malformed mark is an error."""
    lines = path.read_text(encoding="utf-8").splitlines()
    file_reason = next((m["reason"] for line in lines[:5] if (m := _FILE_MARK.match(line))), None)
    found: list[Example] = []
    fence: str | None = None
    for number, line in enumerate(lines, start=1):
        if fence is not None:
            if line.startswith(fence):
                fence = None
            continue
        if _ANY_MARK.match(line) and not (_MARK.match(line) or _FILE_MARK.match(line)):
            raise ValueError(f"{path.name}:{number}: malformed example mark {line!r}")
        opening = _FENCE.match(line)
        if opening is None:
            continue
        fence = opening[1]
        language = LANGUAGES.get(opening[2].lower())
        if language is None:
            continue
        end = next((i for i in range(number, len(lines)) if lines[i].startswith(fence)), len(lines))
        code = "\n".join(lines[number:end]) + "\n"
        mark = _MARK.match(lines[number - 2]) if number >= 2 else None
        if mark is not None and mark["reason"]:
            mode: Mode = "not run"
            reason = mark["reason"]
        elif mark is not None:
            mode, reason = "neo4j", ""
        elif file_reason is not None:
            mode, reason = "not run", file_reason
        else:
            mode, reason = "offline", ""
        found.append(Example(path, number, language, code, mode, reason))  # type: ignore[arg-type]
    return found


def run(example: Example, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run one example in ``folder``; the result is checked by the caller."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if example.language == "python":
        script = folder / f"example_{example.line}.py"
        script.write_text(example.code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", example.code]
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )


def check_run(example: Example, folder: Path) -> None:
    result = run(example, folder)
    assert result.returncode == 0, (
        f"{example.where}: the example exits {result.returncode}\n--- code\n{example.code}"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    )
