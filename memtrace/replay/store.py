"""The replay's one query: a loaded trace's records, rebuilt as native records for
``inputs_from_records``."""

from __future__ import annotations

import json
from typing import Any

from memtrace.cypher import get_query
from memtrace.db import Database
from memtrace.errors import MemtraceError, NotReplayableError


def _meta(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) and value else {}


class ReplayStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def trace_records(self, trace_id: str) -> list[dict[str, Any]]:
        rows = self.db.run(get_query("replay/trace_records"), trace_id=trace_id)
        if not rows:
            raise MemtraceError(f"no complete trace {trace_id!r}")
        row = rows[0]
        if row["source"] != "native":
            raise NotReplayableError(
                f"trace {trace_id!r} was imported from a {row['source']} file: an imported "
                "trace records what a system did, not how to run it again, so it cannot be "
                "replayed"
            )
        head = {"type": "trace", "id": trace_id, "system": row["system"],
                "metadata": _meta(row["metadata"])}  # fmt: skip
        records: list[dict[str, Any]] = [head]
        for s in row["sessions"]:
            if s.get("id"):
                records.append({"type": "session", **s, "metadata": _meta(s.get("metadata"))})
        for v in row["variables"]:
            if v.get("id"):
                records.append({"type": "variable", **v, "metadata": _meta(v.get("metadata"))})
        records += [
            {"type": "operation", **o, "metadata": _meta(o.get("metadata"))}
            for o in row["operations"]
            if o.get("id")
        ]
        records += [{"type": "case", **c} for c in row["cases"] if c.get("id")]
        return records
