"""Cypher queries, one per ``.cypher`` file, loaded by name.

Each file starts with a header that users of Neo4j Browser can read too::

    // What the query does, in one line.
    // params: $trace_id, $rows
    // returns: operation_id, seq

``params`` lists every ``$parameter`` the text uses (``-`` for none) and ``returns`` the columns
(``-`` for none). The header is checked against the text when the query is loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_ROOT = Path(str(resources.files("memtrace.cypher")))


@dataclass(frozen=True)
class Query:
    name: str
    description: str
    text: str
    params: tuple[str, ...]
    columns: tuple[str, ...]

    @property
    def path(self) -> Path:
        return _ROOT / f"{self.name}.cypher"


class QueryFileError(ValueError):
    """A bundled .cypher file has a missing or wrong header (a bug in memtrace, not user input)."""


def _header_list(line: str, key: str, name: str) -> tuple[str, ...]:
    prefix = f"// {key}:"
    if not line.startswith(prefix):
        raise QueryFileError(f"{name}.cypher: expected a '{prefix}' header line, got {line!r}")
    value = line.removeprefix(prefix).strip()
    if value == "-":
        return ()
    return tuple(item.strip().lstrip("$") for item in value.split(","))


def parse_query(name: str, source: str) -> Query:
    lines = source.splitlines()
    if len(lines) < 4 or not lines[0].startswith("// "):
        raise QueryFileError(f"{name}.cypher: needs a description, params and returns header")
    params = _header_list(lines[1], "params", name)
    columns = _header_list(lines[2], "returns", name)
    body = "\n".join(line for line in lines[3:] if not line.lstrip().startswith("//"))
    used = set(_PARAM.findall(body))
    if used != set(params):
        raise QueryFileError(
            f"{name}.cypher: header params {sorted(params)} differ from those used {sorted(used)}"
        )
    return Query(name, lines[0][3:].strip(), source, params, columns)


@cache
def get_query(name: str) -> Query:
    """Load ``memtrace/cypher/<name>.cypher``, e.g. ``get_query("load/merge_operations")``."""
    path = _ROOT / f"{name}.cypher"
    if not path.is_file():
        raise KeyError(f"no query named {name!r} (looked for {path})")
    return parse_query(name, path.read_text(encoding="utf-8"))


def all_queries() -> list[Query]:
    names = sorted(p.relative_to(_ROOT).with_suffix("").as_posix() for p in _ROOT.rglob("*.cypher"))
    return [get_query(name) for name in names]
