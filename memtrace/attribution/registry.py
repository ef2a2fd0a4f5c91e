"""Judges by name, and the embedder dense evidence retrieval uses: what the CLI offers.

A new judge is one entry in ``JUDGES``: a factory from the settings to a ``Judge``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memtrace.attribution.evidence import Embed, Retriever
from memtrace.attribution.hybrid import HybridJudge
from memtrace.attribution.judges import Judge, OfflineJudge
from memtrace.attribution.llm_judge import LLMJudge
from memtrace.attribution.replay_judge import ReplayJudge
from memtrace.errors import ConfigError
from memtrace.llm import LLMClient
from memtrace.replay.graph import GraphReplayers
from memtrace.settings import Settings

JudgeFactory = Callable[[Settings], Judge]

JUDGES: dict[str, JudgeFactory] = {
    "offline": lambda _settings: OfflineJudge(),
    "llm": lambda settings: LLMJudge(LLMClient.from_settings(settings)),
    "hybrid": lambda settings: HybridJudge(LLMJudge(LLMClient.from_settings(settings))),
    # executes the counterfactuals: replays the traced system (reference systems' native traces)
    "replay": lambda settings: ReplayJudge(GraphReplayers(settings)),
}


def default_judge(settings: Settings) -> str:
    """The hybrid judge when an LLM endpoint is configured (a weak model cannot make it worse
    than the offline judge), else the offline one."""
    return "hybrid" if settings.llm.base_url else "offline"


def make_judge(name: str | None, settings: Settings) -> Judge:
    """The judge registered as ``name`` (None: ``default_judge``)."""
    resolved = name or default_judge(settings)
    if resolved not in JUDGES:
        raise ConfigError(f"unknown judge {resolved!r} (expected one of {', '.join(JUDGES)})")
    return JUDGES[resolved](settings)


def embedder(settings: Settings, retriever: Retriever) -> Embed | None:
    """Dense retrieval embeds through the configured OpenAI-compatible endpoint."""
    if retriever == "bm25":
        return None
    client = LLMClient.from_settings(settings)
    model = settings.llm.embedding_model

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return client.embed(texts, model=model).vectors

    return embed
