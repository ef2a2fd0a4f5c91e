"""Pure configuration of the managed server: memory sizing, neo4j.conf, JVM arguments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memtrace.server.layout import ServerLayout

MIB = 1024 * 1024
GIB = 1024 * MIB

# Heap and page cache each take this share of the memory that is free at start, within bounds:
# enough for million-node test graphs, small enough to leave room for the Python side.
MEMORY_SHARE = 0.15
HEAP_MIN, HEAP_MAX = 512 * MIB, 4 * GIB
PAGECACHE_MIN, PAGECACHE_MAX = 256 * MIB, 4 * GIB

SERVER_MAIN_CLASS = "org.neo4j.server.CommunityEntryPoint"
ADMIN_MAIN_CLASS = "org.neo4j.cli.AdminTool"

# From `server.jvm.additional` of the stock 5.26 neo4j.conf, less -XX:+AlwaysPreTouch: pre-touching
# a multi-GiB heap costs seconds at every start and the whole heap in RSS on a developer machine.
STOCK_JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-XX:FlightRecorderOptions=stackdepth=256",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+DebugNonSafepoints",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
    "-Dlog4j.layout.jsonTemplate.maxStringLength=32768",
)


@dataclass(frozen=True)
class MemoryPlan:
    heap_bytes: int
    pagecache_bytes: int


@dataclass(frozen=True)
class ServerOptions:
    bolt_port: int = 7687
    http_port: int = 7474
    auth: bool = True
    memory: MemoryPlan | None = None  # None: size from free RAM at start


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def plan_memory(available_bytes: int) -> MemoryPlan:
    """Heap and page cache from the free memory, rounded down to whole MiB, within the caps."""
    share = int(available_bytes * MEMORY_SHARE)
    heap = _clamp(share, HEAP_MIN, HEAP_MAX) // MIB * MIB
    pagecache = _clamp(share, PAGECACHE_MIN, PAGECACHE_MAX) // MIB * MIB
    return MemoryPlan(heap_bytes=heap, pagecache_bytes=pagecache)


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int:
    """MemAvailable in bytes (Linux); 4 GiB when it cannot be read, which yields the minimums."""
    try:
        for line in meminfo.read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 * GIB


def parse_size(text: str) -> int:
    """'512m', '2g', '1024k' or plain bytes -> bytes."""
    units = {"k": 1024, "m": MIB, "g": GIB}
    cleaned = text.strip().lower().removesuffix("b")
    if cleaned and cleaned[-1] in units:
        number, unit = cleaned[:-1], units[cleaned[-1]]
    else:
        number, unit = cleaned, 1
    if not number.isdigit() or int(number) == 0:
        raise ValueError(f"not a memory size: {text!r} (use e.g. 512m or 2g)")
    return int(number) * unit


def _mib(size: int) -> str:
    return f"{size // MIB}m"


def render_conf(layout: ServerLayout, options: ServerOptions, memory: MemoryPlan) -> str:
    """neo4j.conf for the managed server: loopback only, our folders, explicit memory."""
    settings = {
        "server.default_listen_address": "127.0.0.1",
        "server.default_advertised_address": "127.0.0.1",
        "server.bolt.enabled": "true",
        "server.bolt.listen_address": f"127.0.0.1:{options.bolt_port}",
        "server.bolt.advertised_address": f"127.0.0.1:{options.bolt_port}",
        "server.http.enabled": "true",
        "server.http.listen_address": f"127.0.0.1:{options.http_port}",
        "server.http.advertised_address": f"127.0.0.1:{options.http_port}",
        "server.https.enabled": "false",
        "dbms.security.auth_enabled": "true" if options.auth else "false",
        "server.memory.heap.initial_size": _mib(memory.heap_bytes),
        "server.memory.heap.max_size": _mib(memory.heap_bytes),
        "server.memory.pagecache.size": _mib(memory.pagecache_bytes),
        "server.directories.data": str(layout.data),
        "server.directories.logs": str(layout.logs),
        "server.directories.plugins": str(layout.plugins),
        "server.directories.run": str(layout.run),
        "server.directories.import": str(layout.import_dir),
        "server.config.strict_validation.enabled": "true",
        "dbms.usage_report.enabled": "false",
        # Neo4j Browser's product analytics (and its consent banner) start off: nothing leaves
        # the machine, and the guide's first screen is not covered by the banner.
        "client.allow_telemetry": "false",
        "db.tx_log.rotation.retention_policy": "1G size",
        # Preallocating 256 MiB per transaction log file wastes half a GiB on a fresh dev server.
        "db.tx_log.preallocate": "false",
    }
    header = "# Written by `memtrace neo4j start`; edits are overwritten at the next start.\n"
    return header + "".join(f"{key}={value}\n" for key, value in settings.items())


def memory_from_conf(text: str) -> MemoryPlan | None:
    """The heap and page cache a neo4j.conf written by ``render_conf`` names (None: not one)."""
    values = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    )
    try:
        heap = parse_size(values["server.memory.heap.max_size"])
        pagecache = parse_size(values["server.memory.pagecache.size"])
    except (KeyError, ValueError):
        return None
    return MemoryPlan(heap_bytes=heap, pagecache_bytes=pagecache)


def import_command(
    layout: ServerLayout, memory: MemoryPlan, arguments: list[str], java: str = "java"
) -> list[str]:
    """``neo4j-admin database import full ...`` run as the admin tool's main class from the
    server's jars (there is no neo4j-admin script): with the server's heap as the JVM heap and
    its page cache as the importer's off-heap budget, the memory the stopped server frees."""
    heap = _mib(memory.heap_bytes)
    return [
        java,
        f"-Xmx{heap}",
        "-cp",
        f"{layout.lib}/*",
        ADMIN_MAIN_CLASS,
        "database",
        "import",
        "full",
        f"--max-off-heap-memory={_mib(memory.pagecache_bytes)}",
        f"--report-file={layout.logs / 'import.report'}",
        *arguments,
    ]


def server_command(layout: ServerLayout, memory: MemoryPlan, java: str = "java") -> list[str]:
    """The java command line that runs the real server in the foreground (console mode)."""
    heap = _mib(memory.heap_bytes)
    return [
        java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *STOCK_JVM_FLAGS,
        "-cp",
        f"{layout.lib}/*",
        SERVER_MAIN_CLASS,
        f"--home-dir={layout.root}",
        f"--config-dir={layout.conf_dir}",
        "--console-mode",
    ]
