"""The rows of the load queries written as neo4j-admin import CSV files (no database here).

The Bolt loader sends each row to a query under memtrace/cypher/load/; ``BulkFiles`` takes the
very same rows and writes what that query would create: nodes with their label and properties,
relationships with their type and properties, so a bulk import builds the graph a Bolt load
writes (tests/integration/test_bulk_load.py compares the two).

Node ids are one integer space over the whole import (``--id-type=integer``): a trace's node
is ``offset + recno``, the record number the validation index already gives every record; the
relationship rows name their endpoints by these ids where the Bolt rows carry element ids.

Memory stays flat: rows go straight to disk. A property's CSV type is fixed by the header,
which is only written when a file closes (a separate header file per file group), so a file
grows a column when a row brings a new property; a row whose value has another type than that
column starts another file of the same label or type. Values that CSV cannot carry exactly are
refused before anything is imported (``UnrepresentableValue``): a list item holding the array
delimiter, or a list of one empty string (both read back differently).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from memtrace.loaders.rows import QueryRow, Row

ARRAY_DELIMITER = "\x1f"  # U+001F (unit separator): never in ordinary text
ARRAY_DELIMITER_OPTION = "U+001F"


class UnrepresentableValue(ValueError):
    """A value the CSV import would read back differently than Bolt stores it."""


_SCALAR_TYPES = {str: "string", bool: "boolean", int: "long", float: "double"}


def _csv_type(value: Any) -> str | None:
    """The import header type of a property value; None for no value or an empty list (not
    in CSV: the property is left out, as Bolt leaves out a null)."""
    kind = _SCALAR_TYPES.get(type(value))
    if kind is not None or value is None:
        return kind
    if isinstance(value, datetime):
        return "datetime{timezone:UTC}"
    if isinstance(value, list):
        return f"{_csv_type(value[0])}[]" if value else None
    raise TypeError(f"no CSV type for {type(value).__name__}")


def _double(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _item(value: Any, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, int):
        return str(value)
    if ARRAY_DELIMITER in value:
        raise UnrepresentableValue(f"{key}: a list item contains U+001F (the array delimiter)")
    return str(value)


def _field(value: Any, key: str) -> str:
    kind = type(value)
    if kind is str:
        return '"' + str.replace(value, '"', '""') + '"'
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return _double(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if value == [""]:
        raise UnrepresentableValue(f"{key}: a list of one empty string")
    text = ARRAY_DELIMITER.join(_item(item, key) for item in value)
    return '"' + text.replace('"', '""') + '"'


@dataclass
class CsvFile:
    """One data file of a node label or relationship type and the columns it has so far."""

    data: Path
    fixed: tuple[str, ...]  # the id columns every row starts with
    columns: dict[str, tuple[int, str]] = field(default_factory=dict)  # property -> place, type
    handle: TextIO | None = None
    multiline: bool = False
    rows: int = 0

    def write(self, ids: tuple[int, ...], props: dict[str, Any]) -> bool:
        """Write one row, adding the columns it brings; False (nothing written) when one of
        its values has another type than the column of that name."""
        columns = self.columns
        cells: dict[int, str] = {}
        new: list[tuple[str, str, Any]] = []
        for key, value in props.items():
            kind = _SCALAR_TYPES.get(type(value)) or _csv_type(value)
            if kind is None:  # no value, or an empty list: an empty cell
                continue
            known = columns.get(key)
            if known is None:
                new.append((key, kind, value))
            elif known[1] != kind:
                return False
            else:
                cells[known[0]] = _field(value, key)
        for key, kind, value in new:
            place = len(columns)
            columns[key] = (place, kind)
            cells[place] = _field(value, key)
        fields = [str(part) for part in ids]
        # A row may be shorter than the header (columns added after it was written), but the
        # importer misreads a short row that ends in an empty field: it ends at its last value
        # (a cell is never empty: strings and lists are quoted).
        if cells:
            fields.extend(cells.get(place, "") for place in range(max(cells) + 1))
        line = ",".join(fields)
        if not self.multiline and ("\n" in line or "\r" in line):
            self.multiline = True
        if self.handle is None:
            self.handle = self.data.open("w", encoding="utf-8", newline="")
        self.handle.write(line + "\n")
        self.rows += 1
        return True

    @property
    def header(self) -> Path:
        return self.data.with_name(self.data.stem + "-header.csv")

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        typed = [f"{key}:{kind}" for key, (_, kind) in self.columns.items()]
        self.header.write_text(",".join([*self.fixed, *typed]) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class FileGroup:
    """One ``--nodes=Label=header,data`` or ``--relationships=TYPE=header,data`` argument."""

    option: str  # "nodes" or "relationships"
    name: str  # the label or relationship type
    header: Path
    data: Path
    multiline: bool
    rows: int

    def argument(self) -> str:
        return f"--{self.option}={self.name}={self.header},{self.data}"


_NODE_QUERIES = {
    "load/create_variables": "Variable",
    "load/create_operations": "Operation",
    "load/create_sessions": "Session",
    "load/create_cases": "Case",
}
_TRACE_LINKS = {"load/create_sessions": "HAS_SESSION", "load/create_cases": "HAS_CASE"}


class BulkFiles:
    """Node and relationship CSV files in ``folder``, fed with the Bolt loader's rows."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: dict[tuple[str, str], list[CsvFile]] = {}
        self.nodes = 0
        self.relationships = 0

    def _write(self, option: str, name: str, ids: tuple[int, ...], props: dict[str, Any]) -> None:
        shards = self.files.setdefault((option, name), [])
        for shard in shards:
            if shard.write(ids, props):
                return
        fixed = (":ID",) if option == "nodes" else (":START_ID", ":END_ID")
        shard = CsvFile(self.folder / f"{option}-{name}-{len(shards)}.csv", fixed)
        shards.append(shard)
        shard.write(ids, props)  # a new file takes any row

    def node(self, label: str, node_id: int, props: dict[str, Any]) -> None:
        self._write("nodes", label, (node_id,), props)
        self.nodes += 1

    def relationship(
        self, kind: str, start: int, end: int, props: dict[str, Any] | None = None
    ) -> None:
        self._write("relationships", kind, (start, end), props or {})
        self.relationships += 1

    def node_rows(self, trace_id: str, offset: int, rows: Iterable[QueryRow]) -> None:
        """Write the node rows of one trace: node id ``offset`` + the row's record number, the
        trace node being ``offset`` itself."""
        for name, row in rows:
            node_id = offset + row["n"]
            props = {"trace_id": trace_id, "id": row["id"], **row["props"]}
            self.node(_NODE_QUERIES[name], node_id, props)
            link = _TRACE_LINKS.get(name)
            if link is not None:
                self.relationship(link, offset, node_id)

    def relationship_rows(self, rows: Iterable[QueryRow]) -> None:
        """Write what each relationship query creates (endpoints are node ids as text)."""
        for name, row in rows:
            self._relationships(name, row)

    def _relationships(self, name: str, row: Row) -> None:
        rel = self.relationship
        match name:
            case "load/create_operation_links":
                op = int(row["op"])
                for var in row["reads"]:
                    rel("READS", op, int(var))
                for var in row["writes"]:
                    rel("WRITES", op, int(var))
                for dep in row["deps"]:
                    rel("DEPENDS_ON", op, int(dep["op"]), {"via": dep["via"]})
                if row["session"] is not None:
                    rel("IN_SESSION", op, int(row["session"]))
            case "load/create_flows_to":
                props = {"edge_id": row["id"], "op_id": row["op"], "category": row["category"]}
                rel("FLOWS_TO", int(row["source"]), int(row["target"]), props)
            case "load/create_deletes":
                rel("DELETES", int(row["op"]), int(row["var"]), {"edge_id": row["edge_id"]})
            case "load/create_case_links":
                # the query and prediction texts the Bolt query copies from the variables are
                # filled in after the import (writer.fill_case_texts)
                rel("QUERY", int(row["id"]), int(row["query"]))
                if row["prediction"] is not None:
                    rel("PREDICTION", int(row["id"]), int(row["prediction"]))
            case "load/create_evidence":
                for var in row["vars"]:
                    rel("EVIDENCE", int(row["case"]), int(var))
            case "load/create_labels":
                rel("LABELED", int(row["case"]), int(row["op"]), row["props"])
            case "load/create_next_version":
                rel("NEXT_VERSION", int(row["older"]), int(row["newer"]))
            case _:
                raise ValueError(f"no bulk form for the rows of {name}")

    def close(self) -> list[FileGroup]:
        """Close every file and write its header; the groups the import command names."""
        groups = []
        for (option, name), shards in self.files.items():
            for shard in shards:
                shard.close()
                groups.append(
                    FileGroup(option, name, shard.header, shard.data, shard.multiline, shard.rows)
                )
        return groups
