"""Append-only JSON Lines output: the traced program appends lines, a thread writes them.

Records are appended to an in-memory buffer as complete lines, in the order the tracer emits
them (a record only after everything it references, see ``Tracer``). The program's threads only
append; the file is written by the writer's own thread, which takes the whole buffer in one
``write`` every ``flush_seconds`` (0.1 s, also while the traced program waits on a slow call),
when the buffer passes ``flush_bytes`` (1 MiB, the thread is woken), on ``flush()`` and on
``close()``, and at interpreter exit. ``write`` releases the GIL, so the file system's work
overlaps the traced program on another core instead of stalling it. ``close()`` returns once
everything is written (readable by any process); the thread then fsyncs and closes the file,
and interpreter exit waits for that. Every write is of whole lines, so the file is always a
prefix of the full trace cut at a line boundary: after a crash its complete lines form a valid
trace. What a crash can lose is the unwritten tail: the records of about the last 0.1 s. Only a
torn last line (a kill inside the ``write`` itself) can be damaged, and ``complete_prefix`` cuts
it off.
"""

from __future__ import annotations

import atexit
import io
import os
import threading
import weakref
from pathlib import Path

# Each wake-up of the writing thread costs the traced program GIL hand-overs: at 64 KiB (about
# 60 wake-ups in a 0.55 s run of the offline mem0 system) they added 6-9 points of tracing
# overhead. The clock bounds what a crash can lose; the size only bounds memory.
FLUSH_BYTES = 1024 * 1024
FLUSH_SECONDS = 0.1

_open_writers: weakref.WeakSet[JsonlWriter] = weakref.WeakSet()
_syncing: set[threading.Thread] = set()  # writing threads of closed writers, still fsyncing


class JsonlWriter:
    """One trace file. ``append`` is called with ``lock`` held (the tracer holds it anyway).

    Lock order: ``_io_lock`` (one writer of the file at a time) before ``lock`` (the buffer);
    nothing that holds ``lock`` waits for ``_io_lock``, so the two cannot deadlock.
    """

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
        self._io_lock = threading.Lock()
        self._closing = False
        self._file = path.open("wb", buffering=0)
        # One growing bytearray: appending copies the line and frees it at once (a list of
        # line objects kept until the flush measured ~1 us per record more, in allocations).
        # The writing thread takes it whole and leaves a new one.
        self._buffer = bytearray()
        self._flush_bytes = flush_bytes
        self._woken = False  # set once per full buffer: Event.set() is not free
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._error: OSError | None = None
        _open_writers.add(self)
        self._flusher = threading.Thread(
            target=_write_periodically,
            args=(weakref.ref(self), self._file, self._wake, self._stop, flush_seconds),
            name=f"memtrace-writer-{path.name}",
            daemon=True,
        )
        self._flusher.start()

    def append(self, line: bytes) -> None:
        """Queue one complete line (ending in ``\\n``); the caller holds ``lock``."""
        buffer = self._buffer
        buffer += line
        if len(buffer) >= self._flush_bytes and not self._woken:
            self._woken = True
            self._wake.set()

    def flush(self) -> None:
        """Hand every queued line to the OS now (the caller must not hold ``lock``)."""
        with self._io_lock:
            self._write_pending()
        if self._error is not None:
            raise OSError(f"{self.path}: writing the trace failed: {self._error}") from self._error

    def _write_pending(self) -> None:
        """Take the buffer and write it; the caller holds ``_io_lock``."""
        with self.lock:
            data = self._buffer
            if not data:
                return
            self._buffer = bytearray()
            self._woken = False
        if self._closing or self._error is not None:
            return  # recorded after close() or after a failed write: dropped, not kept growing
        view = memoryview(data)
        try:
            while view:  # a regular file takes it all in one call; loop in case it does not
                written = self._file.write(view)
                if not written:
                    raise OSError("write() made no progress")
                view = view[written:]
        except OSError as error:
            self._error = error  # reported by flush() and close() in the program's thread

    def close(self) -> None:
        """Write everything now; the fsync follows in the writing thread (joined at exit)."""
        in_thread = self._flusher is threading.current_thread()
        with self._io_lock:
            if self._closing:
                return
            self._write_pending()
            self._closing = True  # under _io_lock: the thread sees it before its next write
        _open_writers.discard(self)
        if self._error is not None:
            self._file.close()  # nothing to fsync: the thread finds the file closed and ends
        elif in_thread:  # dropped by the writing thread itself (__del__): finish here
            _sync_and_close(self._file)
        else:
            _syncing.add(self._flusher)
        self._stop.set()
        self._wake.set()
        if self._error is not None:
            raise OSError(f"{self.path}: writing the trace failed: {self._error}") from self._error

    def __del__(self) -> None:  # a tracer dropped without close() still writes its buffer
        file = getattr(self, "_file", None)  # None if __init__ failed before opening
        if file is not None and not file.closed and not getattr(self, "_closing", True):
            self.close()


def _sync_and_close(file: io.FileIO) -> None:
    if file.closed:
        return
    try:
        os.fsync(file.fileno())
    finally:
        file.close()


def _write_periodically(
    ref: weakref.ref[JsonlWriter],
    file: io.FileIO,
    wake: threading.Event,
    stop: threading.Event,
    seconds: float,
) -> None:
    """The writing thread: woken by a full buffer or the clock (holds no strong ref to the
    writer between rounds); after ``close()`` it fsyncs and closes the file."""
    while True:
        wake.wait(seconds)
        wake.clear()
        if stop.is_set():
            try:
                _sync_and_close(file)
            finally:
                _syncing.discard(threading.current_thread())
            return
        writer = ref()
        if writer is None:
            return
        with writer._io_lock:
            if not writer._closing:
                writer._write_pending()
        del writer


def _forget_parent_buffers() -> None:
    """In a forked child: the parent's queued lines are the parent's to write, not the child's
    (written twice they would duplicate records), and locks held by the parent's writing
    thread at the fork would never be released."""
    _syncing.clear()
    for writer in list(_open_writers):
        _open_writers.discard(writer)
        writer._buffer.clear()
        for lock in (writer.lock, writer._io_lock):
            reinit = getattr(lock, "_at_fork_reinit", None)
            if reinit is not None:
                reinit()


os.register_at_fork(after_in_child=_forget_parent_buffers)


def wait_synced() -> None:
    """Wait until the files of all closed tracers are fsynced (interpreter exit does this)."""
    for thread in list(_syncing):
        thread.join()


@atexit.register
def _flush_all() -> None:
    """A tracer left open at exit still gets its buffered lines written, and files of closed
    tracers still being fsynced are waited for."""
    for writer in list(_open_writers):
        writer.flush()
    wait_synced()


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
