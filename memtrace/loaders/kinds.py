"""Normalized operation kinds: an ordered, documented rule table (docs/graph-model.md)."""

from __future__ import annotations

import re
from typing import Final

from memtrace.taxonomy import Kind

# First match wins. Matched case-insensitively against the operation name.
Rules = tuple[tuple[Kind, re.Pattern[str]], ...]


def _compile(rules: tuple[tuple[Kind, str], ...]) -> Rules:
    return tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in rules)


NAME_RULES: Final[Rules] = _compile(
    (
        ("judge", r"judge"),
        ("deletion", r"delete|remove|forget"),
        ("retrieval", r"search|retriev|recall|lookup|rerank|agentic_round"),
        ("other", r"boundary_detection"),
        ("embedding", r"add_to_vector_store|embed|index|insert|(^|\.)add$"),
        ("extraction", r"extract|finalize_memory_unit"),
        ("update", r"update|merge|buffer"),
        ("generation", r"question-answering|question_answering|answer|generat|respond|completion"),
    )
)

# Used only when no name rule matched. Matched against the whole category.
CATEGORY_RULES: Final[Rules] = _compile(
    (
        ("extraction", r"extract\w*|extraction"),
        ("update", r"update"),
        ("deletion", r"delet\w*"),
        ("embedding", r"embed\w*"),
        ("retrieval", r"retriev\w*|search"),
        ("generation", r"generat\w*|answer\w*"),
        ("judge", r"judg\w*"),
        ("other", r"other"),
    )
)


def derive_kind(name: str, category: str | None) -> Kind:
    """The kind of an operation from its name, then its category; ``other`` when nothing fits."""
    for kind, pattern in NAME_RULES:
        if pattern.search(name):
            return kind
    if category:
        for kind, pattern in CATEGORY_RULES:
            if pattern.fullmatch(category.strip()):
                return kind
    return "other"
