"""Judges by name, and the embedder dense evidence retrieval uses: what the CLI offers.

A new judge is one entry in ``JUDGES``: a factory from a ``JudgeContext`` (the settings and
what else the caller has for judges, such as the traces' replayers) to a ``Judge``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memtrace.attribution.evidence import Embed, Retriever
from memtrace.attribution.hybrid import HybridJudge
from memtrace.attribution.judges import Judge, OfflineJudge
from memtrace.attribution.llm_judge import LLMJudge
from memtrace.attribution.replay_judge import Replayers, ReplayJudge
from memtrace.errors import ConfigError
from memtrace.llm import LLMClient
from memtrace.settings import Settings


@dataclass(frozen=True)
class JudgeContext:
    """What a judge factory may use: the settings and, for a judge that replays, the replayers
    of the traces (``memtrace.replay.graph.LoadedTraces`` over the caller's database)."""

    settings: Settings
    replayers: Replayers | None = None


def _replay_judge(context: JudgeContext) -> Judge:
    if context.replayers is None:
        raise ConfigError("the replay judge needs the traces' replayers (none were passed)")
    return ReplayJudge(context.replayers)


def _hybrid(client: LLMClient) -> Judge:
    return HybridJudge(LLMJudge(client), client=client)


JudgeFactory = Callable[[JudgeContext], Judge]

JUDGES: dict[str, JudgeFactory] = {
    "offline": lambda _context: OfflineJudge(),
    "llm": lambda context: LLMJudge(LLMClient.from_settings(context.settings)),
    "hybrid": lambda context: _hybrid(LLMClient.from_settings(context.settings)),
    # executes the counterfactuals: replays the traced system
    "replay": _replay_judge,
}


def default_judge(settings: Settings) -> str:
    """The hybrid judge when an LLM endpoint is configured (a weak model cannot make it worse
    than the offline judge), else the offline one."""
    return "hybrid" if settings.llm.base_url else "offline"


AUTO = "auto"  # the CLI's default: ``choose_judge`` picks one of ``JUDGES`` per run
JUDGE_CHOICES: tuple[str, ...] = (AUTO, *JUDGES)
ReplayRefusal = Callable[[str], str | None]  # trace id -> why it cannot be replayed (None: it can)


@dataclass(frozen=True)
class JudgeChoice:
    name: str
    why: str


def choose_judge(
    requested: str | None,
    settings: Settings,
    trace_ids: Sequence[str],
    replay_refusal: ReplayRefusal,
) -> JudgeChoice:
    """The judge a run uses, and why. A named judge is used as asked; ``auto`` (or None)
    executes the counterfactuals where it can: the replay judge when every trace of the run
    can be replayed (``replay_refusal`` says, per trace), else ``default_judge``."""
    if requested not in (None, AUTO):
        return JudgeChoice(str(requested), "asked for")
    refused = next((why for t in trace_ids if (why := replay_refusal(t)) is not None), None)
    if trace_ids and refused is None:
        many = "every trace of the run" if len(trace_ids) > 1 else f"trace {trace_ids[0]!r}"
        return JudgeChoice("replay", f"{many} can be replayed: executed counterfactuals")
    fallback = default_judge(settings)
    why_not = f"no replay ({refused})" if refused else "no trace to replay"
    endpoint = "an LLM endpoint is configured" if fallback == "hybrid" else "no LLM endpoint"
    return JudgeChoice(fallback, f"{why_not}; {endpoint}")


def make_judge(name: str | None, settings: Settings, replayers: Replayers | None = None) -> Judge:
    """The judge registered as ``name`` (None: ``default_judge``); ``replayers``: the traces'
    (the replay judge's)."""
    resolved = name or default_judge(settings)
    if resolved not in JUDGES:
        raise ConfigError(f"unknown judge {resolved!r} (expected one of {', '.join(JUDGES)})")
    return JUDGES[resolved](JudgeContext(settings, replayers))


def embedder(settings: Settings, retriever: Retriever) -> Embed | None:
    """Dense retrieval embeds through the configured OpenAI-compatible endpoint."""
    if retriever == "bm25":
        return None
    client = LLMClient.from_settings(settings)
    model = settings.llm.embedding_model

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return client.embed(texts, model=model).vectors

    return embed
