"""An optional written analysis of the top failure classes by the configured LLM."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
from pydantic import BaseModel, Field

from memtrace.llm import LLMClient, Usage
from memtrace.patterns.export import records
from memtrace.prompts import PROMPTS, Prompt

SYSTEM = PROMPTS.add(
    Prompt(
        "report-narrative-system-prompt",
        1,
        "You are a careful reliability engineer analysing failures of LLM memory systems.",
    )
)

NARRATIVE_PROMPT = PROMPTS.add(
    Prompt(
        name="report-narrative",
        version=1,
        text=(
            "An attribution run named, for each wrongly answered question, the operation of the "
            "memory pipeline that lost the needed fact and an error type. Below are the run's "
            "headline numbers and its largest failure classes (JSON). Write a short analysis for "
            "the team that owns the system: what fails most, whether it is fixable by changing a "
            "prompt or parameter ('inputs'; an empty list means no optimizable input), and what to "
            "look at first. Use only these numbers.\n\nSummary: {summary}\n\nClasses: {classes}"
        ),
        inputs=("summary", "classes"),
    )
)

CLASS_FIELDS = ["system", "op_name", "error_type", "stage", "inputs", "cases", "share_of_failures"]


class Narrative(BaseModel):
    summary: str = Field(min_length=1, description="two to four sentences")
    findings: list[str] = Field(min_length=1, max_length=6, description="one sentence each")


@dataclass(frozen=True)
class WrittenNarrative:
    summary: str
    findings: list[str]
    usage: Usage


def write_narrative(
    client: LLMClient, summary: pd.DataFrame, classes: pd.DataFrame, top: int = 5
) -> WrittenNarrative:
    """Ask the LLM for the analysis; raises LLMError when the endpoint fails or keeps answering
    with unusable output."""
    prompt = NARRATIVE_PROMPT.format(
        summary=json.dumps(records(summary)),
        classes=json.dumps(records(classes.head(top)[CLASS_FIELDS])),
    )
    reply = client.complete_json(prompt, Narrative, system=SYSTEM.text, temperature=0)
    return WrittenNarrative(reply.value.summary, reply.value.findings, reply.usage)
