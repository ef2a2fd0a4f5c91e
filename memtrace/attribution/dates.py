"""Dates a message refers to, resolved against the date it was said (pure).

People say "yesterday" or "last week"; gold answers say "2 July 2023" or "The week before
9 June 2023" (LoCoMo resolves them against the session date). No message contains such an
answer, so lexical evidence finding cannot match it. ``date_phrases`` writes out, in the
answers' form, the date a message was said on and every relative date it uses, so that
evidence finding can match them against a dated gold answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

_MONTHS: tuple[str, ...] = ("january", "february", "march", "april", "may", "june", "july")
_MONTHS += ("august", "september", "october", "november", "december")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# A weekday by its name or a usual abbreviation ("last Tues").
_WEEKDAY = "|".join(f"{w}|{w[:4]}|{w[:3]}" for w in _WEEKDAYS)
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "couple of": 2}
_NUMBER = r"(\d+|a|one|two|three|four|five|six|couple of)"
_DAY_MONTH_YEAR = re.compile(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})")
_DATED_ANSWER = re.compile(rf"\b({'|'.join(_MONTHS)}|(19|20)\d\d)\b", re.IGNORECASE)


def parse_date(text: str | None) -> date | None:
    """A message timestamp: ISO ("2023-05-08T13:56:00") or LoCoMo's ("1:56 pm on 8 May, 2023",
    "8 May 2023"); None when it is neither."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.strip()).date()
    except ValueError:
        pass
    match = _DAY_MONTH_YEAR.search(text)
    if match is None or match.group(2).lower() not in _MONTHS:
        return None
    try:
        return date(
            int(match.group(3)), _MONTHS.index(match.group(2).lower()) + 1, int(match.group(1))
        )
    except ValueError:
        return None


_GLUED_DAY = re.compile(rf"(\d)({'|'.join(_MONTHS)})\b", re.IGNORECASE)


def unglue_dates(text: str) -> str:
    """ "3June, 2022" -> "3 June, 2022": LoCoMo's gold answers sometimes drop that space, and
    "3june" would then match no message's words."""
    return _GLUED_DAY.sub(r"\1 \2", text)


def without_dates(text: str) -> str:
    """``text`` without its day-month-year dates ("13 April 2023"): those an answer step writes
    beside a quoted memory say when it was stored, not what it holds."""
    return _DAY_MONTH_YEAR.sub(" ", text)


def is_dated(answer: str) -> bool:
    """Whether an answer names a month or a year (what the date phrases can match)."""
    return _DATED_ANSWER.search(answer) is not None


def day(when: date) -> str:
    return f"{when.day} {_MONTHS[when.month - 1].capitalize()} {when.year}"


def month(when: date, shift: int = 0) -> str:
    index = when.year * 12 + when.month - 1 + shift
    return f"{_MONTHS[index % 12].capitalize()} {index // 12}"


def weekday_before(name: str, said_on: date) -> str:
    """ "last Friday": the Friday before ``said_on``, by name and as a day."""
    index = next(i for i, w in enumerate(_WEEKDAYS) if w.startswith(name.lower()))
    back = (said_on.weekday() - index - 1) % 7 + 1
    name = _WEEKDAYS[index].capitalize()
    return f"the {name} before {day(said_on)}, {day(said_on - timedelta(days=back))}"


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


# (pattern, phrase for the match and the day the message was said)
_RELATIVE: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], date], str]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), phrase)
    for pattern, phrase in (
        (r"\b(yesterday|last night)\b", lambda m, d: day(d - timedelta(days=1))),
        (r"\btomorrow\b", lambda m, d: day(d + timedelta(days=1))),
        (rf"\b{_NUMBER} days? ago\b", lambda m, d: day(d - timedelta(days=_count(m[1].lower())))),
        (r"\b(last|past) week\b|\ba week ago\b", lambda m, d: f"the week before {day(d)}"),
        (rf"\b{_NUMBER} weeks ago\b", lambda m, d: f"{m[1]} weeks before {day(d)}"),
        (r"\b(last|past) weekend\b", lambda m, d: f"the weekend before {day(d)}"),
        (r"\bnext week\b", lambda m, d: f"the week after {day(d)}"),
        (r"\bthis week\b", lambda m, d: f"the week of {day(d)}"),
        (r"\b(last|past) month\b|\ba month ago\b", lambda m, d: month(d, -1)),
        (r"\bthis month\b", lambda m, d: month(d)),
        (r"\bnext month\b", lambda m, d: month(d, 1)),
        (r"\blast year\b|\ba year ago\b", lambda m, d: str(d.year - 1)),
        (r"\bthis year\b", lambda m, d: str(d.year)),
        (r"\bnext year\b", lambda m, d: str(d.year + 1)),
        (rf"\blast ({_WEEKDAY})\b", lambda m, d: weekday_before(m[1], d)),
    )
)


def relative_phrases(text: str, said_on: date) -> list[str]:
    """The dates ``text`` refers to relatively ("yesterday"), written out against ``said_on``."""
    return [phrase(m, said_on) for pattern, phrase in _RELATIVE for m in pattern.finditer(text)]


def date_phrases(text: str, said_on: date | None) -> tuple[str, list[str]]:
    """(the day the message was said, the relative dates it uses), in the answers' form."""
    if said_on is None:
        return "", []
    return day(said_on), relative_phrases(text, said_on)
