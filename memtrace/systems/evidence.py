"""Which sentence of an evidence message holds a question's answer (provenance for labels)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memtrace.systems.core import source_key
from memtrace.systems.locomo import Question, Turn
from memtrace.systems.text import content, normalize, sentences


@dataclass(frozen=True, slots=True)
class Evidence:
    keys: tuple[str, ...]  # one key sentence per resolvable evidence message
    missing: tuple[str, ...]  # evidence dia_ids that name no message
    supported: bool  # the evidence text holds at least half of the answer's content words


def key_sentence(question: Question, turn: Turn) -> int:
    """The sentence holding the gold answer, else the one sharing most content words with the
    question and answer (earliest on ties)."""
    parts = sentences(turn.text) or [turn.text]
    answer = normalize(question.answer)
    for i, sentence in enumerate(parts):
        if answer and answer in normalize(sentence):
            return i
    wanted = set(content(question.text + " " + question.answer))
    return max(range(len(parts)), key=lambda i: (len(wanted & set(content(parts[i]))), -i))


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
