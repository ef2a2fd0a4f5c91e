"""The one exception tree. Driver, HTTP and OS errors are translated into these at the boundary."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtrace.usage import Usage


class MemtraceError(Exception):
    """Base of every error memtrace raises on purpose; the CLI prints these without a traceback."""


class ConfigError(MemtraceError):
    """Settings are missing or contradictory."""


class ServerError(MemtraceError):
    """The managed local Neo4j server could not be installed, started or stopped."""


class Neo4jError(MemtraceError):
    """Talking to Neo4j failed."""


class Neo4jUnavailableError(Neo4jError):
    """No Neo4j server answers at the configured address."""


class Neo4jAuthError(Neo4jError):
    """Neo4j refused the credentials."""


class QueryError(Neo4jError):
    """Neo4j rejected or failed a query."""


class TransactionTooLargeError(QueryError):
    """The server refused a transaction for its memory limit (dbms.memory.transaction.*)."""


class DatabaseNotEmptyError(MemtraceError):
    """A bulk import replaces the whole database, so it only runs on an empty one."""


class InputError(MemtraceError):
    """Bad user input: names the file, the place in it and what is wrong."""

    def __init__(self, path: str, location: str | None, problem: str) -> None:
        self.path = path
        self.location = location
        self.problem = problem
        where = f"{path}:{location}" if location else path
        super().__init__(f"{where}: {problem}")


class NotReplayableError(MemtraceError):
    """A trace memtrace cannot re-execute (an imported trace, an unknown system, a run that
    does not reproduce)."""


class Mem0InstrumentationError(MemtraceError):
    """The instrumented Mem0 does not behave as the supported version ranges do (nothing is
    written for that call)."""


class OutOfBudget(MemtraceError):
    """The next evaluation would exceed the optimizer run's budget (the loop stops, not an
    error exit)."""


class LLMError(MemtraceError):
    """An OpenAI-compatible endpoint failed or answered with unusable output.

    ``usage``: what the failed attempt cost (requests sent, tokens), so callers can count it.
    """

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class JudgeError(LLMError):
    """A judge's question failed mid-search; ``usage`` and ``checked`` (candidate op ids) say
    what the search had spent and looked at, so a failed case still records its cost."""

    def __init__(self, message: str, *, usage: Usage | None, checked: list[str]) -> None:
        super().__init__(message, usage=usage)
        self.checked = checked


class ReviewError(MemtraceError):
    """A review names a case, operation, error type or decision that does not fit (nothing is
    written)."""
