"""Retrieved-evidence rules of issue 14: dated answers, list answers (offline, pure)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import pytest

from memtrace.attribution.dates import (
    date_phrases,
    is_dated,
    parse_date,
    relative_phrases,
    unglue_dates,
)
from memtrace.attribution.evidence import list_items, retrieved_evidence
from memtrace.attribution.model import Anchor, OpRef
from memtrace.attribution.text import message_timestamp

ANSWER = OpRef("answer", 9, "generation", "answer")
# BM25 needs a corpus in which most words are rare (with two messages every word's IDF is ~0).
FILLER = [(f"f{i}", f"Small talk number {i} about the weather and the kids.") for i in range(8)]


def _anchor(question: str, gold: str, prediction: str | None = None) -> Anchor:
    return Anchor("t", "c", question, (gold,), prediction, True, "q", ANSWER, (), ())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-05-08T13:56:00", date(2023, 5, 8)),
        ("8 May 2023", date(2023, 5, 8)),
        ("1:56 pm on 8 May, 2023", date(2023, 5, 8)),
        ("8 Mai 2023", None),  # not an English month
        ("31 February 2023", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_date_reads_iso_and_locomo_timestamps(text: str | None, expected: date) -> None:
    assert parse_date(text) == expected


def test_message_timestamp_comes_from_the_json_value() -> None:
    assert message_timestamp('{"content": "hi", "timestamp": "8 May 2023"}') == "8 May 2023"
    assert message_timestamp('{"content": "hi"}') is None
    assert message_timestamp("plain text") is None


def test_relative_dates_are_written_out_against_the_day_said() -> None:
    sunday = date(2023, 7, 23)
    assert relative_phrases("I went there yesterday", sunday) == ["22 July 2023"]
    assert relative_phrases("Two days ago I called.", sunday) == ["21 July 2023"]
    assert relative_phrases("Last week was fun", sunday) == ["the week before 23 July 2023"]
    assert relative_phrases("Guess what I did this week?", sunday) == ["the week of 23 July 2023"]
    # "last Friday" / "last Tues": the weekday by name and the day it was.
    assert relative_phrases("Last Friday at dance class", sunday) == [
        "the Friday before 23 July 2023, 21 July 2023"
    ]
    assert relative_phrases("joined a group last Tues.", date(2023, 7, 20)) == [
        "the Tuesday before 20 July 2023, 18 July 2023"
    ]
    # Months and years roll over; "last month" is not a Monday.
    assert relative_phrases("next month", date(2023, 12, 5)) == ["January 2024"]
    assert relative_phrases("last month", date(2023, 1, 5)) == ["December 2022"]
    assert relative_phrases("last year", sunday) == ["2022"]
    assert relative_phrases("nothing relative here, summer was great", sunday) == []


def test_date_phrases_need_the_day_said() -> None:
    assert date_phrases("yesterday", None) == ("", [])
    assert date_phrases("yesterday", date(2023, 7, 3)) == ("3 July 2023", ["2 July 2023"])


def test_is_dated_needs_a_month_or_a_year() -> None:
    assert is_dated("The week before 9 June 2023")
    assert is_dated("2022")
    assert not is_dated("Running, pottery")
    assert not is_dated("7 kids")


def test_a_dated_answer_finds_the_message_that_said_yesterday() -> None:
    corpus = [
        ("other", "I love pottery, it is so calming. Did you try it?"),
        ("said", "I just signed up for a pottery class yesterday. It's like therapy."),
        ("later", "My pottery class was great today."),
    ]
    dates = {"other": date(2023, 7, 3), "said": date(2023, 7, 3), "later": date(2023, 8, 1)}
    anchor = _anchor("When did Melanie sign up for a pottery class?", "2 July 2023")
    assert [e.id for e in retrieved_evidence(anchor, corpus, dates=dates)] == ["said"]
    # Without the dates no message covers the answer: the best-ranked statement is kept.
    assert [e.id for e in retrieved_evidence(anchor, corpus)] == ["said"]


def test_a_dated_answer_ties_are_broken_by_the_question() -> None:
    """Every message of the session carries the day: the one about what was asked wins, also
    over the retriever's first pick (here a dense ranking that prefers the other message)."""
    corpus = [
        ("met", "Thanks! My friends give me strength. Here's a pic from when we met up last week!"),
        ("talk", "I wanted to tell you about my school event last week. I gave a speech."),
    ]
    dates = {i: date(2023, 6, 9) for i, _ in corpus + FILLER}

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] if i == 0 or "met up" in t else [0.0, 1.0] for i, t in enumerate(texts)]

    anchor = _anchor("When did Caroline give a speech at a school?", "The week before 9 June 2023")
    found = retrieved_evidence(anchor, corpus + FILLER, retriever="dense", embed=embed, dates=dates)
    assert [e.id for e in found] == ["talk"]
    # Not for an undated answer: there the retriever's order stands.
    anchor = _anchor("What did Caroline give at a school?", "support last week")
    found = retrieved_evidence(anchor, corpus + FILLER, retriever="dense", embed=embed, dates=dates)
    assert [e.id for e in found] == ["met"]


