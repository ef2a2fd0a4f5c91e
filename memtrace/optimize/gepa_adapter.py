"""Prompt proposals with GEPA (the ``gepa`` package) through a memtrace adapter.

* ``evaluate`` runs the system with a candidate ``{prompt name: text}`` on a minibatch of train
  cases (the units that hold them, only those cases) and scores each case 1/0 by the system's
  judge.
* ``make_reflective_dataset`` (guided) keeps, for a prompt, the failed cases whose attribution
  blames an operation reading that prompt, with the error type, the blamed operation and the
  judge's reason; unguided it is every failed case with "wrong answer, expected X", which is all
  an optimizer without attribution sees.
* the component selector (guided) rewrites the prompt whose failure classes hold most of the
  minibatch's failures (the largest class breaks ties); unguided it is GEPA's round robin.
* ``propose_new_texts`` asks the reflection model (``memtrace.llm``, cached) for a JSON reply
  ``{"prompt": ...}``; a reply that stays malformed after one repair, or an empty text, keeps
  the current text and is counted in ``malformed``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from memtrace.errors import ConfigError, LLMError
from memtrace.llm import LLMClient, Usage
from memtrace.optimize.plugin import CaseResult, Configuration
from memtrace.optimize.routing import Routing
from memtrace.optimize.scoring import Blame, Budget, Evaluator, Score
from memtrace.prompts import PROMPTS, Prompt

REFLECTION = PROMPTS.add(
    Prompt(
        "prompt-reflection-prompt",
        1,
        """You improve one prompt of an LLM memory system (extraction -> memory update ->
retrieval -> answer). The prompt is named {name}. Its current text:
<prompt>
{current}
</prompt>

Cases the system answered wrongly, with what is known about why:
{examples}

Write an improved version of the prompt that fixes these failures without breaking other
cases. Reply with JSON only: {{"prompt": "<the complete new prompt text>"}}""",
        inputs=("name", "current", "examples"),
    )
)
EXAMPLES = 6  # failed cases shown to the reflection model per proposal


class GepaLog:
    """GEPA's progress lines go to the debug log, not stdout (which ``--json`` owns)."""

    def log(self, message: str) -> None:
        logging.getLogger("memtrace.optimize.gepa").debug(message)


class PromptReply(BaseModel):
    prompt: str


@dataclass(frozen=True, slots=True)
class CaseRef:
    unit: str  # the system's unit (a conversation) that holds the case
    case_id: str


