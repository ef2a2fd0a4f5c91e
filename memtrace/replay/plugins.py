"""Which replayer replays a trace: memtrace's own engine for the systems it runs, else a user's
replayer factory (``memtrace.replay.hook``), named on the command line (``--replayer
module:attr``) or registered in the entry point group ``memtrace.replayers`` under the system's
name (the ``system`` the trace was written with):

    [project.entry-points."memtrace.replayers"]
    chatmem = "chatmem.replay:make_replayer"

``can_replay`` answers cheaply, from the trace's system and source only, whether a replay can
be tried (the replay itself may still refuse a trace that does not hold what it needs).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from memtrace.errors import ConfigError
from memtrace.replay.hook import ReplayableSystem, ReplayTrace
from memtrace.systems.registry import SYSTEMS

ENTRY_POINT_GROUP: Final = "memtrace.replayers"

ReplayerFactory = Callable[[ReplayTrace], ReplayableSystem]


def load_factory(spec: str) -> ReplayerFactory:
    """The replayer factory ``module:attr`` names (ConfigError, one line, when it cannot be
    imported or is not callable)."""
    factory: ReplayerFactory = load_callable(spec, "--replayer", "mysystem.replay:make")
    return factory


def load_callable(spec: str, option: str, example: str) -> Any:
    """The callable ``module:attr`` names, given with ``option`` (ConfigError, one line, when
    it cannot be imported or is not callable)."""
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise ConfigError(f"{option} {spec!r}: expected module:attr (e.g. {example})")
    module = _import(f"{option} {spec!r}", module_name)
    found: object = module
    for part in attr.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ConfigError(f"{option} {spec!r}: module {module_name!r} has no {attr!r}")
    if not callable(found):
        raise ConfigError(f"{option} {spec!r}: {attr!r} is not callable")
    return found


def _import(given: str, module_name: str) -> object:
    """The module ``module_name``, looked for as Python looks for it and then in the current
    folder (where a user runs memtrace beside their replayer module, as ``python -m`` would
    find it); a module found in neither is one error line saying where it was looked for."""
    module = _try_import(given, module_name)
    here = str(Path.cwd())
    if module is None and here not in sys.path:
        sys.path.append(here)  # after the installed packages: the folder never shadows them
        module = _try_import(given, module_name)
    if module is None:
        top = module_name.split(".")[0]
        raise ConfigError(
            f"{given}: no module {module_name!r} in the current folder ({here}) or "
            f"on the Python path: run memtrace from the folder holding {top}.py (or the package "
            f"{top}/), add that folder to PYTHONPATH, or pip install your package"
        )
    return module


def _try_import(given: str, module_name: str) -> object | None:
    """The module, None when it is not found; a module that is found but fails to import (or
    imports one that is missing) is an error naming what failed."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if _missing_is(exc, module_name):
            return None
        failure: ImportError = exc
    except ImportError as exc:
        failure = exc
    raise ConfigError(f"{given}: importing {module_name!r} failed: {failure}")


def _missing_is(exc: ModuleNotFoundError, module_name: str) -> bool:
    """The module not found is the one asked for (or a package above it), not one it imports."""
    missing = exc.name or ""
    return module_name == missing or module_name.startswith(missing + ".")


def _entry_point(system: str) -> metadata.EntryPoint | None:
    found = metadata.entry_points(group=ENTRY_POINT_GROUP, name=system)
    return next(iter(found), None)


def registered_factory(system: str) -> ReplayerFactory | None:
    """The factory an installed package registered for ``system`` (None when none did)."""
    point = _entry_point(system)
    if point is None:
        return None
    try:
        factory = point.load()
    except Exception as exc:  # an installed plugin that fails to import: say which
        raise ConfigError(
            f"the replayer registered for system {system!r} ({point.value}, entry point group "
            f"{ENTRY_POINT_GROUP}) cannot be loaded: {exc}"
        ) from None
    if not callable(factory):
        raise ConfigError(f"the replayer registered for system {system!r} is not callable")
    result: ReplayerFactory = factory
    return result


def replay_refusal(
    system: str | None, *, source: str = "native", replayer: str | None = None
) -> str | None:
    """None when a trace of ``system`` loaded from a ``source`` file can be replayed (by the
    engine, the ``replayer`` spec given, or a registered replayer), else why not, in one line."""
    if source != "native":
        return (
            f"it was imported from a {source} file: an imported trace records what a system "
            "did, not how to run it again"
        )
    if system in SYSTEMS or replayer is not None:
        return None
    if system and _entry_point(system) is not None:
        return None
    return (
        f"no replayer for system {system!r}: memtrace replays {', '.join(SYSTEMS)} itself; for "
        f"a system of your own pass --replayer module:attr or register one in the entry point "
        f"group {ENTRY_POINT_GROUP} (docs/replay.md)"
    )


def can_replay(system: str | None, *, source: str = "native", replayer: str | None = None) -> bool:
    """Whether a trace of ``system`` from a ``source`` file can be replayed (``replay_refusal``
    says why not); cheap: no trace is read, no plugin imported."""
    return replay_refusal(system, source=source, replayer=replayer) is None
