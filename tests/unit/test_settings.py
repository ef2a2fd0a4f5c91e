from pathlib import Path

import pytest
from pydantic import SecretStr

from memtrace.errors import ConfigError
from memtrace.server.layout import ServerLayout, ServerState
from memtrace.settings import Settings, load_settings

ENV_NAMES = (
    "NEO4J_URI",
    "NEO4J_USER",
    "NEO4J_PASSWORD",
    "NEO4J_DATABASE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEMTRACE_LLM_MODEL",
    "MEMTRACE_SETTINGS",
    "MEMTRACE_BOLT_PORT",
    "MEMTRACE_LLM_TIMEOUT",
    "MEMTRACE_LLM_CONCURRENCY",
    "MEMTRACE_EMBEDDING_DIMS",
    "MEMTRACE_ALLOW_MODEL_DOWNLOAD",
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


def _managed(home: Path, port: int = 17001, password: str = "managed-pw") -> None:
    layout = ServerLayout(home)
    layout.write_state(ServerState(bolt_port=port, http_port=17002, auth=True, pid=1))
    layout.write_password(password)


def _password(settings: Settings) -> str | None:
    secret = settings.neo4j.password
    return None if secret is None else secret.get_secret_value()


def test_env_password_alone_applies_to_the_managed_server(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _managed(home)
    monkeypatch.setenv("NEO4J_PASSWORD", "from-env")
    settings = load_settings()
    assert settings.neo4j.uri == "bolt://127.0.0.1:17001"
    assert settings.neo4j.managed
    assert _password(settings) == "from-env"


def test_cli_password_alone_applies_to_the_managed_server(home: Path) -> None:
    _managed(home)
    assert _password(load_settings(neo4j={"password": "from-cli", "uri": None})) == "from-cli"


def test_uri_naming_the_managed_server_gets_its_password(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _managed(home)
    for uri in ("bolt://127.0.0.1:17001", "neo4j://localhost:17001"):
        monkeypatch.setenv("NEO4J_URI", uri)
        settings = load_settings()
        assert settings.neo4j.uri == uri
        assert settings.neo4j.managed
        assert _password(settings) == "managed-pw"


def test_managed_password_is_never_sent_elsewhere(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _managed(home)
    for uri in ("bolt://127.0.0.1:17999", "neo4j+s://db.example:17001"):
        monkeypatch.setenv("NEO4J_URI", uri)
        settings = load_settings()
        assert not settings.neo4j.managed
        assert settings.neo4j.password is None


def test_every_neo4j_field_follows_cli_env_file_managed(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _managed(home)
    fields = {"uri": "bolt://127.0.0.1:17001", "user": "u", "password": "p", "database": "d"}
    env = {"uri": "NEO4J_URI", "user": "NEO4J_USER", "password": "NEO4J_PASSWORD"}
    env["database"] = "NEO4J_DATABASE"
    for field, base in fields.items():
        layers = {"file": f"{base}-file", "env": f"{base}-env", "cli": f"{base}-cli"}
        if field == "uri":  # keep the address the managed one so the layers are comparable
            layers = {name: f"bolt://localhost:17001/{name}" for name in layers}
        (home / "settings.toml").write_text(f'[neo4j]\n{field} = "{layers["file"]}"\n')
        monkeypatch.setenv(env[field], layers["env"])
        with_cli = load_settings(neo4j={field: layers["cli"]})
        without_cli = load_settings()
        monkeypatch.delenv(env[field])
        file_only = load_settings()
        (home / "settings.toml").unlink()
        managed_only = load_settings()

        def value(settings: Settings, name: str = field) -> str | None:
            if name == "password":
                return _password(settings)
            return str(getattr(settings.neo4j, name))

        assert value(with_cli) == layers["cli"], field
        assert value(without_cli) == layers["env"], field
        assert value(file_only) == layers["file"], field
        expected_managed = {
            "uri": "bolt://127.0.0.1:17001",
            "user": "neo4j",
            "password": "managed-pw",
            "database": "neo4j",
        }
        assert value(managed_only) == expected_managed[field], field


def test_every_llm_field_follows_cli_env_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"}
    env["model"] = "MEMTRACE_LLM_MODEL"
    for field, name in env.items():
        (home / "settings.toml").write_text(f'[llm]\n{field} = "file"\n')
        monkeypatch.setenv(name, "env")

        def value(settings: Settings, key: str = field) -> str | None:
            raw = getattr(settings.llm, key)
            return raw.get_secret_value() if isinstance(raw, SecretStr) else raw

        assert value(load_settings(llm={field: "cli"})) == "cli"
        assert value(load_settings()) == "env"
        monkeypatch.delenv(name)
        assert value(load_settings()) == "file"
        (home / "settings.toml").unlink()


def test_what_systems_read_from_the_environment_comes_through_the_settings(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mem0-lib's vector size and the sentence-transformers download switch: read here, once
    defaults = load_settings()
    assert (defaults.llm.embedding_dims, defaults.allow_model_download) == (1536, False)
    (home / "settings.toml").write_text("allow_model_download = true\n[llm]\nembedding_dims = 8\n")
    from_file = load_settings()
    assert (from_file.llm.embedding_dims, from_file.allow_model_download) == (8, True)
    monkeypatch.setenv("MEMTRACE_EMBEDDING_DIMS", "64")
    monkeypatch.setenv("MEMTRACE_ALLOW_MODEL_DOWNLOAD", "0")
    from_env = load_settings()
    assert (from_env.llm.embedding_dims, from_env.allow_model_download) == (64, False)
    monkeypatch.setenv("MEMTRACE_EMBEDDING_DIMS", "many")
    with pytest.raises(ConfigError, match="embedding_dims"):
        load_settings()


def test_without_a_started_server_the_default_port_follows_the_env(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMTRACE_BOLT_PORT", "17123")
    settings = load_settings()
    assert settings.neo4j.uri == "bolt://127.0.0.1:17123"
    assert settings.neo4j.managed
    monkeypatch.setenv("MEMTRACE_BOLT_PORT", "seventy")
    with pytest.raises(ConfigError, match="MEMTRACE_BOLT_PORT"):
        load_settings()


def test_neo4j_start_help_shows_the_port_the_env_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from memtrace.cli import cli

    monkeypatch.setenv("MEMTRACE_BOLT_PORT", "17555")
    monkeypatch.delenv("MEMTRACE_HTTP_PORT", raising=False)
    shown = " ".join(CliRunner().invoke(cli, ["neo4j", "start", "--help"]).output.split())
    assert "default: 17555" in shown
    assert "MEMTRACE_BOLT_PORT" in shown
    assert "default: 7474" in shown


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
