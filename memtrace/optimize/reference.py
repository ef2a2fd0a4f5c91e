"""memtrace's own systems (mem0, rag, long-context, evermemos, mem0-lib) as optimizer plugins.

``ReferenceSystem`` is an ``OptimizableSystem`` like any user's: its units are the numbers of
the LoCoMo conversations it was given, its knobs every ``Params`` field (searchable where
``RANGES`` has a range and the system reads it) and every prompt (tunable where the system says
so; the answer's prompt and ``answer_items`` declared read by the answer operation), and its
accepted configuration memtrace's TOML (``memtrace run --prompts --params``) plus, for a system
with terms of its own, its files (mem0-lib: a Mem0 config).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from memtrace.errors import ConfigError
from memtrace.llm import LLMClient, Usage
from memtrace.optimize.plugin import (
    CaseResult,
    Configuration,
    Knob,
    Knobs,
    ParameterKnob,
    PromptKnob,
    SystemRun,
    Tracing,
)
from memtrace.settings import Settings
from memtrace.systems.config import SystemConfig, write_config
from memtrace.systems.core import Backend
from memtrace.systems.locomo import Conversation
from memtrace.systems.params import RANGES, Params
from memtrace.systems.registry import SYSTEMS, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock

ANSWER_PARAMETERS = ("answer_items",)  # what the answer operation reads besides its prompt


class ReferenceSystem:
    def __init__(
        self,
        system: str,
        backend: Backend,
        conversations: Sequence[Conversation],
        *,
        base: SystemConfig | None = None,
        settings: Settings | None = None,
    ) -> None:
        """``base``: the configuration to start from (prompt versions kept); ``settings``: for
        a system that calls an endpoint itself (mem0-lib)."""
        if system not in SYSTEMS:
            raise ConfigError(f"unknown system {system!r} (expected one of {', '.join(SYSTEMS)})")
        self.name = system
        self.factory = SYSTEMS[system]
        self.answer_op = self.factory.answer_op
        self.backend = backend
        self.conversations = {str(c.number): c for c in conversations}
        self.base = base or SystemConfig()
        self.settings = settings

    @property
    def usage(self) -> Usage:
        """LLM calls of the system's backend (an OpenAI-compatible one counts them)."""
        found = getattr(self.backend, "usage", None)
        return found if isinstance(found, Usage) else Usage()

    def knobs(self) -> list[Knob]:
        answer_prompt = self.factory.answer_prompt
        reads = set(self.factory.parameters)
        out: list[Knob] = [
            PromptKnob(
                name,
                prompt.text,
                read_by=(self.answer_op,) if name == answer_prompt else (),
                inputs=tuple(prompt.inputs),
                tunable=name in self.factory.tunable_prompts,
            )
            for name, prompt in sorted(self.base.prompts.items())
        ]
        for f in fields(Params):
            bounds = RANGES.get(f.name) if f.name in reads else None
            out.append(
                ParameterKnob(
                    f.name,
                    getattr(self.base.params, f.name),
                    bounds.low if bounds else None,
                    bounds.high if bounds else None,
                    read_by=(self.answer_op,) if f.name in ANSWER_PARAMETERS else (),
                )
            )
        return out

    def configuration(self, config: SystemConfig | None = None) -> Configuration:
        """``config`` (default: the base) as the optimizer's plain data."""
        chosen = config or self.base
        return Configuration(
            {n: p.text for n, p in chosen.prompts.items()},
            {f.name: getattr(chosen.params, f.name) for f in fields(Params)},
            Knobs.of(self.knobs(), self.answer_op),
        )

    def system_config(self, config: Configuration) -> SystemConfig:
        return self.base.with_prompts(dict(config.prompts)).with_params(**config.params)

    def case_ids(self) -> list[str]:
        return list(self.conversations)

    def run(
        self,
        config: Configuration,
        ids: Sequence[str],
        *,
        tracing: Tracing | None = None,
        only: Collection[str] | None = None,
    ) -> SystemRun:
        chosen = self.system_config(config)
        system = make_system(
            self.name,
            self.backend,
            params=chosen.params,
            prompts=chosen.prompts,
            settings=self.settings,
        )
        results: list[CaseResult] = []
        traces: dict[str, Path] = {}
        for unit in ids:
            conv = self.conversations[unit]
            questions = {f"locomo-qa-{conv.number}-{q.number}": q for q in conv.questions}
            if tracing is not None:
                run, path = run_conversation(
                    system, conv, tracing.directory, prefix=tracing.prefix, clock=SimClock()
                )
                if path is not None:
                    traces[run.trace_id] = path
            elif only is not None:
                run = system.run(conv, only=only)
            else:
                run = run_conversation(system, conv, None)[0]
            results.extend(
                CaseResult(
                    r.case_id,
                    unit,
                    r.passed,
                    r.prediction,
                    questions[r.case_id].text,
                    questions[r.case_id].answer,
                    run.trace_id if tracing is not None else "",
                )
                for r in run.results
            )
        return SystemRun(results, traces)

    def write_config(self, config: Configuration, directory: Path) -> list[Path]:
        chosen = self.system_config(config)
        paths = list(write_config(chosen, directory))
        native: dict[str, Any] = self.factory.native_configs(chosen.prompts, chosen.params)
        for name, data in native.items():
            (directory / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            paths.append(directory / name)
        return paths


def reference_system(
    name: str,
    mode: str,
    settings: Settings,
    conversations: Sequence[Conversation],
    base: SystemConfig | None = None,
) -> ReferenceSystem:
    """The reference system ``name`` on ``conversations`` with the backend of the optimizer's
    ``mode``: offline for parameters, the configured OpenAI-compatible endpoint for prompts
    (an LLM rewrites prompts only an LLM reads)."""
    if mode == "prompts":
        if not settings.llm.base_url:
            raise ConfigError("the prompt mode needs an LLM endpoint: set OPENAI_BASE_URL")
        from memtrace.systems.openai_backend import OpenAIBackend  # local: offline runs skip it

        backend: Backend = OpenAIBackend(LLMClient.from_settings(settings))
    else:
        from memtrace.systems.offline import OfflineBackend

        backend = OfflineBackend()
    return ReferenceSystem(name, backend, conversations, base=base, settings=settings)
