"""A private managed Neo4j for a benchmark: a temporary home that borrows the installed jars,
free ports, a fixed heap and page cache, and the environment and settings that reach it (so a
server you already run is not touched)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from memtrace.server import manager
from memtrace.server.config import MemoryPlan, ServerOptions
from memtrace.server.layout import ServerLayout
from memtrace.settings import LLMSettings, Neo4jSettings, Settings, memtrace_home


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class PrivateServer:
    layout: ServerLayout
    options: ServerOptions
    env: dict[str, str]  # for child processes: MEMTRACE_HOME set, no NEO4J_* variables
    settings: Settings


def start_private_server(home: Path, memory_bytes: int) -> PrivateServer:
    """Start a managed server in ``home`` (an empty folder); the caller stops it."""
    installed = ServerLayout(memtrace_home())
    layout = ServerLayout(home)
    layout.root.mkdir(parents=True)
    if manager.installed_version(installed) is not None:
        layout.lib.symlink_to(installed.lib, target_is_directory=True)
    else:
        manager.install(layout)
    options = ServerOptions(
        bolt_port=free_port(),
        http_port=free_port(),
        auth=True,
        memory=MemoryPlan(heap_bytes=memory_bytes, pagecache_bytes=memory_bytes),
    )
    manager.start(layout, options)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    env["MEMTRACE_HOME"] = str(home)
    neo4j = Neo4jSettings(
        uri=f"bolt://127.0.0.1:{options.bolt_port}", password=layout.read_password()
    )
    return PrivateServer(layout, options, env, Settings(home=home, neo4j=neo4j, llm=LLMSettings()))
