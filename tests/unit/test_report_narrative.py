"""The narrative prompt is versioned data whose placeholders are checked."""

from __future__ import annotations

import pytest

from memtrace.report.narrative import NARRATIVE_PROMPT, PromptTemplate


def test_placeholders_must_match_the_declared_inputs() -> None:
    with pytest.raises(ValueError, match="placeholders"):
        PromptTemplate("x", 1, "Hello {name} {other}", ("name",))


def test_render_takes_exactly_the_inputs() -> None:
    text = NARRATIVE_PROMPT.render(summary="[S]", classes="[C]")
    assert "Summary: [S]" in text and "Classes: [C]" in text
    with pytest.raises(ValueError, match="takes"):
        NARRATIVE_PROMPT.render(summary="[S]")
