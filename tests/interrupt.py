"""`memtrace load` in a child process, interrupted with SIGINT as Ctrl-C would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memtrace.db import Database

WRITTEN = "MATCH (v:Variable {trace_id: $t}) RETURN count(v) AS n"


def interruptible_child() -> None:
    """``preexec_fn`` of such a child: a shell starts background jobs with SIGINT ignored, and
    Python then installs no KeyboardInterrupt handler, so a suite run with ``&`` would see the
    child shrug off the signal. Restoring the default lets Python install its handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_load(db: Database, path: Path, written_as: str) -> tuple[int, str]:
    """Load ``path`` in a child, send SIGINT once 200 variables exist under ``written_as`` (the
    trace id, or the staged id of a re-load); return its exit code and stderr."""
    env = {**os.environ, "NEO4J_URI": db.settings.uri, "NEO4J_USER": db.settings.user}
    if db.settings.password is not None:
        env["NEO4J_PASSWORD"] = db.settings.password.get_secret_value()
    memtrace = str(Path(sys.executable).parent / "memtrace")
    load = subprocess.Popen(
        [memtrace, "load", str(path), "--batch-size", "200"],
        preexec_fn=interruptible_child,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while db.run(WRITTEN, t=written_as)[0]["n"] < 200 and time.monotonic() < deadline:
            assert load.poll() is None, "the load ended before it could be interrupted"
            time.sleep(0.05)
        load.send_signal(signal.SIGINT)
        _, stderr = load.communicate(timeout=300)
    finally:
        if load.poll() is None:
            load.kill()
    return load.returncode, stderr
