"""A candidate configuration of a reference system: its prompts and parameters, as plain data.

Two ``SystemConfig`` values compare, diff and hash like the data they are; each half is a TOML
file ``memtrace run --prompts FILE --params FILE`` reads, which is also what the optimizer
writes for an accepted candidate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import tomli_w

from memtrace.errors import InputError
from memtrace.prompts import Prompt, prompts_toml, read_prompts, read_toml_file
from memtrace.systems.params import Params
from memtrace.systems.prompts import DEFAULTS


def _default_prompts() -> dict[str, Prompt]:
    return dict(DEFAULTS)


@dataclass(frozen=True)
class SystemConfig:
    prompts: Mapping[str, Prompt] = field(default_factory=_default_prompts)
    params: Params = field(default_factory=Params)

    def values(self) -> dict[str, Any]:
        """``prompt:<name>`` -> text and ``parameter:<name>`` -> value, the trace's names."""
        out: dict[str, Any] = {f"prompt:{n}": p.text for n, p in sorted(self.prompts.items())}
        out |= {f"parameter:{f.name}": getattr(self.params, f.name) for f in fields(Params)}
        return out

    def diff(self, other: SystemConfig) -> dict[str, tuple[Any, Any]]:
        """What ``other`` changes: name -> (this value, other's value)."""
        mine, theirs = self.values(), other.values()
        return {k: (mine.get(k), theirs.get(k)) for k in theirs if mine.get(k) != theirs[k]}

    def with_params(self, **values: Any) -> SystemConfig:
        return replace(self, params=replace(self.params, **values))

    def with_prompts(self, texts: Mapping[str, str]) -> SystemConfig:
        prompts = dict(self.prompts)
        for name, text in texts.items():
            prompts[name] = prompts[name].revise(text)
        return replace(self, prompts=prompts)

    def key(self) -> str:
        """A stable text identity (cache and resume key)."""
        return hashlib.sha256(json.dumps(self.values(), sort_keys=True).encode()).hexdigest()[:16]


def read_params(path: Path, base: Params | None = None) -> Params:
    """``base`` with the values a TOML file sets (``top_k = 12``); unknown names and values of
    the wrong type are errors naming the file and key."""
    data = read_toml_file(path)
    known = {f.name: f for f in fields(Params)}
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name not in known:
            raise InputError(str(path), name, f"unknown parameter (known: {', '.join(known)})")
        kind = type(getattr(Params(), name))
        ok = isinstance(value, kind) and not isinstance(value, bool)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise InputError(str(path), name, f"expected {kind.__name__}, got {value!r}")
        values[name] = value
    return replace(base or Params(), **values)


def params_toml(params: Params) -> str:
    return tomli_w.dumps({f.name: getattr(params, f.name) for f in fields(Params)})


def read_config(prompts: Path | None = None, params: Path | None = None) -> SystemConfig:
    config = SystemConfig()
    return SystemConfig(
        prompts=read_prompts(prompts, config.prompts) if prompts else config.prompts,
        params=read_params(params) if params else config.params,
    )


def write_config(config: SystemConfig, directory: Path) -> tuple[Path, Path]:
    """``prompts.toml`` and ``params.toml`` in ``directory``, readable by ``memtrace run``."""
    directory.mkdir(parents=True, exist_ok=True)
    prompts_path, params_path = directory / "prompts.toml", directory / "params.toml"
    prompts_path.write_text(prompts_toml(config.prompts.values()), encoding="utf-8")
    params_path.write_text(params_toml(config.params), encoding="utf-8")
    return prompts_path, params_path
