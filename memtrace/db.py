"""The Neo4j boundary: one driver per `connect`, driver errors translated into ours."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import neo4j
from neo4j import GraphDatabase, ManagedTransaction
from neo4j import exceptions as neo4j_errors
from pydantic import SecretStr

from memtrace.cypher import Query
from memtrace.errors import (
    Neo4jAuthError,
    Neo4jError,
    Neo4jUnavailableError,
    QueryError,
    TransactionTooLargeError,
)
from memtrace.settings import Neo4jSettings, Settings

TOGETHER_ATTEMPTS = 5  # tries of a write_in_one transaction that fails transiently
T = TypeVar("T")


@dataclass(frozen=True)
class BatchResult:
    """What one batch write did: its returned records and the server's counters."""

    records: list[dict[str, Any]]
    nodes_created: int
    relationships_created: int


# One query of a ``write_in_one`` transaction: its records and counters.
StepRunner = Callable[[Query | str, dict[str, Any]], BatchResult]

# Values the driver hands back as they are. Anything else (nodes, paths, temporals, points) makes
# the whole column go through the driver's own Record.data() mapping.
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


class _NotPlain(Exception):
    pass


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return value
    if kind is list:
        return [_plain(item) for item in value]
    if kind is dict:
        return {key: _plain(item) for key, item in value.items()}
    raise _NotPlain


def record_dict(record: neo4j.Record) -> dict[str, Any]:
    """``record.data()``, 3-4x faster on rows of long lists (e.g. 11,000 case ids): the
    driver's generic mapping checks every item against abstract collection types."""
    row = {}
    for key, value in zip(record.keys(), record, strict=True):
        try:
            row[key] = _plain(value)
        except _NotPlain:
            row[key] = record.data(key)[key]
    return row


def _auth(user: str, password: SecretStr | None) -> tuple[str, str] | None:
    return (user, password.get_secret_value()) if password is not None else None


def _text(query: Query | str) -> str:
    return query.text if isinstance(query, Query) else query


def _is_out_of_memory(exc: neo4j_errors.Neo4jError) -> bool:
    """A transaction over the server's memory limit (a transient error the driver retries)."""
    code = exc.code or ""
    return code.startswith("Neo.TransientError.General.") and "Memory" in code


@contextmanager
def translate_errors(where: str) -> Iterator[None]:
    """Turn driver exceptions into memtrace errors that say what to do next."""
    try:
        yield
    except neo4j_errors.AuthError as exc:
        raise Neo4jAuthError(
            f"Neo4j at {where} refused the credentials; check NEO4J_USER / NEO4J_PASSWORD"
        ) from exc
    except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired, OSError) as exc:
        raise Neo4jUnavailableError(
            f"no Neo4j answers at {where} ({exc}); start one with `memtrace neo4j start` "
            "or point NEO4J_URI at yours"
        ) from exc
    except neo4j_errors.Neo4jError as exc:
        if _is_out_of_memory(exc):
            raise TransactionTooLargeError(f"{exc.code}: {exc.message}") from exc
        raise QueryError(f"{exc.code}: {exc.message}") from exc
    except neo4j_errors.DriverError as exc:
        raise Neo4jError(str(exc)) from exc


class Database:
    """A connected Neo4j database. Values always travel as parameters."""

    def __init__(self, driver: neo4j.Driver, settings: Neo4jSettings) -> None:
        self.driver = driver
        self.settings = settings
        self.database = settings.database

    def run(self, query: Query | str, **params: Any) -> list[dict[str, Any]]:
        """Run one auto-committed query and return its records as dicts."""
        with translate_errors(self.settings.uri):
            records, _, _ = self.driver.execute_query(
                _text(query), parameters_=params, database_=self.database
            )
        return [record_dict(record) for record in records]

    def write_batch(self, query: Query | str, **params: Any) -> BatchResult:
        """Run one write query in its own retried transaction; return records and counters."""

        def work(tx: ManagedTransaction) -> BatchResult:
            result = tx.run(_text(query), params)
            records = [record_dict(record) for record in result]
            counters = result.consume().counters
            return BatchResult(records, counters.nodes_created, counters.relationships_created)

        with (
            translate_errors(self.settings.uri),
            self.driver.session(database=self.database) as session,
        ):
            return session.execute_write(work)

    def write_together(
        self,
        steps: Sequence[tuple[Query | str, dict[str, Any]]],
        check: Callable[[int, list[dict[str, Any]]], None] | None = None,
    ) -> list[list[dict[str, Any]]]:
        """Run several write queries in ONE transaction: all of them commit, or none.

        ``check(step, records)`` runs after each step inside the transaction; an exception it
        raises rolls everything back. Retried as ``write_in_one`` retries.
        """

        def work(run: StepRunner) -> list[list[dict[str, Any]]]:
            results = []
            for number, (query, params) in enumerate(steps):
                records = run(query, params).records
                if check is not None:
                    check(number, records)
                results.append(records)
            return results

        return self.write_in_one(work)

    def write_in_one(self, work: Callable[[StepRunner], T]) -> T:
        """Run ``work(run)`` in ONE write transaction: every query it runs through ``run``
        commits, or none (``run`` returns each query's records and counters, so a later query
        can use what an earlier one returned).

        A transient failure (a lock conflict, a deadlock) rolls the whole transaction back and
        calls ``work`` again, up to ``TOGETHER_ATTEMPTS`` times, so ``work`` must be safe to
        repeat; one over the server's transaction memory raises ``TransactionTooLargeError`` at
        once (the driver's own retry would run it out of memory again for 30 s).
        """
        with translate_errors(self.settings.uri):
            for attempt in range(1, TOGETHER_ATTEMPTS + 1):
                try:
                    with (
                        self.driver.session(database=self.database) as session,
                        session.begin_transaction() as tx,
                    ):

                        def run(query: Query | str, params: dict[str, Any]) -> BatchResult:
                            result = tx.run(_text(query), params)
                            records = [record_dict(record) for record in result]
                            counters = result.consume().counters
                            return BatchResult(
                                records, counters.nodes_created, counters.relationships_created
                            )

                        done = work(run)
                        tx.commit()
                        return done
                except neo4j_errors.Neo4jError as exc:
                    if _is_out_of_memory(exc) or not exc.is_retryable():
                        raise
                    if attempt == TOGETHER_ATTEMPTS:
                        raise
                    time.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        self.driver.close()


@contextmanager
def connect(settings: Settings) -> Iterator[Database]:
    """Open a driver, check connectivity, yield a Database, close it afterwards."""
    resolved = settings.neo4j
    with translate_errors(resolved.uri):
        driver = GraphDatabase.driver(resolved.uri, auth=_auth(resolved.user, resolved.password))
        try:
            driver.verify_connectivity()
        except BaseException:
            driver.close()
            raise
    database = Database(driver, resolved)
    try:
        yield database
    finally:
        database.close()


def ping(uri: str, user: str, password: SecretStr | None) -> bool:
    """True when a server at ``uri`` answers ``RETURN 1``; used while waiting for a start."""
    # A plain session, not execute_query: the latter retries with backoff, which would delay a
    # start by seconds and log every refused connection.
    try:
        with (
            GraphDatabase.driver(uri, auth=_auth(user, password)) as driver,
            driver.session() as session,
        ):
            record = session.run("RETURN 1 AS ok").single()
            return record is not None and record["ok"] == 1
    except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired, OSError):
        return False
    except neo4j_errors.TransientError:  # e.g. DatabaseUnavailable: still starting its store
        return False
