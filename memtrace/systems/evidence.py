"""Which sentence of an evidence message holds a question's answer (provenance for labels)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memtrace.reading.keys import key_sentences
from memtrace.systems.core import source_key
from memtrace.systems.locomo import Question, Turn
from memtrace.systems.text import content, sentences


@dataclass(frozen=True, slots=True)
class Evidence:
    keys: tuple[str, ...]  # one key sentence per resolvable evidence message
    missing: tuple[str, ...]  # evidence dia_ids that name no message
    supported: bool  # the evidence text holds at least half of the answer's content words


def key_sentence(question: Question, turn: Turn) -> int:
    """The index of the turn's key sentence (``reading.keys``: the one the offline judge
    follows), the first one when several tie."""
    parts = sentences(turn.text) or [turn.text]
    key = key_sentences(turn.text, question.text, [question.answer])[0]
    return next((i for i, part in enumerate(parts) if key in part or part in key), 0)


def evidence(question: Question, turns: Mapping[str, Turn], dates: Mapping[str, str]) -> Evidence:
    keys, missing, text = [], [], ""
    for dia_id in dict.fromkeys(question.evidence):
        turn = turns.get(dia_id)
        if turn is None:
            missing.append(dia_id)
            continue
        keys.append(source_key(dia_id, key_sentence(question, turn)))
        text += f" {turn.text} {dates.get(dia_id, '')}"
    answer_words = set(content(question.answer))
    supported = bool(keys) and (
        not answer_words or 2 * len(answer_words & set(content(text))) >= len(answer_words)
    )
    return Evidence(tuple(keys), tuple(missing), supported)
