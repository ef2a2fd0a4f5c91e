"""What the tests of the real Mem0 library (mem0-lib, either mem0ai version) share: the local
endpoint's environment, the CLI's JSON, a traced run of the sample and step lookups."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI

from memtrace.cli import cli
from memtrace.replay import TraceReplayer, make_replayer, read_native
from memtrace.settings import load_settings
from memtrace.systems.locomo import SAMPLE_PATH, load_locomo
from memtrace.systems.params import Params
from memtrace.systems.registry import make_backend, make_system
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock


def skip_unless_mem0(version: str, extra: str) -> None:
    """Skip the calling test module unless the installed mem0ai's version starts with
    ``version`` (each version's tests run in the virtualenv that has it: scripts/test.sh)."""
    try:
        installed = importlib.metadata.version("mem0ai")
    except importlib.metadata.PackageNotFoundError:
        installed = ""
    if not installed.startswith(version):
        pytest.skip(f"needs mem0ai {version}x ({extra})", allow_module_level=True)


def use_endpoint(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mem0's LLM and embedder on the local server (word-count embeddings of 64 dimensions)."""
    fake.bag_of_words = 64
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("MEMTRACE_LLM_MODEL", "fake-model")
    monkeypatch.setenv("MEMTRACE_EMBEDDING_DIMS", "64")


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def traced_run(
    tmp_path: Path, params: Params | None = None
) -> tuple[Path, dict[str, tuple[bool, str]]]:
    """Conversation 1 of the sample, run and traced (no database): the trace and the answers."""
    settings = load_settings()
    system = make_system("mem0-lib", make_backend("offline"), params=params, settings=settings)
    run, path = run_conversation(system, load_locomo(SAMPLE_PATH)[0], tmp_path, clock=SimClock())
    assert path is not None
    return path, {r.case_id: (r.passed, r.prediction) for r in run.results}


def step_op(replayer: TraceReplayer, step: str) -> str:
    """The op id of the original trace that is ``step``."""
    return next(op for op, name in replayer.steps().items() if name == step)


def repaired_alone(
    replayer: TraceReplayer, fake: FakeOpenAI, case: str, step: str, error_type: str, detail: str
) -> list[Any]:
    """Replay ``case`` with ``step`` repaired alone and check that it is rescued by exactly that
    repair (its step, op, type and ``detail`` in what it did); returns the chat requests the
    replay sent to the endpoint."""
    sent = len(fake.chat_requests)
    fixed = replayer.replay(case, [step_op(replayer, step)])
    assert fixed.passed, (case, fixed.prediction)
    (change,) = fixed.repaired
    assert (change.step, change.op_id, change.error_type) == (
        step, step_op(replayer, step), error_type,
    )  # fmt: skip
    assert detail in change.detail
    return list(fake.chat_requests[sent:])


def recorded_calls(path: Path) -> list[dict[str, Any]]:
    """The operations of a native trace that recorded a model call (``llm_request``)."""
    ops = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [o for o in ops if (o.get("metadata") or {}).get("llm_request")]


def replays_identically(
    path: Path, answers: dict[str, tuple[bool, str]], fake: FakeOpenAI
) -> TraceReplayer:
    """Replays every case of a ``traced_run(tmp_path, Params(top_k=3))`` trace without repairs:
    each answer (some failing) is reproduced with no chat call, the replay read ``top_k`` back
    and left the trace as it was. The replayer, for more checks."""
    before, sent = path.read_bytes(), len(fake.chat_requests)
    inputs = read_native(path)
    assert inputs.params.top_k == 3
    replayer = make_replayer(inputs, load_settings())
    again = {case: replayer.replay(case) for case in answers}
    assert {case: (r.passed, r.prediction) for case, r in again.items()} == answers
    assert False in {passed for passed, _ in answers.values()}
    assert len(fake.chat_requests) == sent  # every model call came from the trace
    assert path.read_bytes() == before  # a replay never writes the trace it replays
    return replayer
