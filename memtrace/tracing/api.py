"""The public tracing API: module functions bound to the active tracer and operation.

The active tracer lives in a context variable (async tasks and copied contexts see their own),
with a process-wide fallback so threads started inside ``trace(...)`` record into it too. With
no active tracer every call returns at once: a decorated function costs one context-variable
lookup and one extra call.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from memtrace.tracing.clock import Clock
from memtrace.tracing.tracer import CASE_FIELDS, CASE_REQUIRED, OFF, OpState, Tracer, Var

P = ParamSpec("P")
R = TypeVar("R")

_tracer: ContextVar[Tracer | None] = ContextVar("memtrace_tracer", default=None)
_op: ContextVar[OpState | None] = ContextVar("memtrace_operation", default=None)
_session: ContextVar[str | None] = ContextVar("memtrace_session", default=None)
_process_tracer: list[Tracer] = []  # fallback for threads; a list so no `global` is needed


def active() -> Tracer | None:
    tracer = _tracer.get()
    if tracer is None and _process_tracer:
        return _process_tracer[-1]
    return tracer


@contextmanager
def trace(
    path: str | Path,
    trace_id: str,
    *,
    system: str | None = None,
    dataset: str | None = None,
    clock: Clock | None = None,
    metadata: dict[str, Any] | None = None,
    enabled: bool = True,
    tracer_class: Callable[..., Tracer] = Tracer,
    **unknown: Any,
) -> Iterator[Tracer | None]:
    """Record everything inside the block into the native trace file ``path``.

    ``tracer_class`` builds the tracer (a subclass may record elsewhere too, e.g. OTel spans).
    """
    if unknown:
        _refuse_unknown(trace, unknown)
    if not enabled:
        yield None
        return
    tracer = tracer_class(
        Path(path), trace_id, system=system, dataset=dataset, clock=clock, metadata=metadata
    )
    token = _tracer.set(tracer)
    _process_tracer.append(tracer)
    try:
        yield tracer
    finally:
        _process_tracer.remove(tracer)
        _tracer.reset(token)
        tracer.close()


@contextmanager
def session(
    name: str,
    *,
    session_id: str | None = None,
    category: str | None = None,
    metadata: dict[str, Any] | None = None,
    **unknown: Any,
) -> Iterator[str]:
    """A stage of the run; operations and variables created inside belong to it. Yields the
    session id (``""`` while tracing is off)."""
    if unknown:
        _refuse_unknown(session, unknown)
    tracer = active()
    if tracer is None:
        yield ""
        return
    sid = tracer.session(name, session_id=session_id, category=category, metadata=metadata)
    token = _session.set(sid)
    try:
        yield sid
    finally:
        _session.reset(token)


class operation:  # lower-case: used like a function, @operation(...) or with operation(...)
    """An operation: a decorator or a context manager.

    Inside it, ``read``/``write``/``edge``/``mutation``/``delete`` attach to it. An exception
    is recorded in the operation's metadata and re-raised.
    """

    __slots__ = ("_state", "_token", "_tracer", "category", "kind", "metadata", "name")

    def __init__(
        self,
        name: str,
        *,
        category: str | None = None,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            _refuse_unknown(operation, unknown)
        self.name = name
        self.category = category
        self.kind = kind
        self.metadata = metadata
        self._state: OpState | None = None
        self._tracer: Tracer | None = None
        self._token: Any = None

    def __enter__(self) -> OpState:
        """The open operation; while tracing is off an unrecorded one with id ``""`` (as
        ``variable`` hands out ``OFF``), so code using ``op.id`` runs the same either way."""
        tracer = _tracer.get()
        if tracer is None:
            if not _process_tracer:
                return OpState("", self.name, "", 0, None, self.category, self.kind)
            tracer = _process_tracer[-1]
        self._tracer = tracer
        self._state = tracer.start_operation(
            self.name,
            session=_session.get(),
            category=self.category,
            kind=self.kind,
            metadata=self.metadata,
        )
        self._token = _op.set(self._state)
        return self._state

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        state = self._state
        if state is None:
            return
        _op.reset(self._token)
        if exc is not None:
            state.metadata["error"] = f"{type(exc).__name__}: {exc}"
        if self._tracer is not None:
            self._tracer.finish_operation(state)
        self._state = self._tracer = None

    def __call__(self, func: Callable[P, R]) -> Callable[P, R]:
        spec = (self.name, self.category, self.kind, self.metadata)
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                if _tracer.get() is None and not _process_tracer:
                    return await func(*args, **kwargs)
                with operation(spec[0], category=spec[1], kind=spec[2], metadata=spec[3]):
                    return await func(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(func)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            if _tracer.get() is None and not _process_tracer:
                return func(*args, **kwargs)
            with operation(spec[0], category=spec[1], kind=spec[2], metadata=spec[3]):
                return func(*args, **kwargs)

        return run


def current_operation() -> OpState | None:
    return _op.get()


def variable(
    name: str,
    value: Any,
    *,
    category: str | None = None,
    class_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    sources: Iterable[Var] = (),
) -> Var:
    """Register ``value`` under identity ``(class_name, name)``; a changed value is a new version.

    Registering alone does not attach the variable to an operation (use ``read``/``write``).
    ``sources`` does, in one call: ``variable(n, v, sources=(a, b))`` records the same as
    ``x = variable(n, v); edge(a, x); edge(b, x)`` (flows into the new value, written by the
    current operation).
    """
    tracer = _tracer.get()  # active(), inlined: variable() is the most frequent call
    if tracer is None:
        if not _process_tracer:
            return OFF
        tracer = _process_tracer[-1]
    var = tracer.variable(
        name,
        value,
        category=category,
        class_name=class_name,
        session=_session.get(),
        metadata=metadata,
    )
    if sources:
        op = _op.get()
        if op is not None:
            op.edges_to(sources, var)
    return var


class Registered:
    """A variable read again and again with a value that rarely changes (a prompt, a parameter).

        TOP_K = Registered("top_k", category="parameter", class_name="parameter")
        ...
        with operation("memory_system.search"):
            TOP_K.read(params.top_k)    # registers top_k@1 once, then only marks it read

    ``get(value)`` returns exactly what ``variable(name, value, ...)`` would, and ``read(value)``
    also marks it read by the current operation. While ``value`` is the same immutable object
    (``str``, ``int``, ``float``, ``bool``, ``None``) as last time and the trace's latest version
    of this identity is still the one it returned, that is a few attribute and dict lookups:
    nothing is serialized or compared. Any other value goes through ``variable`` (a changed value
    is a new version; a mutable value is always re-serialized, as it may have changed in place).
    """

    __slots__ = ("_key", "_last", "category", "class_name", "metadata", "name")

    def __init__(
        self,
        name: str,
        *,
        category: str | None = None,
        class_name: str | None = None,
        metadata: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            _refuse_unknown(Registered, unknown)
        self.name = name
        self.category = category
        self.class_name = class_name
        self.metadata = metadata
        self._key = (class_name, name)
        # (value, the tracer's latest-version entry it matched, handle): one tuple, replaced
        # whole, so threads never see a half-updated cache
        self._last: tuple[Any, object, Var] | None = None

    def get(self, value: Any) -> Var:
        tracer = _tracer.get()
        if tracer is None:
            if not _process_tracer:
                return OFF
            tracer = _process_tracer[-1]
        last = self._last
        # The entry is a tuple the tracer replaces on every new version of this identity and
        # that no other tracer holds: same entry object = same trace, version still the latest.
        if last is not None and last[0] is value and tracer.latest(self._key) is last[1]:
            return last[2]
        return self._register(tracer, value)

    def _register(self, tracer: Tracer, value: Any) -> Var:
        var = tracer.variable(
            self.name,
            value,
            category=self.category,
            class_name=self.class_name,
            session=_session.get(),
            metadata=self.metadata,
        )
        if value is None or value.__class__ in _IMMUTABLE:
            entry = tracer.latest(self._key)
            if entry is not None and entry[0] == var[0]:  # not replaced by another thread since
                self._last = (value, entry, var)
        return var

    def read(self, value: Any) -> Var:
        """``read(self.get(value))``: the handle, marked read by the current operation."""
        var = self.get(value)
        op = _op.get()
        if op is not None:
            var_id = var[0]
            if var_id and var_id not in op.writes:
                op.reads[var_id] = None
        return var


_IMMUTABLE = frozenset({str, int, float, bool})


def read(*variables: Var) -> None:
    op = _op.get()
    if op is not None:
        reads, writes = op.reads, op.writes  # OpState.read inlined: this is called a lot
        for var in variables:
            var_id = var[0]
            if var_id and var_id not in writes:
                reads[var_id] = None


def write(*variables: Var) -> None:
    op = _op.get()
    if op is not None:
        op.write(*variables)


def edge(source: Var, target: Var) -> None:
    op = _op.get()
    if op is not None:
        op.edge(source, target)


def edges(sources: Iterable[Var], target: Var) -> None:
    """``edge(source, target)`` for each of ``sources`` in order, in one call."""
    op = _op.get()
    if op is not None:
        op.edges_to(sources, target)


def mutation(
    var: Var,
    value: Any,
    *,
    category: str | None = None,
    metadata: dict[str, Any] | None = None,
    **unknown: Any,
) -> Var:
    """An in-place update of ``var``: a new version, written by the current operation.

    The new version keeps what identifies the variable: its class (part of its identity) and
    its category unless ``category`` is given (attribution finds memories by category, so a
    memory overwritten without one would no longer be a memory).
    """
    if unknown:
        _refuse_unknown(mutation, unknown)
    tracer = active()
    if tracer is None or not var.id:
        return OFF
    if category is None:
        latest = tracer.latest((var.class_name, var.name))
        category = latest[4] if latest is not None else None
    new = tracer.variable(
        var.name,
        value,
        category=category,
        class_name=var.class_name,
        session=_session.get(),
        metadata=metadata,
    )
    if new.id != var.id:
        edge(var, new)
    return new


def delete(var: Var) -> None:
    """Explicit deletion of ``var`` by the current operation: an edge to the marker variable."""
    tracer = active()
    if tracer is None or not var.id:
        return
    edge(var, tracer.marker())


def case(**record: Any) -> None:
    """Record one evaluated question (a native ``case`` record; see docs/trace-format.md).

    A field the format does not have, a missing ``id`` or ``query``, or one text where a list of
    texts belongs fails here, at the call, instead of when the trace is loaded.
    """
    unknown = {key: value for key, value in record.items() if key not in CASE_FIELDS}
    if unknown:
        _refuse_unknown(case, unknown, CASE_FIELDS)
    missing = [key for key in CASE_REQUIRED if record.get(key) is None]
    if missing:
        raise TypeError(f"case() needs {' and '.join(f'{key}=' for key in missing)}")
    for key in ("golden_answers", "evidence", "missing_evidence"):
        if isinstance(record.get(key), str):
            raise TypeError(f"case({key}=...) takes a list of texts, not one text")
    tracer = active()
    if tracer is not None:
        tracer.case(record)


def _refuse_unknown(
    call: Callable[..., Any], unknown: dict[str, Any], known: Iterable[str] = ()
) -> None:
    """Raise TypeError naming the first unknown keyword and the closest known one."""
    name = getattr(call, "__name__", str(call))
    if not known:
        parameters = inspect.signature(call).parameters.values()
        known = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]
    known = list(known)
    word = next(iter(unknown))
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}=?" if close else f"it takes {', '.join(known)}"
    raise TypeError(f"{name}() got an unexpected keyword argument {word!r}: {hint}")
