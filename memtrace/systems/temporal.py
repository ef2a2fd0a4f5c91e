"""Resolve relative time expressions against the date a memory was stored.

The offline answerer annotates them in place ("yesterday" -> "yesterday (7 May 2023)"), the
way the question-answering prompt asks an LLM to: LoCoMo's temporal gold answers are written
like that ("7 May 2023", "The sunday before 25 May 2023", "June 2023").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip


def parse_date(text: str) -> date | None:
    try:
        return datetime.strptime(text, "%d %B %Y").date()
    except ValueError:
        return None


def _day(d: date) -> str:
    return f"{d.day} {d:%B} {d.year}"


def _month(d: date, delta: int) -> str:
    index = d.year * 12 + d.month - 1 + delta
    return f"{date(index // 12, index % 12 + 1, 1):%B} {index // 12}"


def _count(word: str) -> int | None:
    return int(word) if word.isdigit() else NUMBERS.get(word)


def _days_ago(match: re.Match[str], anchor: date) -> str | None:
    n = _count(match[1].lower())
    return _day(anchor - timedelta(days=n)) if n else None


def _ago(match: re.Match[str]) -> str | None:
    n = _count(match[1].lower())
    return f"{n} {match[2]} ago" if n else None


Resolver = Callable[[re.Match[str], date], str | None]
Rule = tuple[re.Pattern[str], Resolver]

RULES: tuple[Rule, ...] = tuple(
    (re.compile(rf"\b{pattern}\b", re.IGNORECASE), resolve)
    for pattern, resolve in (
        ("yesterday|last night", lambda m, d: _day(d - timedelta(days=1))),
        ("today|tonight|this morning", lambda m, d: _day(d)),
        ("last weekend", lambda m, d: f"the weekend before {_day(d)}"),
        ("last week", lambda m, d: f"the week before {_day(d)}"),
        (f"last ({'|'.join(WEEKDAYS)})", lambda m, d: f"the {m[1].lower()} before {_day(d)}"),
        ("last month", lambda m, d: _month(d, -1)),
        ("this month", lambda m, d: _month(d, 0)),
        ("next month", lambda m, d: _month(d, 1)),
        ("last year", lambda m, d: str(d.year - 1)),
        ("this year", lambda m, d: str(d.year)),
        ("next year", lambda m, d: str(d.year + 1)),
        (r"(\w+) days? ago", lambda m, d: _days_ago(m, d)),
        (r"(\w+) (years?|months?|weeks?) ago", lambda m, d: _ago(m)),
    )
)


def annotate(text: str, stored: str) -> str:
    """``text`` with each relative time expression followed by its resolution."""
    anchor = parse_date(stored)
    if anchor is None:
        return text
    for pattern, resolve in RULES:
        text = pattern.sub(functools.partial(_annotated, resolve=resolve, anchor=anchor), text)
    return text


def _annotated(match: re.Match[str], resolve: Resolver, anchor: date) -> str:
    resolved = resolve(match, anchor)
    return f"{match[0]} ({resolved})" if resolved else match[0]
