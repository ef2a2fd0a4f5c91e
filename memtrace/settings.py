"""One settings object, read when needed (never at import).

Precedence, highest first: explicit overrides (CLI options), environment variables, the settings
file (``$MEMTRACE_HOME/settings.toml`` or ``$MEMTRACE_SETTINGS``), then the managed local Neo4j
server that ``memtrace neo4j start`` runs.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from memtrace.errors import ConfigError

DEFAULT_HOME = Path("~/.local/share/memtrace")


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
    timeout_seconds: float = Field(default=60.0, gt=0)
    # Requests in flight at once, over all case workers: a local server often has one slot, and
    # requests queued behind it time out; case workers (CPU and Neo4j) are a separate knob.
    concurrency: int = Field(default=4, ge=1)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path
    neo4j: Neo4jSettings
    llm: LLMSettings


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
}


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
    """Resolve settings; ``neo4j``/``llm`` hold CLI overrides (``None`` values are ignored)."""
    home = memtrace_home()
    file_values = _read_file(_settings_file(home))
    neo4j_values: dict[str, Any] = {
        **file_values.get("neo4j", {}),
        **_from_env(_ENV_NEO4J),
        **{k: v for k, v in (neo4j or {}).items() if v is not None},
    }
    llm_values: dict[str, Any] = {
        **file_values.get("llm", {}),
        **_from_env(_ENV_LLM),
        **{k: v for k, v in (llm or {}).items() if v is not None},
    }
    if "uri" not in neo4j_values:
        neo4j_values.update(_managed_server_connection(home))
    else:
        neo4j_values["managed"] = False
    try:
        return Settings(
            home=home, neo4j=Neo4jSettings(**neo4j_values), llm=LLMSettings(**llm_values)
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {exc}") from exc


def _managed_server_connection(home: Path) -> dict[str, Any]:
    """Address and credentials of the managed local server, if it has been started before."""
    from memtrace.server.layout import ServerLayout  # local: keeps settings import-light

    state = ServerLayout(home).read_state()
    values: dict[str, Any] = {"managed": True}
    if state is not None:
        values["uri"] = f"bolt://127.0.0.1:{state.bolt_port}"
        if state.auth:
            values["password"] = ServerLayout(home).read_password()
    return values
