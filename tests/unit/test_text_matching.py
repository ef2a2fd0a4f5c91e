"""What the offline judge's matching sees in text written the way other people's systems write
it (tests/usersystems): speakers, wrappers, timestamps, inflections, third person, paragraphs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memtrace.attribution.text import message_speaker, message_text, message_timestamp, said
from memtrace.reading import LEXICAL
from memtrace.reading.keys import key_sentences
from memtrace.reading.lexical import containment, content_words, holds, ranking_words, stem


@pytest.mark.parametrize(
    ("value", "text", "speaker", "timestamp"),
    [
        (  # MemBase's wrapper
            "Speaker Ana (role: user) says: My dog is called Biscuit.\nTimestamp: 2024-03-02T10:15",
            "My dog is called Biscuit.",
            "Ana",
            "2024-03-02T10:15",
        ),
        (
            "[2023-06-02 09:14] Ana: I moved to Porto.",
            "I moved to Porto.",
            "Ana",
            "2023-06-02 09:14",
        ),
        ("Ana Lima: I moved to Porto.", "I moved to Porto.", "Ana Lima", None),
        (
            json.dumps({"name": "Mia", "content": "Mia: I got a puppy."}),
            "I got a puppy.",
            "Mia",
            None,
        ),
        (  # LoCoMo-style JSON: what it says is kept as it is
            json.dumps({"speaker": "Mel", "text": "(laughs) Sure: why not?", "timestamp": "8 May"}),
            "(laughs) Sure: why not?",
            "Mel",
            "8 May",
        ),
        ("the meeting is at 10:30 tomorrow", "the meeting is at 10:30 tomorrow", None, None),
    ],
)
def test_a_message_is_taken_apart_into_what_was_said_by_whom_and_when(
    value: str, text: str, speaker: str | None, timestamp: str | None
) -> None:
    assert said(value).text == message_text(value) == text
    assert message_speaker(value) == speaker
    assert message_timestamp(value) == timestamp


@pytest.mark.parametrize(
    "forms",
    [
        ("moved", "move", "moves", "moving"),
        ("grew", "grow", "grows", "growing", "grown"),
        ("tried", "tries", "try"),
        ("planned", "plan", "planning"),
        ("called", "call", "calls"),
        ("glasses", "glass"),
        ("bought", "buys", "buy"),
    ],
)
def test_inflections_of_one_word_meet(forms: tuple[str, ...]) -> None:
    assert len({stem(word) for word in forms}) == 1


def test_possessives_and_the_third_person_keep_what_was_said() -> None:
    assert content_words("Ana's dog") == content_words("Ana dog")
    assert holds(content_words("My dog is called Biscuit."), ["Ana's dog is called Biscuit."])
    assert holds(content_words("I moved to Porto in 2019."), ["Ana | move | to Porto in 2019"])
    assert holds(
        content_words("I grew tomatoes on the balcony."), ["Ana | grow | tomatoes on the balcony"]
    )


def test_a_sentence_is_held_by_one_sentence_not_by_words_across_a_paragraph() -> None:
    episode = (
        "### Memory 1:\nmorning chat\nMia sold cookies at the school fair. "
        "Tom rode his bike to work every day. Tom's knee hurts, so he swims."
    )
    assert content_words("I sold my bike.") <= content_words(episode.splitlines()[-1])
    assert containment(content_words("I sold my bike."), episode) < 1.0
    assert containment(content_words("Tom rode his bike to work every day."), episode) == 1.0


def test_wrapper_words_are_not_evidence() -> None:
    """Two different sentences of one speaker, both wrapped: the wrapper matches, they do not."""
    wrapped = "Speaker Caroline (role: user) says: {}\nTimestamp: 2023-05-08T13:56"
    key = said(wrapped.format("I went to a support group yesterday.")).text
    other = wrapped.format("I painted a lake sunrise last year.")
    assert not holds(content_words(key), [other])
    assert holds(content_words(key), [wrapped.format(key)])


def test_a_short_sentence_holding_a_telling_answer_is_the_key_one() -> None:
    message = "My dog is called Biscuit. He is a beagle."
    assert key_sentences(message, "Which breed is Ana's dog?", ["beagle"]) == ["He is a beagle."]
    # "Yes." holds a yes, which tells nothing: the sentence sharing most words is the key one
    assert key_sentences("Yes. I love the lake.", "Do you love the lake?", ["Yes"]) == [
        "I love the lake."
    ]


def test_the_answer_model_ranks_with_a_plain_rankers_words() -> None:
    # a plain ranker keeps "Melanie's" one word and strips only plain suffixes
    assert ranking_words("Melanie's favorite books") == {"melani", "favorite", "book"}
    assert ranking_words("moved") != ranking_words("move")


WORDS = ("Ana", "moved", "Lisbon", "teaches", "piano", "Sopot", "dog", "Rex", "May", "2023")
statement = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)
memory = st.lists(statement, min_size=1, max_size=3).map(lambda parts: ". ".join(parts) + ".")


@given(sentence=statement, memories=st.lists(memory, max_size=8))
def test_reading_many_memories_together_reads_each_as_reading_it_alone(
    sentence: str, memories: list[str]
) -> None:
    # the trail reads a trace's memories together (postings); each must read as on its own
    together = LEXICAL.read_each(sentence, memories)
    assert together == [LEXICAL.read(sentence, [text]) for text in memories]
    words = content_words(sentence)
    assert [r.score for r in together] == [containment(words, text) for text in memories]
