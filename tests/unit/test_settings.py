from pathlib import Path

import pytest

from memtrace.errors import ConfigError
from memtrace.server.layout import ServerLayout, ServerState
from memtrace.settings import load_settings

ENV_NAMES = (
    "NEO4J_URI",
    "NEO4J_USER",
    "NEO4J_PASSWORD",
    "NEO4J_DATABASE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEMTRACE_LLM_MODEL",
    "MEMTRACE_SETTINGS",
    "MEMTRACE_LLM_TIMEOUT",
    "MEMTRACE_LLM_CONCURRENCY",
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMTRACE_HOME", str(tmp_path))
    return tmp_path


def test_managed_server_is_the_default(home: Path) -> None:
    layout = ServerLayout(home)
    layout.write_state(ServerState(bolt_port=17001, http_port=17002, auth=True, pid=1))
    layout.write_password("s3cret")
    settings = load_settings()
    assert settings.neo4j.managed
    assert settings.neo4j.uri == "bolt://127.0.0.1:17001"
    assert settings.neo4j.password is not None
    assert settings.neo4j.password.get_secret_value() == "s3cret"
    assert oct(layout.password_file.stat().st_mode & 0o777) == "0o600"


def test_managed_server_without_auth_has_no_password(home: Path) -> None:
    ServerLayout(home).write_state(ServerState(bolt_port=17001, http_port=17002, auth=False))
    assert load_settings().neo4j.password is None


def test_env_beats_file_and_cli_beats_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "settings.toml").write_text(
        '[neo4j]\nuri = "neo4j+s://file.example"\ndatabase = "fromfile"\nuser = "fileuser"\n'
        '[llm]\nmodel = "file-model"\n'
    )
    monkeypatch.setenv("NEO4J_DATABASE", "fromenv")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    settings = load_settings(neo4j={"user": "cliuser", "password": None})
    assert settings.neo4j.uri == "neo4j+s://file.example"
    assert not settings.neo4j.managed
    assert settings.neo4j.database == "fromenv"
    assert settings.neo4j.user == "cliuser"
    assert settings.llm.model == "file-model"
    assert settings.llm.api_key is not None
    assert settings.llm.api_key.get_secret_value() == "sk-env"


def test_secrets_do_not_show_in_repr(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://x:7687")
    monkeypatch.setenv("NEO4J_PASSWORD", "hunter2")
    assert "hunter2" not in repr(load_settings())


def test_bad_settings_file_is_a_clear_error(home: Path) -> None:
    (home / "settings.toml").write_text("[neo4j\nuri=")
    with pytest.raises(ConfigError, match=r"settings\.toml"):
        load_settings()
    (home / "settings.toml").write_text('[neo4j]\nport = 1\nuri = "bolt://x"\n')
    with pytest.raises(ConfigError, match="port"):
        load_settings()


def test_llm_timeout_and_concurrency_from_file_env_and_cli(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (load_settings().llm.timeout_seconds, load_settings().llm.concurrency) == (60.0, 4)
    (home / "settings.toml").write_text("[llm]\ntimeout_seconds = 90\nconcurrency = 2\n")
    assert (load_settings().llm.timeout_seconds, load_settings().llm.concurrency) == (90.0, 2)
    monkeypatch.setenv("MEMTRACE_LLM_TIMEOUT", "300")
    monkeypatch.setenv("MEMTRACE_LLM_CONCURRENCY", "1")
    assert (load_settings().llm.timeout_seconds, load_settings().llm.concurrency) == (300.0, 1)
    llm = load_settings(llm={"timeout_seconds": "600", "concurrency": None}).llm
    assert (llm.timeout_seconds, llm.concurrency) == (600.0, 1)
    monkeypatch.setenv("MEMTRACE_LLM_CONCURRENCY", "0")
    with pytest.raises(ConfigError, match="concurrency"):
        load_settings()
