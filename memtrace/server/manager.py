"""Install, start, stop and inspect the managed Neo4j server (I/O edge of memtrace.server)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from memtrace.errors import ServerError
from memtrace.server.config import (
    ADMIN_MAIN_CLASS,
    SERVER_MAIN_CLASS,
    MemoryPlan,
    ServerOptions,
    available_memory,
    import_command,
    memory_from_conf,
    plan_memory,
    render_conf,
    server_command,
)
from memtrace.server.layout import ServerLayout, ServerState

START_TIMEOUT_SECONDS = 90.0
STOP_TIMEOUT_SECONDS = 60.0


def _pom_path() -> Path:
    return Path(str(resources.files("memtrace.server") / "pom.xml"))


def _require_tool(name: str, purpose: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ServerError(f"`{name}` is not on PATH; it is needed to {purpose}")
    return path


@dataclass(frozen=True)
class InstallResult:
    version: str
    lib: Path
    jars: int
    already_installed: bool
    seconds: float


def installed_version(layout: ServerLayout) -> str | None:
    try:
        return str(json.loads(layout.install_marker.read_text(encoding="utf-8"))["neo4j_version"])
    except (FileNotFoundError, KeyError, ValueError):
        return None


def install(layout: ServerLayout) -> InstallResult:
    """Resolve the official jars with Maven into ``layout.lib``; instant when already done."""
    started = time.perf_counter()
    pom = _pom_path().read_bytes()
    digest = hashlib.sha256(pom).hexdigest()
    match = re.search(rb"<neo4j.version>([^<]+)</neo4j.version>", pom)
    if match is None:
        raise ServerError("the bundled pom.xml names no neo4j.version")
    version = match.group(1).decode()
    if layout.install_marker.is_file():
        marker = json.loads(layout.install_marker.read_text(encoding="utf-8"))
        if marker.get("pom_sha256") == digest:
            jars = len(list(layout.lib.glob("*.jar")))
            return InstallResult(version, layout.lib, jars, True, time.perf_counter() - started)

    mvn = _require_tool("mvn", "download the Neo4j jars from Maven Central")
    _require_tool("java", "run Neo4j (Java 17 or newer)")
    staging = layout.root / "lib.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(_pom_path()),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-25:])
        raise ServerError(f"Maven could not resolve the Neo4j jars:\n{tail}")
    marker = {"neo4j_version": version, "pom_sha256": digest}
    (staging / layout.install_marker.name).write_text(json.dumps(marker), encoding="utf-8")
    # Swap the finished folder in whole so an interrupted install never looks complete.
    shutil.rmtree(layout.lib, ignore_errors=True)
    staging.replace(layout.lib)
    jars = len(list(layout.lib.glob("*.jar")))
    return InstallResult(version, layout.lib, jars, False, time.perf_counter() - started)


def _process_is_our_server(pid: int, layout: ServerLayout) -> bool:
    """True when ``pid`` is alive and is the server of this home (pids get reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return SERVER_MAIN_CLASS.encode() in cmdline and (
        f"--home-dir={layout.root}".encode() in cmdline
    )


def running_pid(layout: ServerLayout) -> int | None:
    state = layout.read_state()
    if state is None or state.pid is None:
        return None
    return state.pid if _process_is_our_server(state.pid, layout) else None


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _quoted(argument: str) -> str:
    """One argument of a picocli @-file: double-quoted, so spaces, quotes and "#" stay in it."""
    return '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ensure_initial_password(layout: ServerLayout, java: str) -> None:
    """Generate the password once and hand it to Neo4j before the first start with auth."""
    if layout.auth_store.exists():
        if layout.read_password() is None:
            raise ServerError(
                f"{layout.data} already has users but {layout.password_file} is missing; "
                "set NEO4J_PASSWORD, or remove the data folder to start afresh"
            )
        return
    password = layout.read_password()
    if password is None:
        layout.write_password(secrets.token_urlsafe(24))
        password = layout.read_password()
    assert password is not None  # written just above
    env = {**os.environ, "NEO4J_HOME": str(layout.root), "NEO4J_CONF": str(layout.conf_dir)}
    # The password reaches neo4j-admin in an argument file (picocli's @-file), never in argv,
    # where `ps` would show it to every user of the machine. The file is 0600 and removed after.
    args_file = layout.root / "set-initial-password.args"
    fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        # "--" ends the options: a generated password may start with "-".
        handle.write(f"dbms\nset-initial-password\n--\n{_quoted(password.get_secret_value())}\n")
    try:
        result = subprocess.run(
            [java, "-cp", f"{layout.lib}/*", ADMIN_MAIN_CLASS, f"@{args_file}"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    finally:
        args_file.unlink(missing_ok=True)
    if result.returncode != 0:
        raise ServerError(f"could not set the initial Neo4j password: {result.stderr.strip()}")


def log_tail(layout: ServerLayout, lines: int = 40) -> str:
    try:
        text = layout.console_log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log yet)"
    return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class StartResult:
    state: ServerState
    already_running: bool
    seconds: float


def start(
    layout: ServerLayout, options: ServerOptions, timeout: float = START_TIMEOUT_SECONDS
) -> StartResult:
    """Start the server in the background and return once Bolt answers ``RETURN 1``."""
    started = time.perf_counter()
    pid = running_pid(layout)
    if pid is not None:
        state = layout.read_state()
        assert state is not None  # running_pid read it
        return StartResult(state, True, time.perf_counter() - started)
    if installed_version(layout) is None:
        raise ServerError(f"Neo4j is not installed in {layout.lib}; run `memtrace neo4j install`")
    java = _require_tool("java", "run Neo4j (Java 17 or newer)")
    for name, port in (("Bolt", options.bolt_port), ("HTTP", options.http_port)):
        if _port_in_use(port):
            raise ServerError(
                f"{name} port {port} on 127.0.0.1 is already in use by another program; "
                f"stop it or choose another port (--{name.lower()}-port)"
            )
    memory = options.memory or plan_memory(available_memory())
    layout.make_dirs()
    layout.conf_file.write_text(render_conf(layout, options, memory), encoding="utf-8")
    if options.auth:
        _ensure_initial_password(layout, java)
    process = _spawn(layout, memory, java)
    state = ServerState(
        bolt_port=options.bolt_port,
        http_port=options.http_port,
        auth=options.auth,
        pid=process.pid,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    layout.write_state(state)
    _wait_until_ready(layout, state, process, timeout)
    return StartResult(state, False, time.perf_counter() - started)


def _spawn(layout: ServerLayout, memory: MemoryPlan, java: str) -> subprocess.Popen[bytes]:
    with layout.console_log.open("ab") as log:
        return subprocess.Popen(
            server_command(layout, memory, java),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=layout.root,
            start_new_session=True,  # survives the CLI; SIGINT at the terminal does not reach it
        )


def _wait_until_ready(
    layout: ServerLayout, state: ServerState, process: subprocess.Popen[bytes], timeout: float
) -> None:
    from memtrace.db import ping  # local: the driver is only needed once a server is up

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(
                f"Neo4j exited with code {process.returncode} while starting; log tail:\n"
                + log_tail(layout)
            )
        if ping(f"bolt://127.0.0.1:{state.bolt_port}", "neo4j", layout.read_password()):
            return
        time.sleep(0.25)
    process.terminate()
    process.wait(STOP_TIMEOUT_SECONDS)
    raise ServerError(
        f"Neo4j did not answer on Bolt port {state.bolt_port} within {timeout:.0f} s; "
        f"log tail:\n{log_tail(layout)}"
    )


def stop(layout: ServerLayout, timeout: float = STOP_TIMEOUT_SECONDS) -> int | None:
    """SIGTERM our server only and wait for its clean shutdown; returns the pid, None if idle."""
    deadline = time.monotonic() + timeout
    pid = release_store(layout, timeout)
    if pid is not None:
        wait_for_exit(layout, pid, max(0.0, deadline - time.monotonic()))
    return pid


def store_locks(layout: ServerLayout) -> list[Path]:
    """The lock files a running server holds on its store (the DBMS's and each database's)."""
    databases = layout.data / "databases"
    return [databases / "store_lock", *sorted(databases.glob("*/database_lock"))]


def _locked(path: Path) -> bool:
    """True when another process holds the lock on ``path`` (Java's FileChannel locks are
    POSIX record locks on Linux, the kind ``fcntl.lockf`` takes)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def store_in_use(layout: ServerLayout) -> bool:
    return any(_locked(path) for path in store_locks(layout))


def release_store(layout: ServerLayout, timeout: float = STOP_TIMEOUT_SECONDS) -> int | None:
    """SIGTERM our server and return once it has closed its store: every database stopped
    and checkpointed and the store's locks released (about a second), while the process goes
    on shutting down its network side for 5-10 s more (Bolt's shutdown waits). An offline tool
    (neo4j-admin) needs only the store; ``wait_for_exit`` before starting the server again.
    Returns the pid, None if the server was not running."""
    pid = running_pid(layout)
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _process_is_our_server(pid, layout) or not store_in_use(layout):
            return pid
        time.sleep(0.1)
    raise ServerError(f"Neo4j (pid {pid}) still holds its store after {timeout:.0f} s")


def wait_for_exit(layout: ServerLayout, pid: int, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """Wait until the server process ``pid`` (SIGTERMed) is gone, and record it stopped."""
    deadline = time.monotonic() + timeout
    while _process_is_our_server(pid, layout):
        if time.monotonic() >= deadline:
            raise ServerError(f"Neo4j (pid {pid}) is still shutting down after {timeout:.0f} s")
        time.sleep(0.2)
    state = layout.read_state()
    if state is not None and state.pid == pid:
        layout.write_state(state.model_copy(update={"pid": None}))


def restart_options(layout: ServerLayout) -> ServerOptions:
    """The ports, auth and memory of the server's last start, to start it again the same way."""
    state = layout.read_state()
    if state is None:
        raise ServerError(f"the managed server in {layout.root} was never started")
    try:
        memory = memory_from_conf(layout.conf_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        memory = None
    return ServerOptions(
        bolt_port=state.bolt_port, http_port=state.http_port, auth=state.auth, memory=memory
    )


@dataclass(frozen=True)
class ImportResult:
    seconds: float
    log: Path


def import_full(layout: ServerLayout, database: str, arguments: list[str]) -> ImportResult:
    """Run ``neo4j-admin database import full DATABASE --overwrite-destination ARGUMENTS`` on
    the stopped server's store (the caller checked that the database was empty).

    A failed import leaves unusable store files, so the database is then imported again from
    no data at all (empty, as it was) and ServerError raised with the tail of the import log.
    """
    if store_in_use(layout):  # a server that is stopping may live on after releasing it
        raise ServerError("the managed server is running; an offline import needs it stopped")
    java = _require_tool("java", "run neo4j-admin (Java 17 or newer)")
    memory = restart_options(layout).memory or plan_memory(available_memory())
    log = layout.logs / "import.log"
    started = time.perf_counter()
    full = [database, "--overwrite-destination", *arguments]
    try:
        code = _run_import(layout, memory, java, full, log)
    except KeyboardInterrupt:  # the importer got the SIGINT too: its store is half-built
        _import_nothing(layout, memory, java, database, log)
        raise
    if code != 0:
        tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-25:])
        restored = _import_nothing(layout, memory, java, database, log)
        state = "left empty" if restored else "NOT restored (see the reset log)"
        raise ServerError(
            f"neo4j-admin import failed (exit {code}); the database was {state}. {log}:\n{tail}"
        )
    return ImportResult(time.perf_counter() - started, log)


def _import_nothing(
    layout: ServerLayout, memory: MemoryPlan, java: str, database: str, log: Path
) -> bool:
    """Replace unusable store files by an empty database (an import of no data)."""
    empty = layout.import_dir / "empty-header.csv"
    empty.write_text(":ID\n", encoding="utf-8")
    reset = [database, "--overwrite-destination", f"--nodes={empty}"]
    try:
        return _run_import(layout, memory, java, reset, log.with_suffix(".reset.log")) == 0
    finally:
        empty.unlink()


def _run_import(
    layout: ServerLayout, memory: MemoryPlan, java: str, arguments: list[str], log: Path
) -> int:
    env = {**os.environ, "NEO4J_HOME": str(layout.root), "NEO4J_CONF": str(layout.conf_dir)}
    with log.open("w", encoding="utf-8") as handle:
        return subprocess.run(
            import_command(layout, memory, arguments, java),
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=layout.root,
            env=env,
            check=False,
        ).returncode


@dataclass(frozen=True)
class ServerStatus:
    home: Path
    installed_version: str | None
    running: bool
    pid: int | None
    bolt_port: int | None
    http_port: int | None
    auth: bool | None
    rss_bytes: int | None
    data_bytes: int
    started_at: str | None

    @property
    def browser_url(self) -> str | None:
        return f"http://127.0.0.1:{self.http_port}/browser/" if self.http_port else None

    @property
    def bolt_uri(self) -> str | None:
        return f"bolt://127.0.0.1:{self.bolt_port}" if self.bolt_port else None

    def as_dict(self) -> dict[str, object]:
        return {
            "home": str(self.home),
            "version": self.installed_version,
            "running": self.running,
            "pid": self.pid,
            "bolt_uri": self.bolt_uri,
            "browser_url": self.browser_url,
            "bolt_port": self.bolt_port,
            "http_port": self.http_port,
            "auth": self.auth,
            "rss_bytes": self.rss_bytes,
            "data_bytes": self.data_bytes,
            "started_at": self.started_at if self.running else None,
        }


def _rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _disk_usage(folder: Path) -> int:
    """Bytes on disk (allocated blocks): Neo4j preallocates sparse transaction logs."""
    return sum(path.stat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())


def status(layout: ServerLayout) -> ServerStatus:
    state = layout.read_state()
    pid = running_pid(layout)
    return ServerStatus(
        home=layout.root,
        installed_version=installed_version(layout),
        running=pid is not None,
        pid=pid,
        bolt_port=state.bolt_port if state else None,
        http_port=state.http_port if state else None,
        auth=state.auth if state else None,
        rss_bytes=_rss_bytes(pid) if pid else None,
        data_bytes=_disk_usage(layout.data) if layout.data.exists() else 0,
        started_at=state.started_at if state else None,
    )
