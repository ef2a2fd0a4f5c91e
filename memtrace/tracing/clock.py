"""Timestamps for trace records: wall time, or a simulated clock for byte-identical reruns."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> str:
        """The current instant as ISO 8601 text with milliseconds and a zone."""
        ...


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class WallClock:
    """UTC wall time. Records come much faster than the clock ticks, so the text is made once
    per millisecond, and the date and time up to the second once per second."""

    def __init__(self) -> None:
        self._ms = -1
        self._text = ""
        self._second = -1
        self._prefix = ""  # "2026-01-01T00:00:00."

    def now(self) -> str:
        ms = time.time_ns() // 1_000_000
        if ms != self._ms:
            second, millis = divmod(ms, 1000)
            if second != self._second:
                self._second = second
                moment = datetime.fromtimestamp(second, UTC)
                self._prefix = moment.strftime("%Y-%m-%dT%H:%M:%S.")
            self._ms = ms
            self._text = f"{self._prefix}{millis:03d}Z"
        return self._text


class SimClock:
    """Advances a fixed step per reading, so record order is strict and reruns repeat exactly.

    ``start`` is a ``datetime`` or ISO 8601 text (``"2024-05-01"``,
    ``"2024-05-01T09:30:00+02:00"``); a moment without a zone is UTC.
    """

    def __init__(self, start: datetime | str | None = None, step_ms: int = 1) -> None:
        moment = _start(start) if start is not None else datetime(2026, 1, 1, tzinfo=UTC)
        # the text is written with a "Z": keep the moment in UTC
        self._moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
        self._step = timedelta(milliseconds=step_ms)

    def now(self) -> str:
        self._moment += self._step
        return _iso(self._moment)


def _start(start: object) -> datetime:
    if isinstance(start, datetime):
        return start
    if isinstance(start, str):
        try:
            return datetime.fromisoformat(start)
        except ValueError:
            raise ValueError(
                f"SimClock start {start!r}: not an ISO 8601 date or time "
                "(e.g. '2024-05-01' or '2024-05-01T09:30:00Z')"
            ) from None
    raise ValueError(
        f"SimClock start {start!r}: give a datetime or ISO 8601 text such as '2024-05-01', "
        f"not {type(start).__name__}"
    )
