"""`Database.run` hands back rows exactly as the driver's `Record.data()` would."""

from __future__ import annotations

import uuid

from memtrace.db import Database, record_dict

ROWS = """
CREATE (a:RecordProbe {run: $run, name: 'a', tags: ['x', 'y']})
       -[r:PROBE_LINK {weight: 0.5}]->(b:RecordProbe {run: $run, name: 'b'})
WITH a, r, b
MATCH p = (a)-[:PROBE_LINK]->(b)
RETURN a, r, p, [a, b] AS nodes, {node: b, items: [1, 2.5, 'z', null, true]} AS nested,
       date('2026-12-01') AS day, point({x: 1, y: 2}) AS where, [[a.name, 'q1']] AS refs,
       $text AS text
"""


def test_record_dict_matches_the_drivers_data(db: Database) -> None:
    run = f"probe-{uuid.uuid4().hex[:8]}"
    try:
        with db.driver.session(database=db.database) as session:
            records = list(session.run(ROWS, run=run, text="é\u2028"))
        assert records, "the probe query returned nothing"
        for record in records:
            assert record_dict(record) == record.data()
        [row] = db.run("MATCH (n:RecordProbe {run: $run, name: 'a'}) RETURN n", run=run)
        assert row == {"n": {"run": run, "name": "a", "tags": ["x", "y"]}}
    finally:
        db.run("MATCH (n:RecordProbe {run: $run}) DETACH DELETE n", run=run)