class MemtraceAdapter:
    def __init__(
        self,
        evaluator: Evaluator,
        incumbent: Configuration,
        reflection: LLMClient,
        *,
        budget: Budget,
        routing: Routing | None,
        blames: Mapping[str, Blame],
    ) -> None:
        """``budget``: what the minibatch runs are charged to (and GEPA stops by)."""
        self.evaluator = evaluator
        self.budget = budget
        self.incumbent = incumbent
        self.reflection = reflection
        self.routing = routing
        self.blames = blames
        self.usage = Usage()
        self.malformed = 0
        self.proposals = 0
        self.proposals_path = evaluator.cache_path.parent / "proposals.jsonl"
        self._known: dict[str, dict[str, Any]] | None = None

    # -- evaluation ---------------------------------------------------------------------------
    def config(self, candidate: Mapping[str, str]) -> Configuration:
        return self.incumbent.with_prompts(candidate)

    def evaluate(
        self, batch: list[CaseRef], candidate: dict[str, str], capture_traces: bool = False
    ) -> Any:
        from gepa.core.adapter import EvaluationBatch

        results = self.run_cases(self.config(candidate), batch)
        trajectories = [{"case": ref, "result": results[ref.case_id]} for ref in batch]
        return EvaluationBatch(
            outputs=[results[ref.case_id].prediction for ref in batch],
            scores=[1.0 if results[ref.case_id].passed else 0.0 for ref in batch],
            trajectories=trajectories if capture_traces else None,
        )

    def run_cases(self, config: Configuration, batch: Sequence[CaseRef]) -> dict[str, CaseResult]:
        run = self.evaluator.run_cases(config, [(ref.unit, ref.case_id) for ref in batch])
        return {r.case_id: r for r in run.results}

    # -- reflection ---------------------------------------------------------------------------
    def make_reflective_dataset(
        self,
        candidate: dict[str, str],
        eval_batch: Any,
        components_to_update: list[str],
    ) -> dict[str, list[dict[str, Any]]]:
        failed = [t for t in eval_batch.trajectories or [] if not t["result"].passed]
        return {name: self.records(name, failed) for name in components_to_update}

    def records(self, name: str, failed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        routed = (
            {c for cls in self.routing.motivating(name) for c in cls.case_ids}
            if self.routing is not None
            else None
        )
        rows = []
        for item in failed:
            ref, result = item["case"], item["result"]
            row = {
                "Inputs": result.question,
                "Generated Outputs": result.prediction,
                "Feedback": f"wrong answer, expected {result.expected}",
            }
            blame = self.blames.get(ref.case_id)
            if routed is not None:
                if ref.case_id not in routed or blame is None:
                    continue  # attribution blames an operation that does not read this prompt
                row["Feedback"] += (
                    f". Attribution: {blame.error_type} at {blame.op_name}: {blame.reason}"
                )
            rows.append(row)
        return rows[:EXAMPLES]

    def propose_new_texts(
        self,
        candidate: dict[str, str],
        reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> dict[str, str]:
        out = {}
        for name in components_to_update:
            examples = "\n".join(
                json.dumps(dict(row), ensure_ascii=False) for row in reflective_dataset[name]
            )
            request = REFLECTION.format(
                name=name, current=candidate[name], examples=examples or "(none)"
            )
            self.proposals += 1
            out[name] = self.proposal(name, request, candidate[name])
        return out

    def proposal(self, name: str, request: str, current: str) -> str:
        """The reflection model's new text; the current one when its reply is unusable. Kept
        in ``proposals.jsonl`` so a resumed run asks again for nothing, failures included
        (the LLM cache keeps only valid replies)."""
        key = hashlib.sha256(f"{name}\0{request}".encode()).hexdigest()
        known = self._proposals().get(key)
        if known is not None:
            self.malformed += known["malformed"]
            return str(known["text"] or current)
        try:
            reply = self.reflection.complete_json(request, PromptReply, temperature=0)
            self.usage = self.usage + reply.usage
            self.evaluator.reflection_usage = self.evaluator.reflection_usage + reply.usage
            new = reply.value.prompt.strip()
            if not new:
                raise ConfigError(f"the reflection model's {name!r} is empty")
            text: str | None = self.incumbent.with_prompts({name: new}).text(name)
        except (LLMError, ConfigError):
            self.malformed += 1
            text = None
        row = {"key": key, "text": text, "malformed": text is None}
        self._proposals()[key] = row
        with self.proposals_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(row) + "\n")
        return text or current

    def _proposals(self) -> dict[str, dict[str, Any]]:
        if self._known is None:
            self._known = {}
            if self.proposals_path.is_file():
                for line in self.proposals_path.read_text(encoding="utf-8").splitlines():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by an interruption
                    self._known[row["key"]] = row
        return self._known

    # -- component selection (guided) ---------------------------------------------------------
    def select(
        self,
        state: Any,
        trajectories: list[dict[str, Any]],
        subsample_scores: list[float],
        candidate_idx: int,
        candidate: dict[str, str],
    ) -> list[str]:
        assert self.routing is not None
        failed = {t["case"].case_id for t in trajectories if not t["result"].passed}
        weight: Counter[str] = Counter()
        size: Counter[str] = Counter()
        for cls in self.routing.optimizable:
            for name in cls.targets:
                if name in candidate:
                    weight[name] += len(failed & set(cls.case_ids))
                    size[name] += cls.cases
        names = [n for n in candidate if n in size] or list(candidate)
        return [max(names, key=lambda n: (weight[n], size[n]))]


def propose_prompts(
    adapter: MemtraceAdapter,
    targets: Sequence[str],
    *,
    metric_calls: int,
    reserve: int,
    seed: int,
) -> list[tuple[Configuration, Score]]:
    """Run GEPA over ``targets`` (seeded with the incumbent's texts) on the train cases; the
    candidates it found, scored on the whole train split."""
    from gepa.api import optimize

    trainset = [CaseRef(unit, case_id) for unit, case_id in adapter.evaluator.cases("train")]
    budget = adapter.budget
    guided = adapter.routing is not None
    result: Any = optimize(
        seed_candidate={name: adapter.incumbent.text(name) for name in targets},
        trainset=trainset,
        valset=trainset,  # GEPA selects on train: the held-out split is only for acceptance
        adapter=cast(Any, adapter),  # a structural GEPAAdapter
        module_selector=cast(Any, adapter.select) if guided else "round_robin",
        reflection_minibatch_size=min(4, len(trainset)),
        max_metric_calls=metric_calls,
        stop_callbacks=[lambda _state: not budget.affords(reserve)],
        seed=seed,
        raise_on_exception=True,
        logger=GepaLog(),
    )
    out = []
    total = len(trainset)
    for index, candidate in enumerate(result.candidates):
        if index == 0:
            continue  # the seed: the incumbent itself
        accuracy = float(result.val_aggregate_scores[index])
        out.append((adapter.config(candidate), Score(round(accuracy * total), total)))
    return out
