"""What model calls cost: a value shared by the LLM client, the judges and the backends.

Its own module so that pure code (judges, walks) can add up usage without importing the client.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """What one or more requests cost. ``calls`` counts HTTP requests actually sent."""

    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.cache_hits + other.cache_hits,
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
        )

    @staticmethod
    def total(items: Iterable[Usage]) -> Usage:
        result = Usage()
        for item in items:
            result = result + item
        return result
