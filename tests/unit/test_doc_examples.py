"""Every offline example of README.md and docs/*.md runs (tests/doc_examples.py); the rest are
marked in the Markdown, with the reason, and counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_examples import DOCS, REPO, Example, check_run, examples

OFFLINE = [doc for doc in DOCS if any(e.mode == "offline" for e in examples(doc))]


@pytest.mark.parametrize("doc", OFFLINE, ids=lambda doc: str(doc.relative_to(REPO)))
def test_the_offline_examples_run(doc: Path, tmp_path: Path) -> None:
    for example in examples(doc):
        if example.mode == "offline":
            check_run(example, tmp_path)


def test_every_example_is_run_or_marked_with_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    every = [example for doc in DOCS for example in examples(doc)]
    by_mode: dict[str, list[Example]] = {}
    for example in every:
        by_mode.setdefault(example.mode, []).append(example)
    assert all(example.reason for example in by_mode.get("not run", []))
    assert by_mode.get("offline") and by_mode.get("neo4j")  # the runner finds both kinds
    with capsys.disabled():
        counts = ", ".join(f"{len(found)} {mode}" for mode, found in sorted(by_mode.items()))
        print(f"\ndoc examples: {len(every)} ({counts})")


def test_marks_are_read(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text(
        "Text.\n\n```python\nprint(1)\n```\n\n<!-- example: needs neo4j -->\n```bash\n"
        "memtrace db stats\n```\n\n<!-- example: not run: serves until Ctrl-C -->\n```sh\n"
        "memtrace review\n```\n\n```cypher\nRETURN 1\n```\n\n````bash\n```\n````\n"
    )
    found = [(e.line, e.language, e.mode, e.reason) for e in examples(doc)]
    assert found == [
        (3, "python", "offline", ""),
        (8, "shell", "neo4j", ""),
        (13, "shell", "not run", "serves until Ctrl-C"),
        (21, "shell", "offline", ""),
    ]
    doc.write_text("<!-- example: skip this -->\n```bash\nls\n```\n")
    with pytest.raises(ValueError, match="malformed example mark"):
        examples(doc)


def test_a_failing_example_fails_the_test(tmp_path: Path) -> None:
    broken = Example(REPO / "README.md", 1, "shell", "true\nfalse\necho never\n", "offline")
    with pytest.raises(AssertionError, match="exits 1"):
        check_run(broken, tmp_path)
    python = Example(
        REPO / "README.md", 2, "python", "with connect() as db:\n    pass\n", "offline"
    )
    with pytest.raises(AssertionError, match="NameError"):
        check_run(python, tmp_path)
