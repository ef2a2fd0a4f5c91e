"""Loading complete traces from the spool into Neo4j, with the validation of ``memtrace load``.

A trace is due once its root span has arrived and no span of it came for the quiet period (or,
without a root, after the longest wait). Due traces are taken under a short lease, renewed while
they load (store.py: several receivers may share a database), assembled into one OTLP JSON file each
and loaded together through ``load_paths``, the function ``memtrace load`` calls. A trace the loader
refuses is set aside in the spool's ``rejected/`` with the reason and logged; the others load. So is
a trace whose load would drop spans the graph holds (a load replaces a trace): late spans that came
after their trace's ``loaded/`` file was pruned, ``keep_loaded_seconds`` after its load. Optionally
the failed cases of the traces just loaded are attributed at once (``after_load``), on a
thread of their own (``Attributions``) so that loading never waits for attribution."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field

from memtrace.admin import init_schema
from memtrace.collect.spool import Assembled, Spool
from memtrace.collect.store import CollectStore
from memtrace.db import Database
from memtrace.errors import InputError, MemtraceError
from memtrace.loaders.append import AppendResult, Timeline, prepare_append, timelines
from memtrace.loaders.load import LoadOptions, load_paths
from memtrace.loaders.otlp import otlp_trace_id
from memtrace.loaders.otlp.spans import Span, read_spans
from memtrace.loaders.otlp.timelines import Grouping
from memtrace.loaders.writer import AppendWrite, write_appends

# the loaded traces' memtrace trace ids, and when only some of their cases are new (requests
# appended to timelines) those cases (trace id, case id); None: every failed case of them
AfterLoad = Callable[[Database, list[str], list[tuple[str, str]] | None], None]
Log = Callable[[str], None]
IDLE_ATTRIBUTION_LOOK = 0.2  # seconds: how soon the attributing thread sees the loader stopped
RETRY_ATTRIBUTION_SECONDS = 5.0
PREPARING_THREADS = 4  # timelines whose appends are prepared at once (lookups, conversion)


@dataclass(frozen=True)
class IngestOptions:
    quiet_seconds: float = 5.0
    max_wait_seconds: float = 300.0
    traces_per_load: int = 200
    # how long a lease outlives its heartbeat: a receiver that dies mid-load (and is not
    # restarted on its spool, which takes its leases over at once) holds its traces this long
    lease_seconds: float = 15.0
    retry_seconds: float = 5.0  # after Neo4j failed, before trying again
    # the longest wait between looks at the spool (arriving spans and a trace falling due wake
    # the loader at once; this bounds how soon a stop or a lease held elsewhere is noticed)
    idle_seconds: float = 0.2
    # how long a loaded trace's file stays in the spool's loaded/ for late spans to join
    keep_loaded_seconds: float = 3600.0
    # requests appended to timelines by these group ids (loaders/append.py); None: each OTel
    # trace loaded whole as otlp-<trace id>
    grouping: Grouping | None = None


@dataclass
class Counters:
    loaded_traces: int = 0
    loaded_spans: int = 0
    rejected_traces: int = 0
    load_errors: int = 0
    pruned_traces: int = 0  # loaded/ files deleted after keep_loaded_seconds
    latencies: list[float] = field(default_factory=list)  # last span seen -> loaded, seconds


class Ingester:
    def __init__(
        self,
        spool: Spool,
        options: IngestOptions,
        owner: str,
        log: Log,
        after_load: AfterLoad | None = None,
    ) -> None:
        self.spool = spool
        self.options = options
        self.owner = owner
        self.log = log
        self.after_load = after_load
        self.counters = Counters()
        self.attributions = Attributions(log)

    def step(self, db: Database) -> int:
        """Load the traces due now (up to ``traces_per_load``); return how many were loaded."""
        options = self.options
        self.counters.pruned_traces += self.spool.prune(options.keep_loaded_seconds)
        due = self.spool.due(
            options.quiet_seconds, options.max_wait_seconds, options.traces_per_load
        )
        if not due:
            return 0
        store = CollectStore(db, self.owner)
        held = store.acquire(due, options.lease_seconds)
        if not held:
            return 0  # another receiver is loading them
        new_cases: list[tuple[str, str]] | None = None
        try:
            with _heartbeat(store, held, options.lease_seconds):
                assembled = [self.spool.assemble(trace_id) for trace_id in held]
                if options.grouping is None:
                    loaded = self._load(db, self._whole(store, assembled))
                else:
                    loaded, new_cases = self._append(db, store, assembled, options.grouping)
        finally:
            store.release(held)
        if loaded and self.after_load is not None:
            self.attributions.add(loaded, new_cases)
        return len(loaded)

    def _append(
        self, db: Database, store: CollectStore, assembled: list[Assembled], grouping: Grouping
    ) -> tuple[list[str], list[tuple[str, str]]]:
        """Append each assembled request to its timeline (only the spans the timeline lacks:
        a late span joins its request, a re-sent one is skipped), under a lease on the timeline
        so that no other receiver appends to it meanwhile; a timeline another receiver holds
        keeps its requests pending for the next look. Every timeline's append is prepared
        first, then all are written in one transaction. Returns the timelines appended to and
        their new failed cases."""
        spans: list[tuple[str, Span]] = []
        by_request: dict[str, Assembled] = {}
        for item in assembled:
            try:
                spans += [(str(item.path), span) for span in read_spans(item.path)]
            except InputError as exc:
                self._refuse(item, str(exc))
                continue
            by_request[item.trace_id] = item
        found = timelines(spans, grouping, {}, {})
        held = set(store.acquire([t.trace_id for t in found], self.options.lease_seconds))
        appended: list[str] = []
        new_cases: list[tuple[str, str]] = []
        writes: list[AppendWrite] = []
        loaded: list[Assembled] = []
        # another receiver appends to the others now; their requests stay pending
        mine = [timeline for timeline in found if timeline.trace_id in held]

        def prepare(timeline: Timeline) -> tuple[AppendResult, AppendWrite | None] | InputError:
            source = str(by_request[timeline.requests[0].trace_id].path)
            try:
                return prepare_append(
                    db, timeline.trace_id, timeline.props, timeline.requests, source
                )
            except InputError as exc:
                return exc

        try:
            # each preparation waits on a few lookups of its own timeline: overlap them
            with ThreadPoolExecutor(PREPARING_THREADS, "memtrace-collect-prepare") as pool:
                prepared = list(pool.map(prepare, mine))
            for timeline, done in zip(mine, prepared, strict=True):
                items = [by_request[request.trace_id] for request in timeline.requests]
                if isinstance(done, InputError):
                    for item in items:
                        self._refuse(item, str(done))
                    continue
                result, write = done
                writes += [write] if write is not None else []
                loaded += items
                appended.append(timeline.trace_id)
                new_cases += [(timeline.trace_id, case) for case in result.failed_case_ids]
            if writes:
                write_appends(db, writes)
        finally:
            store.release(sorted(held))
        if loaded:
            self._loaded(loaded)
        return appended, new_cases

    def _loaded(self, items: list[Assembled]) -> None:
        """These traces are in the graph: the spool keeps them as loaded, the counters say so."""
        now = time.monotonic()
        self.spool.mark_loaded(items)
        for item in items:
            self.counters.loaded_traces += 1
            self.counters.loaded_spans += item.spans
            self.counters.latencies.append(now - item.last_seen)
        del self.counters.latencies[:-10_000]

    def _refuse(self, item: Assembled, reason: str) -> None:
        self.spool.mark_rejected(item, reason)
        self.counters.rejected_traces += 1
        self.log(f"refused trace {item.trace_id} (kept in the spool's rejected/): {reason}")

    def _whole(self, store: CollectStore, assembled: list[Assembled]) -> list[Assembled]:
        """The traces whose load keeps every span the graph holds of them; the others (late
        spans after their trace's file was pruned) are set aside in ``rejected/``."""
        in_graph = store.graph_spans([otlp_trace_id(item.trace_id) for item in assembled])
        whole = []
        for item in assembled:
            missing = in_graph.get(otlp_trace_id(item.trace_id), set()) - item.span_ids
            if not missing:
                whole.append(item)
                continue
            reason = (
                f"the graph holds {len(missing)} span(s) of trace {item.trace_id} that are not "
                f"among the {item.spans} to load (late spans after its loaded/ file was pruned, "
                "see --keep-loaded, or spans another receiver loaded); loading would replace "
                "the trace without them, so the spans to load are kept here instead"
            )
            self.spool.mark_rejected(item, reason)
            self.counters.rejected_traces += 1
            self.log(f"set aside trace {item.trace_id} (in the spool's rejected/): {reason}")
        return whole

    def _load(self, db: Database, assembled: list[Assembled]) -> list[str]:
        remaining = list(assembled)
        while remaining:
            try:
                summary = load_paths(
                    db,
                    [str(item.path) for item in remaining],
                    LoadOptions(format="otlp", ensure_schema=False),  # made in ``run``
                )
            except InputError as exc:
                refused = next((item for item in remaining if str(item.path) == exc.path), None)
                if refused is None:
                    raise
                self._refuse(refused, str(exc))
                remaining.remove(refused)
                continue
            by_path = {result.path: result.trace_id for result in summary.files}
            self._loaded(remaining)
            return [by_path[str(item.path)] for item in remaining]
        return []

    def run(
        self, connect: Callable[[], AbstractContextManager[Database]], stop: threading.Event
    ) -> None:
        """Load due traces until ``stop`` is set; a Neo4j failure is logged and retried."""
        while not stop.is_set():
            try:
                with connect() as db:
                    # the lease constraint first: without it two receivers starting on an empty
                    # database could each create a lease node for one trace
                    init_schema(db)
                    # what the spool's previous process held (it is dead: the spool is ours)
                    # and what receivers that never came back left expired
                    CollectStore(db, self.owner).clear()
                    while not stop.is_set():
                        if self.step(db) == 0:
                            self.spool.wait_until_due(
                                self.options.quiet_seconds,
                                self.options.max_wait_seconds,
                                self.options.idle_seconds,
                            )
            except (MemtraceError, OSError, ValueError) as exc:
                # the loader thread must not die quietly: whatever stopped this step (Neo4j
                # away, a spool file unreadable), say so and try again; the spans stay spooled
                self.counters.load_errors += 1
                self.log(
                    f"loading paused: {exc}; the spans stay in the spool, retrying in "
                    f"{self.options.retry_seconds:g} s"
                )
                stop.wait(self.options.retry_seconds)


class Attributions:
    """The loaded traces waiting for ``after_load``, attributed on a thread of their own: while
    one attribution runs the loader goes on, and everything it loads meanwhile is attributed
    together next (one call for many traces, not one per trace)."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._waiting = threading.Event()
        self._trace_ids: list[str] = []
        self._new_cases: list[tuple[str, str]] | None = None

    def add(self, trace_ids: list[str], new_cases: list[tuple[str, str]] | None) -> None:
        with self._lock:
            self._trace_ids += [t for t in trace_ids if t not in self._trace_ids]
            if new_cases is not None:
                self._new_cases = (self._new_cases or []) + new_cases
            self._waiting.set()

    def _take(self) -> tuple[list[str], list[tuple[str, str]] | None]:
        with self._lock:
            taken = self._trace_ids, self._new_cases
            self._trace_ids, self._new_cases = [], None
            self._waiting.clear()
        return taken

    def run(
        self,
        after_load: AfterLoad,
        connect: Callable[[], AbstractContextManager[Database]],
        loading: threading.Thread,
    ) -> None:
        """Attribute what was loaded until ``loading`` (the loader's thread) has ended and
        nothing is left, so what was loaded before a stop is attributed before this returns.
        A failed connection is logged (the traces taken are left unattributed) and retried."""
        while True:
            try:
                with connect() as db:
                    while True:
                        self._waiting.wait(IDLE_ATTRIBUTION_LOOK)
                        trace_ids, new_cases = self._take()
                        if trace_ids:
                            after_load(db, trace_ids, new_cases)
                        elif not loading.is_alive():
                            return
            except MemtraceError as exc:
                self.log(f"attributing loaded traces paused: {exc}")
                if not loading.is_alive():
                    return
                loading.join(RETRY_ATTRIBUTION_SECONDS)


@contextmanager
def _heartbeat(store: CollectStore, trace_ids: Sequence[str], seconds: float) -> Iterator[None]:
    """Renew the leases on ``trace_ids`` every third of ``seconds`` while the block runs, so a
    lease can be short and still outlast a long load."""
    done = threading.Event()

    def beat() -> None:
        while not done.wait(seconds / 3):
            # a missed beat is harmless while the lease lasts; the load's own errors are logged
            with suppress(MemtraceError):
                store.renew(trace_ids, seconds)

    thread = threading.Thread(target=beat, name="memtrace-collect-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
