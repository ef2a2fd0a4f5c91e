"""The import rules docs/architecture.md states, checked on every module's imports.

The package table is read from the page itself, so the page and this test cannot drift apart.
Imports under ``if TYPE_CHECKING:`` are types, not dependencies, and are not counted; imports
inside functions are.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "memtrace"
PAGE = REPO / "docs" / "architecture.md"
COMMON = {"taxonomy", "errors", "usage"}  # the vocabulary every package may import

# One boundary per resource: the only modules that may import these libraries.
BOUNDARIES = {
    "neo4j": lambda module: module == "memtrace.db",
    "openai": lambda module: module == "memtrace.llm",
    "click": lambda module: module.startswith("memtrace.cli"),
    "rich": lambda module: module.startswith("memtrace.cli"),
}
# The modules that run (or, in the CLI, print) bundled queries: one per package.
QUERYING = {
    "memtrace.db",
    "memtrace.admin",
    "memtrace.attribution.store",
    "memtrace.loaders.writer",
    "memtrace.patterns.reader",
    "memtrace.optimize.store",
    "memtrace.review.store",
    "memtrace.replay.store",
    "memtrace.collect.store",
}
PURE_ATTRIBUTION = {
    f"memtrace.attribution.{name}"
    for name in (
        "model", "text", "dates", "trails", "evidence", "judges", "llm_judge", "hybrid",
        "walk", "evaluate", "records", "counterfactual", "replay_judge", "answer_model",
        "asking",
    )
}  # fmt: skip
# The check of a trace (what will degrade attribution) sees records only: no file, no database.
PURE_LOADERS = {"memtrace.loaders.checks"}
PURE_LOADER_IMPORTS = ("memtrace.loaders.models", "memtrace.loaders.kinds")
IO_MODULES = (
    "memtrace.db",
    "memtrace.cypher",
    "memtrace.llm",
    "memtrace.settings",
    "memtrace.attribution.store",
    "memtrace.attribution.pipeline",
)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # what it imports, dotted (``memtrace.db``, ``neo4j.exceptions``)
    line: int


def _type_checking_block(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_module(name: str) -> bool:
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def imports_of(module: str, source: str) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST) -> None:
        if _type_checking_block(node):
            assert isinstance(node, ast.If)
            for statement in node.orelse:
                visit(statement)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(module, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "memtrace":  # from memtrace import db (or __version__)
                for alias in node.names:
                    target = f"memtrace.{alias.name}" if _is_module(alias.name) else "memtrace"
                    found.append(Import(module, target, node.lineno))
            else:
                found.append(Import(module, node.module, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "memtrace"


def all_imports() -> list[Import]:
    return [
        found
        for path in sorted(PACKAGE.rglob("*.py"))
        for found in imports_of(module_name(path), path.read_text(encoding="utf-8"))
    ]


def allowed_packages() -> dict[str, set[str]]:
    """``package -> packages it may import`` from the table on docs/architecture.md."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Packages", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table: dict[str, str] = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for name in re.findall(r"`([a-z_]+)(?:\.py|/)`", cells[0]):
            table[name] = cells[2]
    known = set(table)
    allowed: dict[str, set[str]] = {}
    for name, rule in table.items():
        if rule == "anything":
            allowed[name] = known
        elif rule.startswith("every package but"):
            allowed[name] = known - set(re.findall(r"`([a-z_]+)`", rule))
        elif rule.startswith("nothing"):
            allowed[name] = set()
        else:
            allowed[name] = set(re.findall(r"`([a-z_]+)`", rule))
    return allowed


def violations(imports: list[Import], allowed: dict[str, set[str]]) -> list[str]:
    found = []
    for item in imports:
        where = f"{item.module}:{item.line} imports {item.target}"
        source = package_of(item.module)
        top = item.target.split(".")[0]
        if top in BOUNDARIES and not BOUNDARIES[top](item.module):
            found.append(f"{where}: only its boundary module may import {top}")
        if top != "memtrace":
            continue
        target = package_of(item.target)
        if (
            item.module in PURE_LOADERS
            and target not in COMMON
            and not item.target.startswith(PURE_LOADER_IMPORTS)
        ):
            found.append(f"{where}: the trace checks import only the record models and kinds")
        if "memtrace" in (source, target) or target == source:  # the root holds __version__
            continue
        if source not in allowed:
            found.append(f"{where}: package {source!r} is not on docs/architecture.md")
        elif source in COMMON and target in COMMON:
            found.append(f"{where}: the vocabulary imports nothing of memtrace")
        elif target not in allowed[source] | COMMON:
            found.append(f"{where}: {source!r} may not import {target!r} (docs/architecture.md)")
        if item.target.startswith("memtrace.cypher") and item.module not in QUERYING:
            found.append(f"{where}: queries run from one store per package")
        if item.module in PURE_ATTRIBUTION and item.target.startswith(IO_MODULES):
            found.append(f"{where}: judges, walks and scoring import no I/O")
    return found


def test_the_page_names_every_package() -> None:
    allowed = allowed_packages()
    present = {package_of(module_name(path)) for path in PACKAGE.rglob("*.py")} - {"memtrace"}
    assert present <= set(allowed), sorted(present - set(allowed))
    assert allowed["taxonomy"] == set() and allowed["cli"] >= present


def test_every_module_keeps_the_import_rules() -> None:
    assert violations(all_imports(), allowed_packages()) == []


def test_settings_are_resolved_only_at_the_cli_boundary() -> None:
    offenders = [
        f"{module_name(path)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not module_name(path).startswith(("memtrace.cli", "memtrace.settings"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Name) and node.id == "load_settings")
        or (isinstance(node, ast.alias) and node.name == "load_settings")
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("module", "source", "message"),
    [
        ("memtrace.loaders.writer", "from neo4j import ManagedTransaction", "boundary"),
        ("memtrace.systems.rag", "import openai", "boundary"),
        ("memtrace.server.manager", "from rich.console import Console", "boundary"),
        ("memtrace.taxonomy", "from memtrace.errors import ConfigError", "vocabulary"),
        ("memtrace.systems.runner", "from memtrace.db import connect", "may not import 'db'"),
        ("memtrace.attribution.llm_judge", "from memtrace.db import Database", "no I/O"),
        ("memtrace.attribution.judges", "def f():\n    import memtrace.llm", "no I/O"),
        ("memtrace.attribution.run", "from memtrace.cypher import get_query", "one store"),
        ("memtrace.loaders.load", "from memtrace.cli import cli", "may not import 'cli'"),
        ("memtrace.loaders.checks", "from memtrace.loaders.index import KINDS", "record models"),
        ("memtrace.novel.x", "from memtrace.db import Database", "not on docs"),
    ],
)
def test_the_checker_catches_each_kind_of_violation(module: str, source: str, message: str) -> None:
    found = violations(imports_of(module, source), allowed_packages())
    assert any(message in v for v in found), found


def test_type_checking_imports_are_not_dependencies() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memtrace.llm import X\n"
    assert violations(imports_of("memtrace.attribution.judges", source), allowed_packages()) == []