def test_a_day_glued_to_its_month_is_read_as_two_words() -> None:
    assert unglue_dates("The week before 3June, 2022") == "The week before 3 June, 2022"
    assert unglue_dates("10july 2022, 2nd place, 3pm") == "10 july 2022, 2nd place, 3pm"
    corpus = [
        ("other", "The charity event last week was a blast, we raised so much."),
        ("talk", "I gave a talk at the event at school last week, so nervous!"),
    ]
    dates = {"other": date(2023, 6, 3), "talk": date(2023, 6, 9)}
    dates |= {i: date(2023, 5, 1) for i, _ in FILLER}
    # Glued, "9june" matches nothing: both messages' "last week" cover the rest equally and the
    # question, about the charity event, would pick the other one.
    anchor = _anchor("When was the charity event?", "The week before 9June, 2023")
    assert [e.id for e in retrieved_evidence(anchor, corpus + FILLER, dates=dates)] == ["talk"]


def test_a_message_referring_to_the_date_beats_one_only_said_then() -> None:
    corpus = [
        ("june", "I'm planning on going camping with friends, camping is the best."),
        ("may", "We're thinking about going camping next month."),
    ]
    dates = {"june": date(2023, 6, 20), "may": date(2023, 5, 25)}
    dates |= {i: date(2023, 6, 20) for i, _ in FILLER}
    anchor = _anchor("When is Melanie planning on going camping?", "June 2023")
    assert [e.id for e in retrieved_evidence(anchor, corpus + FILLER, dates=dates)] == ["may"]


def test_list_items_are_comma_separated_things() -> None:
    assert list_items("beach, mountains, forest") == ["beach", "mountains", "forest"]
    assert list_items("Running") == []
    assert list_items("She was happy and thankful") == []
    assert list_items("Yes, pottery") == ["pottery"]


def test_a_list_answer_adds_a_message_per_item_the_first_lacks() -> None:
    corpus = [
        ("run", "I've been running farther to de-stress."),
        ("pot", "Pottery is my way to de-stress, so calming."),
        ("talk", "Do you like running? Or walking?"),  # a question holds no answer
        ("noise", "The weather was fine today."),
    ]
    anchor = _anchor("What does Melanie do to destress?", "Running, pottery")
    assert {e.id for e in retrieved_evidence(anchor, corpus + FILLER)} == {"run", "pot"}
    # Nothing is added when the first message holds every item.
    corpus[0] = ("run", "Running and pottery help me de-stress.")
    assert [e.id for e in retrieved_evidence(anchor, corpus + FILLER)] == ["run"]


def test_relative_dates_counted_in_digits_this_month_and_the_same_weekday_a_week_back() -> None:
    monday = date(2023, 5, 8)
    assert relative_phrases("I moved 3 days ago", monday) == ["5 May 2023"]
    assert relative_phrases("busy this month", monday) == ["May 2023"]
    # "last Monday" said on a Monday is a week back, not the same day
    assert relative_phrases("last Monday", monday) == ["the Monday before 8 May 2023, 1 May 2023"]
    assert parse_date("sometime soon") is None  # no day, month and year in it


def test_retrieved_evidence_ranks_half_an_answer_and_every_item_a_message_lacks() -> None:
    """A message holding half the gold answer's words covers it; an evidence's rank is its
    place in the retrieval (from 1); each list item the chosen message lacks adds the message
    holding it, after an item the chosen one holds."""
    corpus = [
        ("walk", "We went for a long walk by the lake yesterday."),
        ("kite", "My daughter flies her red kite every weekend."),
    ]
    (found,) = retrieved_evidence(
        _anchor("What does her daughter fly?", "red balloon"), corpus + FILLER
    )
    assert (found.id, found.covers, found.rank) == ("kite", True, 1)  # "red" is half of it
    corpus = [
        ("both", "Beaches and mountains are where we went camping last summer."),
        ("forest", "Forest."),  # all its words are the item's
        ("noise", "The weather was fine today."),
    ]
    anchor = _anchor("Where did they go camping?", "beaches, mountains, forest")
    found_all = retrieved_evidence(anchor, corpus + FILLER)
    # the added message's rank is its place in the retrieval for the question and its item
    assert [(e.id, e.rank) for e in found_all] == [("both", 1), ("forest", 2)]


def test_retrieved_evidence_without_a_covering_statement_keeps_one_message() -> None:
    corpus = [("q1", "Did you see the game?"), ("q2", "Was the game fun?")]
    found = retrieved_evidence(_anchor("Who won the game?", "the Tigers"), corpus + FILLER)
    assert len(found) == 1 and not found[0].covers
