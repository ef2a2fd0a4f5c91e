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
    """UTC wall time; the text is formatted once per millisecond (records come much faster)."""

    def __init__(self) -> None:
        self._ms = -1
        self._text = ""

    def now(self) -> str:
        ms = time.time_ns() // 1_000_000
        if ms != self._ms:
            self._ms, self._text = ms, _iso(datetime.fromtimestamp(ms / 1000, UTC))
        return self._text


class SimClock:
    """Advances a fixed step per reading, so record order is strict and reruns repeat exactly."""

    def __init__(self, start: datetime | None = None, step_ms: int = 1) -> None:
        self._moment = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._step = timedelta(milliseconds=step_ms)

    def now(self) -> str:
        self._moment += self._step
        return _iso(self._moment)
