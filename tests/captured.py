"""What the capture tests ask of a loaded OTLP capture: each case's prediction, and the offline
judge's verdict per case (error type, the blamed operation's name)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from memtrace.cli import cli
from memtrace.db import Database


def predictions(db: Database, trace_id: str) -> list[tuple[str, str]]:
    """``(case id, prediction text)`` of the trace's cases, by case id."""
    rows = db.run(
        "MATCH (:Trace {id: $id})-[:HAS_CASE]->(c:Case)-[:PREDICTION]->(p:Variable) "
        "RETURN c.id AS case, p.value AS prediction ORDER BY case",
        id=trace_id,
    )
    return [(r["case"], r["prediction"]) for r in rows]


def offline_verdicts(db: Database, trace_id: str) -> dict[str, tuple[str, str | None]]:
    """`memtrace attribute --judge offline --no-write` on the trace: case id -> (error type,
    the name of the operation it blames)."""
    attributed = CliRunner().invoke(
        cli, ["attribute", "--trace", trace_id, "--judge", "offline", "--no-write", "--json"]
    )
    assert attributed.exit_code == 0, attributed.output
    names = {
        r["id"]: r["name"]
        for r in db.run(
            "MATCH (o:Operation {trace_id: $id}) RETURN o.id AS id, o.name AS name", id=trace_id
        )
    }
    return {
        r["case_id"]: (
            r["error_attribution_result"]["error_type"],
            names.get(r["error_attribution_result"]["op_id"]),
        )
        for r in json.loads(attributed.stdout)
    }
