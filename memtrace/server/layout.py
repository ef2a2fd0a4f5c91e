"""Where the managed server keeps its jars, configuration, data, logs and state."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, SecretStr, ValidationError

from memtrace.errors import ServerError


class ServerState(BaseModel):
    """What `start` chose, read back by `status`, `stop` and the settings resolver."""

    bolt_port: int
    http_port: int
    auth: bool
    pid: int | None = None
    started_at: str | None = None


@dataclass(frozen=True)
class ServerLayout:
    home: Path  # MEMTRACE_HOME

    @property
    def root(self) -> Path:
        return self.home / "neo4j"

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def install_marker(self) -> Path:
        return self.lib / ".memtrace-install.json"

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def conf_file(self) -> Path:
        return self.conf_dir / "neo4j.conf"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def console_log(self) -> Path:
        return self.logs / "console.log"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def plugins(self) -> Path:
        return self.root / "plugins"

    @property
    def import_dir(self) -> Path:
        return self.root / "import"

    @property
    def state_file(self) -> Path:
        return self.run / "memtrace-server.json"

    @property
    def password_file(self) -> Path:
        return self.root / "password"

    @property
    def auth_store(self) -> Path:
        """Neo4j's own initial-password file; its presence means the password was set."""
        return self.data / "dbms" / "auth.ini"

    def make_dirs(self) -> None:
        for folder in (
            self.conf_dir,
            self.data,
            self.logs,
            self.run,
            self.plugins,
            self.import_dir,
        ):
            folder.mkdir(parents=True, exist_ok=True)

    def read_state(self) -> ServerState | None:
        try:
            return ServerState.model_validate_json(self.state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as exc:
            raise ServerError(f"unreadable server state {self.state_file}: {exc}") from exc

    def write_state(self, state: ServerState) -> None:
        self.run.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.model_dump(), indent=2), encoding="utf-8")
        tmp.replace(self.state_file)

    def read_password(self) -> SecretStr | None:
        try:
            return SecretStr(self.password_file.read_text(encoding="utf-8").strip())
        except FileNotFoundError:
            return None

    def write_password(self, password: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        # Create with 0600 from the start so the secret is never world-readable, not even briefly.
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(password + "\n")
