from pathlib import Path

import pytest

from memtrace.server.config import (
    GIB,
    HEAP_MAX,
    HEAP_MIN,
    MIB,
    PAGECACHE_MAX,
    PAGECACHE_MIN,
    MemoryPlan,
    ServerOptions,
    available_memory,
    parse_size,
    plan_memory,
    render_conf,
    server_command,
)
from memtrace.server.layout import ServerLayout


def conf_map(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


@pytest.mark.parametrize(
    ("available", "heap", "pagecache"),
    [
        (1 * GIB, HEAP_MIN, PAGECACHE_MIN),  # small machine: the floors
        (10 * GIB, int(10 * GIB * 0.15) // MIB * MIB, int(10 * GIB * 0.15) // MIB * MIB),
        (256 * GIB, HEAP_MAX, PAGECACHE_MAX),  # big machine: the caps
    ],
)
def test_plan_memory_scales_with_free_ram_within_caps(
    available: int, heap: int, pagecache: int
) -> None:
    plan = plan_memory(available)
    assert plan == MemoryPlan(heap_bytes=heap, pagecache_bytes=pagecache)
    assert plan.heap_bytes % MIB == 0


def test_available_memory_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")
    assert available_memory(meminfo) == 2048 * 1024
    assert available_memory(tmp_path / "missing") == 4 * GIB


@pytest.mark.parametrize(
    ("text", "size"), [("512m", 512 * MIB), ("2G", 2 * GIB), ("1024k", MIB), ("4096", 4096)]
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "m", "-1g", "1.5g", "0", "lots"])
def test_parse_size_rejects_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="not a memory size"):
        parse_size(text)


def test_conf_listens_on_loopback_with_our_ports_and_folders(tmp_path: Path) -> None:
    layout = ServerLayout(tmp_path)
    options = ServerOptions(bolt_port=17687, http_port=17474, auth=True)
    conf = conf_map(render_conf(layout, options, MemoryPlan(768 * MIB, 256 * MIB)))
    assert conf["server.default_listen_address"] == "127.0.0.1"
    assert conf["server.bolt.listen_address"] == "127.0.0.1:17687"
    assert conf["server.bolt.advertised_address"] == "127.0.0.1:17687"
    assert conf["server.http.listen_address"] == "127.0.0.1:17474"
    assert conf["server.https.enabled"] == "false"
    assert conf["dbms.security.auth_enabled"] == "true"
    assert conf["server.memory.heap.max_size"] == "768m"
    assert conf["server.memory.heap.initial_size"] == "768m"
    assert conf["server.memory.pagecache.size"] == "256m"
    assert conf["server.config.strict_validation.enabled"] == "true"
    assert conf["server.directories.data"] == str(tmp_path / "neo4j" / "data")
    assert conf["server.directories.logs"] == str(tmp_path / "neo4j" / "logs")


def test_conf_without_auth(tmp_path: Path) -> None:
    conf = conf_map(
        render_conf(ServerLayout(tmp_path), ServerOptions(auth=False), MemoryPlan(MIB, MIB))
    )
    assert conf["dbms.security.auth_enabled"] == "false"


def test_server_command_runs_the_community_entry_point(tmp_path: Path) -> None:
    layout = ServerLayout(tmp_path)
    command = server_command(layout, MemoryPlan(1024 * MIB, 512 * MIB), java="/usr/bin/java")
    assert command[:3] == ["/usr/bin/java", "-Xms1024m", "-Xmx1024m"]
    for opened in ("java.nio", "java.io", "sun.nio.ch"):
        assert f"--add-opens=java.base/{opened}=ALL-UNNAMED" in command
    main = command.index("org.neo4j.server.CommunityEntryPoint")
    assert command[main - 2 : main] == ["-cp", f"{layout.lib}/*"]
    assert command[main + 1 :] == [
        f"--home-dir={layout.root}",
        f"--config-dir={layout.conf_dir}",
        "--console-mode",
    ]
