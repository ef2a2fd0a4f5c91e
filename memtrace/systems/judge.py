"""Judging one answer: the offline rule and strict parsing of LLM judge labels."""

from __future__ import annotations

import json
import re

from memtrace.errors import LLMError
from memtrace.systems.text import content, normalize, token_f1

_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


def offline_verdict(gold: str, prediction: str, f1_threshold: float) -> tuple[bool, str]:
    """CORRECT when the prediction contains the normalized gold answer, contains all of its
    content words (stemmed), or reaches token F1 >= ``f1_threshold`` against it."""
    gold_norm, pred_norm = normalize(gold), normalize(prediction)
    if gold_norm and f" {gold_norm} " in f" {pred_norm} ":
        return True, "the answer contains the gold answer"
    gold_words = set(content(gold))
    if gold_words and gold_words <= set(content(prediction)):
        return True, "the answer contains every content word of the gold answer"
    f1 = token_f1(prediction, gold)
    if f1 >= f1_threshold:
        return True, f"token F1 {f1:.2f} >= {f1_threshold}"
    return False, f"gold answer not contained; token F1 {f1:.2f} < {f1_threshold}"


def judge_response(correct: bool, reasoning: str) -> str:
    return json.dumps({"reasoning": reasoning, "label": "CORRECT" if correct else "WRONG"})


def parse_label(response: str) -> bool:
    """True for CORRECT, False for WRONG. Accepts ``{"label": ...}`` JSON or text naming exactly
    one of the two labels as a whole word, so "incorrect" never counts as correct."""
    try:
        data = json.loads(response)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("label"), str):
        label = str(data["label"]).strip().upper()
        if label in ("CORRECT", "WRONG"):
            return bool(label == "CORRECT")
        raise LLMError(f"judge label must be CORRECT or WRONG, got {data['label']!r}")
    found = set(_LABEL.findall(response.upper()))
    if len(found) != 1:
        raise LLMError(f"judge response names no single CORRECT/WRONG label: {response[:200]!r}")
    return found == {"CORRECT"}
