"""The LLM judge: the same counterfactual questions, asked of a model with the op's subgraph view.

Prompts sit next to the pydantic models their replies must match. They are registered in the one
prompt registry (``memtrace.prompts``), and the system prompt names ``PROMPT_VERSION``, which is
part of the cached request, so changing a prompt never reuses old answers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, field_validator

from memtrace.attribution.judges import CaseView
from memtrace.attribution.model import Candidate, Check, OperationView
from memtrace.prompts import PROMPTS, Prompt
from memtrace.taxonomy import ERROR_TYPES, ErrorType
from memtrace.usage import Usage

if TYPE_CHECKING:  # the judge is handed a client; it never opens a connection itself
    from memtrace.llm import LLMClient

PROMPT_VERSION = "attribution-v3"
VIEW_BUDGET = 8000  # characters of the whole operation view
CONTEXT_BUDGET = 400  # characters per evidence message

SYSTEM = PROMPTS.add(
    Prompt(
        "attribution-judge-system-prompt",
        1,
        f"""[{PROMPT_VERSION}] You debug LLM memory systems (extraction -> memory update ->
storage -> retrieval -> answer). A question was answered wrongly. You see one operation of the
run: its inputs and outputs. Judge it counterfactually: earlier operations stay as they were,
later operations are assumed ideal. Error types: ExtractionError (the key information never
entered a memory), UpdateError (a memory held it but an update overwrote or degraded it),
DeletionError (a memory holding it was deleted), RetrievalError (stored, but retrieval left it out
of the context), ResponseError (the context held the evidence, the answer is still wrong).""",
    )
)


# A reply missing a field with a safe default is still an answer (small models drop fields):
# unknown type -> the op kind's default, no reason -> empty, no confidence -> 0.5, which is below
# what the hybrid judge needs to override the offline verdict.
DEFAULT_CONFIDENCE = 0.5


class CandidateCheck(BaseModel):
    """Reply to CHECK_PROMPT."""

    faulty: bool = Field(description="the op's output is wrong or insufficient for its role")
    decisive: bool = Field(
        description="correcting this output, later operations ideal (the answer step included), "
        "would rescue the answer"
    )
    error_type: ErrorType | None = Field(default=None, description="the type, when faulty")
    reason: str = Field(default="", description="one or two sentences citing the evidence")
    confidence: float = Field(default=DEFAULT_CONFIDENCE, ge=0.0, le=1.0)

    @field_validator("error_type", mode="before")
    @classmethod
    def _known_type(cls, value: object) -> object:
        return value if value in ERROR_TYPES else None

    @field_validator("confidence", mode="before")
    @classmethod
    def _unit_interval(cls, value: object) -> object:
        """0..1; a percentage (85) is read as 0.85; anything else is no answer."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return DEFAULT_CONFIDENCE
        number = float(value) / 100 if 1 < value <= 100 else float(value)
        return number if 0.0 <= number <= 1.0 else DEFAULT_CONFIDENCE


CHECK_PROMPT = PROMPTS.add(
    Prompt(
        "attribution-candidate-check-prompt",
        2,
        """Question: {question}
Gold answer: {gold}
Wrong prediction: {prediction}

Evidence messages that hold the answer:
{evidence}

Operation under review ({role}):
{view}

Is this operation's output faulty for its role, and would correcting it (earlier operations
unchanged, later ones ideal, the answer step included: given what the gold answer needs, it
answers right) have produced a correct answer?""",
        inputs=("question", "gold", "prediction", "evidence", "role", "view"),
    )
)


class IntactCheck(BaseModel):
    """Reply to INTACT_PROMPT."""

    intact: bool = Field(description="the evidence the answer needs survived this operation")
    reason: str = ""


INTACT_PROMPT = PROMPTS.add(
    Prompt(
        "attribution-intact-check-prompt",
        1,
        """Question: {question}
Gold answer: {gold}

Evidence messages that hold the answer:
{evidence}

Operation ({role}):
{view}

After this operation, is the information needed to answer still intact: carried in this
operation's outputs or in memory, or (for an answering operation) answered correctly?""",
        inputs=("question", "gold", "evidence", "role", "view"),
    )
)


def _cut(text: str, budget: int) -> str:
    return text if len(text) <= budget else text[: budget - 3] + "..."


def render_view(op: OperationView) -> str:
    """An op's subgraph view as compact text, cut to the token budget."""
    lines = [f"operation {op.name} (stage {op.kind}, #{op.seq})"]
    for label, items in (("input", op.inputs), ("output", op.outputs)):
        for item in items:
            if item.get("category") == "prompt":
                continue  # the system prompts are long and the same for every case
            value = " ".join(str(item["value"]).split())
            lines.append(f"{label} {item['id']} [{item['category']}]: {value}")
    for deleted in op.deletes:
        lines.append(f"deletes {deleted}")
    return _cut("\n".join(lines), VIEW_BUDGET)


class LLMJudge:
    name = "llm"
    reads_operations = True

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.model: str | None = client.model

    def _view(self, view: CaseView, candidate: Candidate) -> str:
        op = view.operations.get(candidate.op.id)
        return render_view(op) if op is not None else f"operation {candidate.op.id} (not found)"

    def _fields(self, view: CaseView, candidate: Candidate) -> dict[str, str]:
        anchor = view.graph.anchor
        evidence = "\n".join(
            f"- {e.id}: {_cut(' '.join(e.text.split()), CONTEXT_BUDGET)}"
            for e in view.graph.evidence
        )
        return {
            "question": anchor.question,
            "gold": json.dumps(list(anchor.golden_answers), ensure_ascii=False),
            "prediction": anchor.prediction or "",
            "evidence": evidence or "(none found)",
            "role": candidate.role,
            "view": self._view(view, candidate),
        }

    def check(self, view: CaseView, candidate: Candidate) -> tuple[Check, Usage]:
        prompt = CHECK_PROMPT.format(**self._fields(view, candidate))
        reply = self.client.complete_json(prompt, CandidateCheck, system=SYSTEM.text, temperature=0)
        value = reply.value
        complete = value.model_fields_set >= set(CandidateCheck.model_fields)
        check = Check(
            value.faulty,
            value.decisive,
            value.error_type,
            value.reason,
            value.confidence,
            complete=complete,
        )
        return check, reply.usage

    def intact_after(self, view: CaseView, candidate: Candidate) -> tuple[bool, Usage]:
        prompt = INTACT_PROMPT.format(**self._fields(view, candidate))
        reply = self.client.complete_json(prompt, IntactCheck, system=SYSTEM.text, temperature=0)
        return reply.value.intact, reply.usage
