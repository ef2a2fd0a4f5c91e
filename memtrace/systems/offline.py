"""The offline backend: deterministic, free stand-ins for every LLM step."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from memtrace.systems.core import Action, Fact, Item, Similar, source_key
from memtrace.systems.judge import judge_response, offline_verdict
from memtrace.systems.params import Params
from memtrace.systems.temporal import annotate
from memtrace.systems.text import ANAPHORS, content, sentences, words

NEGATION_CUES = ("no longer", "not anymore", "stopped", "quit", "don't", "do not", "never again")


class OfflineBackend:
    name = "offline"

    def __init__(self) -> None:
        self._item_words: dict[str, frozenset[str]] = {}  # context texts recur across questions

    def extract(
        self, prompt: str, speaker: str, dia_id: str, text: str, params: Params
    ) -> list[Fact]:
        """Keep sentences with enough content words that are not questions; a sentence opening
        with an anaphor joins the previous fact so the fact stays self-contained."""
        facts: list[tuple[str, set[str]]] = []
        for i, sentence in enumerate(sentences(text)):
            if sentence.endswith("?") or len(content(sentence)) < params.min_content_words:
                continue
            first = (words(sentence) or [""])[0]
            if first in ANAPHORS and facts:
                facts[-1] = (f"{facts[-1][0]} {sentence}", {*facts[-1][1], source_key(dia_id, i)})
            else:
                facts.append((sentence, {source_key(dia_id, i)}))
        return [Fact(f"{speaker}: {s}", speaker, frozenset(keys)) for s, keys in facts]

    def decide(
        self, prompt: str, fact: Fact, similar: Sequence[Similar], params: Params
    ) -> list[Action]:
        """NONE for a near-duplicate, DELETE + ADD for a negated restatement, UPDATE (merge)
        for a related short memory, else ADD."""
        best = similar[0] if similar else None
        if best is None:
            return [Action("ADD", text=fact.text)]
        lowered = fact.text.lower()
        if best.score >= params.none_threshold:
            return [Action("NONE", best.memory_id)]
        if best.score >= params.delete_threshold and any(c in lowered for c in NEGATION_CUES):
            return [Action("DELETE", best.memory_id), Action("ADD", text=fact.text)]
        if (
            best.score >= params.update_threshold
            and best.text.count(". ") + 1 < params.max_merge_sentences
        ):
            addition = fact.text.split(": ", 1)[-1]
            return [Action("UPDATE", best.memory_id, f"{best.text} {addition}")]
        return [Action("ADD", text=fact.text)]

    def answer(self, prompt: str, question: str, context: Sequence[Item], params: Params) -> str:
        """Quote the ``answer_items`` context items with the highest idf-weighted overlap with
        the question."""
        if not context:
            return "I don't know."
        docs = [self._words(item.text) for item in context]
        df = Counter(token for doc in docs for token in doc)
        wanted = set(content(question))
        # sorted: float sums in set order would differ between processes (hash randomization)
        scores = [
            sum(math.log(1 + len(docs) / df[t]) for t in sorted(wanted & doc)) for doc in docs
        ]
        order = sorted(range(len(context)), key=lambda i: (-scores[i], i))
        return " ".join(_quote(context[i]) for i in order[: params.answer_items])

    def _words(self, text: str) -> frozenset[str]:
        found = self._item_words.get(text)
        if found is None:
            found = self._item_words[text] = frozenset(content(text))
        return found

    def judge(self, prompt: str, question: str, gold: str, prediction: str, params: Params) -> str:
        correct, reasoning = offline_verdict(gold, prediction, params.judge_f1_threshold)
        return judge_response(correct, reasoning)


def _quote(item: Item) -> str:
    return f"{annotate(item.text, item.date)} ({item.date})" if item.date else item.text
