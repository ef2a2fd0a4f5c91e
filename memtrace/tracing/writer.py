"""Append-only JSON Lines output, buffered in whole lines and flushed on a short clock.

Records are appended to an in-memory buffer as complete lines, in the order the tracer emits
them (a record only after everything it references, see ``Tracer``). The buffer goes to the OS
in one ``write`` when it reaches ``flush_bytes`` (64 KiB), when a background thread finds it
non-empty (every ``flush_seconds``, 0.1 s, also while the traced program waits on a slow call),
on ``flush()``, on ``close()`` (then fsynced) and at interpreter exit. Every flush writes whole
lines, so the file is always a prefix of the full trace cut at a line boundary: after a crash its
complete lines form a valid trace. What a crash can lose is the unflushed tail: the records of
about the last 0.1 s, never more than 64 KiB plus the last append. Only a torn last line (a kill
inside the ``write`` itself) can be damaged, and ``complete_prefix`` cuts it off.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from pathlib import Path

FLUSH_BYTES = 64 * 1024
FLUSH_SECONDS = 0.1

_open_writers: weakref.WeakSet[JsonlWriter] = weakref.WeakSet()


class JsonlWriter:
    """One trace file. ``append`` is called with ``lock`` held (the tracer holds it anyway)."""

    def __init__(
        self,
        path: Path,
        *,
        flush_bytes: int = FLUSH_BYTES,
        flush_seconds: float = FLUSH_SECONDS,
        lock: threading.RLock | None = None,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.lock = lock or threading.RLock()
        self._file = path.open("wb", buffering=0)
        # One growing bytearray: appending copies the line and frees it at once (a list of
        # line objects kept until the flush measured ~1 us per record more, in allocations).
        self._buffer = bytearray()
        self._flush_bytes = flush_bytes
        self._stop = threading.Event()
        _open_writers.add(self)
        self._flusher = threading.Thread(
            target=_flush_periodically,
            args=(weakref.ref(self), self._stop, flush_seconds),
            name=f"memtrace-flush-{path.name}",
            daemon=True,
        )
        self._flusher.start()

    def append(self, line: bytes) -> None:
        """Queue one complete line (ending in ``\\n``); the caller holds ``lock``."""
        buffer = self._buffer
        buffer += line
        if len(buffer) >= self._flush_bytes:
            self._flush()

    def flush(self) -> None:
        """Hand every queued line to the OS now."""
        with self.lock:
            self._flush()

    def _flush(self) -> None:
        buffer = self._buffer
        if self._file.closed:
            buffer.clear()  # recorded after close(): dropped rather than kept growing
            return
        while buffer:  # a regular file takes it all in one call; loop in case it does not
            written = self._file.write(buffer)
            if not written:
                raise OSError(f"{self.path}: write() made no progress")
            del buffer[:written]

    def close(self) -> None:
        self._stop.set()
        with self.lock:
            if not self._file.closed:
                self._flush()
                os.fsync(self._file.fileno())
                self._file.close()
        _open_writers.discard(self)
        if self._flusher is not threading.current_thread():
            self._flusher.join()

    def __del__(self) -> None:  # a tracer dropped without close() still writes its buffer
        file = getattr(self, "_file", None)  # None if __init__ failed before opening
        if file is not None and not file.closed:
            self.close()


def _flush_periodically(
    ref: weakref.ref[JsonlWriter], stop: threading.Event, seconds: float
) -> None:
    """Background flusher: bounds how long a record waits in memory (holds no strong ref)."""
    while not stop.wait(seconds):
        writer = ref()
        if writer is None:
            return
        if writer._buffer:
            writer.flush()
        del writer


def _forget_parent_buffers() -> None:
    """In a forked child: the parent's queued lines are the parent's to write, not the child's
    (written twice they would duplicate records), and a lock held by the parent's flusher
    thread at the fork would never be released."""
    for writer in list(_open_writers):
        _open_writers.discard(writer)
        writer._buffer.clear()
        reinit = getattr(writer.lock, "_at_fork_reinit", None)
        if reinit is not None:
            reinit()


os.register_at_fork(after_in_child=_forget_parent_buffers)


@atexit.register
def _flush_all() -> None:
    """A tracer left open at exit still gets its buffered lines written."""
    for writer in list(_open_writers):
        writer.flush()


def complete_prefix(path: Path) -> int:
    """Truncate ``path`` after its last complete line (a crash may tear the last one).

    Returns the number of bytes removed.
    """
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        with path.open("r+b") as file:
            file.truncate(keep)
    return len(data) - keep
