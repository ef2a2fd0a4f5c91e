"""The narrative prompt is versioned data in the prompt registry, with checked inputs."""

from __future__ import annotations

import pytest

from memtrace.errors import ConfigError
from memtrace.prompts import PROMPTS
from memtrace.report.narrative import NARRATIVE_PROMPT


def test_the_narrative_prompts_are_registered() -> None:
    assert PROMPTS["report-narrative"] is NARRATIVE_PROMPT
    assert PROMPTS["report-narrative-system-prompt"].inputs == ()


def test_a_revision_must_keep_the_inputs() -> None:
    with pytest.raises(ConfigError, match=r"missing \{classes\}"):
        NARRATIVE_PROMPT.revise("Summary only: {summary}")


def test_format_needs_every_input() -> None:
    text = NARRATIVE_PROMPT.format(summary="[S]", classes="[C]")
    assert "Summary: [S]" in text and "Classes: [C]" in text
    with pytest.raises(ConfigError, match="needs classes"):
        NARRATIVE_PROMPT.format(summary="[S]")
