"""The managed server, for real: throwaway servers in temporary homes on free ports."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import SecretStr

from memtrace.cli import cli
from memtrace.db import connect
from memtrace.errors import Neo4jAuthError, ServerError
from memtrace.server import manager
from memtrace.server.config import ADMIN_MAIN_CLASS, MIB, MemoryPlan, ServerOptions
from memtrace.server.layout import ServerLayout
from memtrace.settings import LLMSettings, Neo4jSettings, Settings, memtrace_home

SMALL = MemoryPlan(heap_bytes=512 * MIB, pagecache_bytes=128 * MIB)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def throwaway_layout(tmp_path: Path) -> ServerLayout:
    """A fresh home that borrows the jars of the real install (no second download)."""
    installed = ServerLayout(memtrace_home())
    if manager.installed_version(installed) is None:
        if os.environ.get("MEMTRACE_REQUIRE_NEO4J") == "1":
            pytest.fail("Neo4j jars are not installed; run `memtrace neo4j install`")
        pytest.skip("Neo4j jars are not installed; run `memtrace neo4j install`")
    layout = ServerLayout(tmp_path)
    layout.root.mkdir(parents=True)
    layout.lib.symlink_to(installed.lib, target_is_directory=True)
    return layout


def settings_for(layout: ServerLayout, password: SecretStr | None) -> Settings:
    state = layout.read_state()
    assert state is not None
    neo4j = Neo4jSettings(uri=f"bolt://127.0.0.1:{state.bolt_port}", password=password)
    return Settings(home=layout.home, neo4j=neo4j, llm=LLMSettings())


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerLayout]:
    layout = throwaway_layout(tmp_path_factory.mktemp("open"))
    options = ServerOptions(bolt_port=free_port(), http_port=free_port(), auth=False, memory=SMALL)
    manager.start(layout, options)
    yield layout
    manager.stop(layout)


# Every command line the first start ran (java included), to check the password was in none.
ADMIN_COMMANDS: list[list[str]] = []


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerLayout]:
    layout = throwaway_layout(tmp_path_factory.mktemp("auth"))
    # A password starting with "-" (as token_urlsafe generates now and then) must not be taken
    # for an option by neo4j-admin; one of a user's own may hold spaces, quotes, "#" and "@".
    layout.write_password("-" + secrets.token_urlsafe(24) + " a\"b\\c #d 'e @f")
    options = ServerOptions(bolt_port=free_port(), http_port=free_port(), auth=True, memory=SMALL)
    run = subprocess.run

    def recording_run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        ADMIN_COMMANDS.append(list(args))
        return run(args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "run", recording_run)
        manager.start(layout, options)
    yield layout
    manager.stop(layout)


def test_bolt_round_trip(open_server: ServerLayout) -> None:
    with connect(settings_for(open_server, None)) as db:
        assert db.run("RETURN $x + 1 AS y", x=41) == [{"y": 42}]
        components = db.run("CALL dbms.components() YIELD versions, edition RETURN *")
    assert components[0]["versions"][0].startswith("5.26.")
    assert components[0]["edition"] == "community"


def test_browser_is_served(open_server: ServerLayout) -> None:
    info = manager.status(open_server)
    assert info.browser_url is not None
    with urllib.request.urlopen(info.browser_url, timeout=10) as response:
        assert response.status == 200
        assert "<title>Neo4j Browser</title>" in response.read().decode()


def test_status_reports_the_running_server(open_server: ServerLayout) -> None:
    info = manager.status(open_server)
    state = open_server.read_state()
    assert state is not None
    assert info.running and info.pid == state.pid
    assert info.installed_version is not None and info.installed_version.startswith("5.26.")
    assert info.bolt_uri == f"bolt://127.0.0.1:{state.bolt_port}"
    assert info.browser_url == f"http://127.0.0.1:{state.http_port}/browser/"
    assert info.rss_bytes is not None and info.rss_bytes > 100 * MIB
    assert info.data_bytes > 0
    assert info.auth is False


def test_status_cli_json(open_server: ServerLayout) -> None:
    result = CliRunner().invoke(
        cli, ["neo4j", "status", "--json"], env={"MEMTRACE_HOME": str(open_server.home)}
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["running"] is True
    assert payload["browser_url"].endswith("/browser/")


def test_second_start_is_a_no_op(open_server: ServerLayout) -> None:
    state = open_server.read_state()
    assert state is not None
    again = manager.start(open_server, ServerOptions(bolt_port=state.bolt_port, memory=SMALL))
    assert again.already_running
    assert again.state.pid == state.pid


def test_port_already_taken_is_a_clear_error(open_server: ServerLayout, tmp_path: Path) -> None:
    state = open_server.read_state()
    assert state is not None
    other = throwaway_layout(tmp_path)
    options = ServerOptions(bolt_port=state.bolt_port, http_port=free_port(), memory=SMALL)
    with pytest.raises(ServerError, match=f"Bolt port {state.bolt_port} .* already in use"):
        manager.start(other, options)
    assert manager.running_pid(other) is None


def test_auth_on_accepts_the_generated_password_only(auth_server: ServerLayout) -> None:
    password = auth_server.read_password()
    assert password is not None and len(password.get_secret_value()) >= 24
    assert oct(auth_server.password_file.stat().st_mode & 0o777) == "0o600"
    with connect(settings_for(auth_server, password)) as db:
        assert db.run("RETURN 1 AS ok") == [{"ok": 1}]
    wrong = settings_for(auth_server, SecretStr("wrong-password"))
    with pytest.raises(Neo4jAuthError, match="refused the credentials"), connect(wrong):
        pass
    assert "wrong-password" not in auth_server.console_log.read_text()


def test_the_initial_password_never_travels_in_argv(auth_server: ServerLayout) -> None:
    password = auth_server.read_password()
    assert password is not None
    [admin] = [args for args in ADMIN_COMMANDS if ADMIN_MAIN_CLASS in args]
    assert not any(password.get_secret_value() in arg for arg in admin)
    assert admin[-1].startswith("@")  # the argument file, removed once read
    assert not Path(admin[-1][1:]).exists()


def test_cli_start_warms_up_then_stop_then_status_says_stopped(tmp_path: Path) -> None:
    layout = throwaway_layout(tmp_path)
    env = {"MEMTRACE_HOME": str(tmp_path)}
    ports = ["--bolt-port", str(free_port()), "--http-port", str(free_port())]
    memory = ["--heap", "512m", "--page-cache", "128m"]
    started = CliRunner().invoke(cli, ["neo4j", "start", *ports, "--no-auth", *memory], env=env)
    assert started.exit_code == 0, started.output
    assert "Neo4j ready in" in started.output
    # an empty database: the pattern queries are planned and run against a run that is not there
    assert "Pattern queries planned and run once in" in started.output
    assert "no attribution run yet" in started.output
    # and the load and attribution queries, on a small trace loaded, attributed and deleted
    assert "load and attribution queries in" in started.output
    state = layout.read_state()
    assert state is not None
    pid = state.pid
    assert pid is not None and manager.store_in_use(layout)
    # what a bulk import waits for: the store closed (the process may still be shutting down)
    assert manager.release_store(layout) == pid
    assert not manager.store_in_use(layout)
    manager.wait_for_exit(layout, pid)
    info = manager.status(layout)
    assert not info.running and info.pid is None
    assert manager.stop(layout) is None  # stopping a stopped server is harmless
    assert "Stopped" in manager.log_tail(layout, 200)
    result = CliRunner().invoke(cli, ["neo4j", "status"], env={"MEMTRACE_HOME": str(tmp_path)})
    assert "stopped" in result.output
