"""Prompts are versioned data: one registry for the systems' prompts and the judge's.

A ``Prompt`` is a name, a version, a text and the inputs its ``{placeholders}`` need; the inputs
are checked when it is built, so a rewritten prompt that drops ``{question}`` fails at once, not
in the middle of a run. A rewrite is ``prompt.revise(text)``: the same name, the next version.
The modules that own prompts register their defaults in ``PROMPTS`` when imported; a candidate
configuration is a plain ``{name: Prompt}`` mapping that a TOML file can hold::

    ["question-answering-prompt"]
    version = 2
    text = '''Answer the question from the memories below...'''
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from memtrace.errors import ConfigError, InputError


def placeholders(text: str) -> frozenset[str]:
    """The ``{field}`` names of a format string (``{{`` is a literal brace, not a field)."""
    try:
        return frozenset(name for _, name, _, _ in string.Formatter().parse(text) if name)
    except ValueError as exc:  # a lone "{" or "}"
        raise ConfigError(f"malformed placeholder in prompt text: {exc}") from None


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    version: int
    text: str
    # the placeholders ``format`` fills, exactly; none = a plain text sent as it is (system
    # prompts hold literal JSON braces)
    inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.version < 1:
            raise ConfigError(f"prompt {self.name!r}: version must be >= 1, got {self.version}")
        if not self.text.strip():
            raise ConfigError(f"prompt {self.name!r}: empty text")
        if not self.inputs:
            return
        found = placeholders(self.text)
        if found != set(self.inputs):
            missing = sorted(set(self.inputs) - found)
            extra = sorted(found - set(self.inputs))
            problems = [f"missing {{{n}}}" for n in missing] + [f"unknown {{{n}}}" for n in extra]
            raise ConfigError(f"prompt {self.name!r} v{self.version}: {', '.join(problems)}")

    @property
    def key(self) -> str:
        """``name@version``, the key MemTrace's update_results.json uses."""
        return f"{self.name}@{self.version}"

    def revise(self, text: str) -> Prompt:
        """The same prompt with a new text: the next version (itself when the text is equal)."""
        if text == self.text:
            return self
        return Prompt(self.name, self.version + 1, text, self.inputs)

    def format(self, **values: str) -> str:
        """The text with its inputs filled; extra values are ignored (callers share one dict of
        fields between prompts), a missing one is an error."""
        missing = sorted(set(self.inputs) - set(values))
        if missing:
            raise ConfigError(f"prompt {self.name!r} needs {', '.join(missing)}")
        return self.text.format(**values) if self.inputs else self.text


class PromptRegistry(Mapping[str, Prompt]):
    """Name -> the default ``Prompt``; the owners of prompts add theirs at import."""

    def __init__(self, prompts: Iterable[Prompt] = ()) -> None:
        self._prompts: dict[str, Prompt] = {}
        for prompt in prompts:
            self.add(prompt)

    def add(self, prompt: Prompt) -> Prompt:
        known = self._prompts.get(prompt.name)
        if known is not None and known != prompt:
            raise ConfigError(f"prompt {prompt.name!r} registered twice with different texts")
        self._prompts[prompt.name] = prompt
        return prompt

    def __getitem__(self, name: str) -> Prompt:
        try:
            return self._prompts[name]
        except KeyError:
            raise ConfigError(
                f"unknown prompt {name!r} (known: {', '.join(sorted(self._prompts))})"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._prompts)

    def __len__(self) -> int:
        return len(self._prompts)


PROMPTS = PromptRegistry()


def with_texts(base: Mapping[str, Prompt], texts: Mapping[str, str]) -> dict[str, Prompt]:
    """``base`` with the given texts: every changed text is the next version of its prompt."""
    unknown = sorted(set(texts) - set(base))
    if unknown:
        raise ConfigError(f"unknown prompt(s) {', '.join(unknown)}")
    return {name: prompt.revise(texts.get(name, prompt.text)) for name, prompt in base.items()}


def read_prompts(path: Path, base: Mapping[str, Prompt]) -> dict[str, Prompt]:
    """``base`` with the prompts a TOML file sets (a table per prompt: ``text``, optional
    ``version``; without one, a changed text is the next version of the base prompt)."""
    data = read_toml_file(path)
    out = dict(base)
    for name, table in data.items():
        if name not in base:
            raise InputError(str(path), name, f"unknown prompt (known: {', '.join(sorted(base))})")
        if not isinstance(table, dict) or not isinstance(table.get("text"), str):
            raise InputError(str(path), name, 'expected a table with text = "..."')
        unknown = sorted(set(table) - {"text", "version"})
        if unknown:
            raise InputError(str(path), name, f"unknown key(s) {', '.join(unknown)}")
        version = table.get("version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise InputError(str(path), f"{name}.version", f"expected an integer, got {version!r}")
        try:
            revised = base[name].revise(table["text"])
            out[name] = (
                revised
                if version is None
                else Prompt(name, version, table["text"], base[name].inputs)
            )
        except ConfigError as exc:
            raise InputError(str(path), name, str(exc)) from None
    return out


def prompts_toml(prompts: Iterable[Prompt]) -> str:
    """The file ``read_prompts`` reads back."""
    return tomli_w.dumps(
        {p.name: {"version": p.version, "text": p.text} for p in prompts}, multiline_strings=True
    )


def read_toml_file(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), None, f"malformed TOML: {exc}") from None
