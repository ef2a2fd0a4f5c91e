"""One settings object, read when needed (never at import).

Precedence, highest first: explicit overrides (CLI options), environment variables, the settings
file (``$MEMTRACE_HOME/settings.toml`` or ``$MEMTRACE_SETTINGS``), then the managed local Neo4j
server that ``memtrace neo4j start`` runs.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from memtrace.errors import ConfigError

DEFAULT_HOME = Path("~/.local/share/memtrace")
DEFAULT_BOLT_PORT = 7687
DEFAULT_HTTP_PORT = 7474


class Neo4jSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    uri: str = "bolt://127.0.0.1:7687"
    user: str = "neo4j"
    password: SecretStr | None = None
    database: str = "neo4j"
    managed: bool = True  # True when the address is the managed local server's


class LLMSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    embedding_model: str = "text-embedding-3-small"
    embedding_dims: int = Field(default=1536, ge=1)  # the vectors a store (Mem0's) is sized for
    timeout_seconds: float = Field(default=60.0, gt=0)
    # Requests in flight at once, over all case workers: a local server often has one slot, and
    # requests queued behind it time out; case workers (CPU and Neo4j) are a separate knob.
    concurrency: int = Field(default=4, ge=1)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path
    neo4j: Neo4jSettings
    llm: LLMSettings
    # a local model (sentence-transformers) that is not on disk may be fetched from its hub
    allow_model_download: bool = False
    # how judges and repairs read memories (``memtrace.reading.READERS``): per statement (auto:
    # by words where it copies a message sentence, else by meaning where the extra
    # sentence-transformers is installed), always by meaning, or by words only
    reading: Literal["auto", "meaning", "lexical"] = "auto"


_ENV_NEO4J = {
    "uri": "NEO4J_URI",
    "user": "NEO4J_USER",
    "password": "NEO4J_PASSWORD",
    "database": "NEO4J_DATABASE",
}
_ENV_LLM = {
    "base_url": "OPENAI_BASE_URL",
    "api_key": "OPENAI_API_KEY",
    "model": "MEMTRACE_LLM_MODEL",
    "timeout_seconds": "MEMTRACE_LLM_TIMEOUT",
    "concurrency": "MEMTRACE_LLM_CONCURRENCY",
    "embedding_model": "MEMTRACE_EMBEDDING_MODEL",
    "embedding_dims": "MEMTRACE_EMBEDDING_DIMS",
}
ALLOW_MODEL_DOWNLOAD_ENV = "MEMTRACE_ALLOW_MODEL_DOWNLOAD"
READING_ENV = "MEMTRACE_READING"


def memtrace_home() -> Path:
    return Path(os.environ.get("MEMTRACE_HOME") or DEFAULT_HOME).expanduser()


def _settings_file(home: Path) -> Path:
    return Path(os.environ.get("MEMTRACE_SETTINGS") or home / "settings.toml").expanduser()


def _read_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read settings file {path}: {exc}") from exc


def _from_env(names: dict[str, str]) -> dict[str, str]:
    return {key: os.environ[var] for key, var in names.items() if os.environ.get(var)}


def load_settings(
    neo4j: dict[str, str | None] | None = None, llm: dict[str, str | None] | None = None
) -> Settings:
    """Resolve settings; ``neo4j``/``llm`` hold CLI overrides (``None`` values are ignored).

    Every field is resolved on its own, so ``NEO4J_PASSWORD`` alone changes the password used for
    the managed server, and ``NEO4J_URI`` naming the managed server still gets its password.
    """
    home = memtrace_home()
    file_values = _read_file(_settings_file(home))
    explicit_neo4j: dict[str, Any] = {
        **_section(file_values, "neo4j"),
        **_from_env(_ENV_NEO4J),
        **{k: v for k, v in (neo4j or {}).items() if v is not None},
    }
    llm_values: dict[str, Any] = {
        **_section(file_values, "llm"),
        **_from_env(_ENV_LLM),
        **{k: v for k, v in (llm or {}).items() if v is not None},
    }
    managed = _managed_server_connection(home)
    uri = explicit_neo4j.get("uri", managed["uri"])
    is_managed = isinstance(uri, str) and _same_address(uri, managed["uri"])
    # The managed server's password is offered to that server only, never to another address.
    fallback = managed if is_managed else {}
    neo4j_values = {**fallback, **explicit_neo4j, "managed": is_managed}
    downloads: Any = os.environ.get(ALLOW_MODEL_DOWNLOAD_ENV) or file_values.get(
        "allow_model_download", False
    )
    reading: Any = os.environ.get(READING_ENV) or file_values.get("reading", "auto")
    try:
        return Settings(
            home=home,
            neo4j=Neo4jSettings(**neo4j_values),
            llm=LLMSettings(**llm_values),
            allow_model_download=downloads,
            reading=reading,
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {exc}") from exc


def _section(file_values: dict[str, Any], name: str) -> dict[str, Any]:
    section = file_values.get(name, {})
    if not isinstance(section, dict):
        raise ConfigError(f"settings file: [{name}] must be a table, not {section!r}")
    return section


_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def _same_address(uri: str, managed_uri: str) -> bool:
    """True when ``uri`` is the managed server's Bolt address (any scheme, any local name)."""
    try:
        given, managed = urlsplit(uri), urlsplit(managed_uri)
        return (
            given.hostname in _LOCAL_HOSTS and given.port is not None and given.port == managed.port
        )
    except ValueError:  # e.g. a port that is not a number; the driver will report the URI
        return False


def _managed_server_connection(home: Path) -> dict[str, Any]:
    """Address and credentials of the managed local server (where `neo4j start` would put it)."""
    from memtrace.server.layout import ServerLayout  # local: keeps settings import-light

    layout = ServerLayout(home)
    state = layout.read_state()
    port = state.bolt_port if state is not None else _default_bolt_port()
    values: dict[str, Any] = {"uri": f"bolt://127.0.0.1:{port}"}
    if state is not None and state.auth:
        password = layout.read_password()
        if password is not None:
            values["password"] = password
    return values


def _default_bolt_port() -> int:
    value = os.environ.get("MEMTRACE_BOLT_PORT") or str(DEFAULT_BOLT_PORT)
    try:
        return int(value)
    except ValueError as exc:
        raise ConfigError(f"MEMTRACE_BOLT_PORT must be a port number, not {value!r}") from exc
