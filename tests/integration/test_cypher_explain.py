"""Every bundled .cypher file compiles on the real server, without planner warnings.

Each query is also run against seeded data by the tests of the feature that owns it.
"""

from __future__ import annotations

import pytest
from neo4j import NotificationSeverity
from queries import all_benchmark_queries

from memtrace.cypher import Query, all_queries
from memtrace.db import Database

# Expected here and harmless: 01N60 a parameter is missing (EXPLAIN without values); 01N50-52 a
# label, relationship type or property key that this database has not seen yet.
IGNORED_STATUSES = {"01N50", "01N51", "01N52", "01N60"}


@pytest.mark.parametrize(
    "query", [*all_queries(), *all_benchmark_queries()], ids=lambda query: query.name
)
def test_query_explains_cleanly(db: Database, query: Query) -> None:
    with db.driver.session(database=db.database) as session:
        summary = session.run(f"EXPLAIN {query.text}").consume()
    assert summary.plan is not None
    warnings = [
        f"{status.gql_status}: {status.status_description}"
        for status in summary.gql_status_objects
        if status.is_notification
        and status.severity == NotificationSeverity.WARNING
        and status.gql_status not in IGNORED_STATUSES
    ]
    assert warnings == [], f"{query.name}.cypher: {warnings}"
