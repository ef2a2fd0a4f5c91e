"""The trace formats memtrace reads, by name: each one's detector, reader and writer.

``memtrace load`` detects a file's format by asking every detector (a certain answer wins; a
guess is used only when no detector is certain, and is explained in errors); ``--format``
chooses from ``FORMATS``; ``bench make --format`` from the formats with a writer. A new format
is one entry in ``FORMATS`` (docs/architecture.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Final, Literal

from memtrace.errors import InputError
from memtrace.loaders.models import AnyRecord
from memtrace.loaders.native import read_native
from memtrace.loaders.otlp import Labels, looks_like_otlp, read_otlp
from memtrace.loaders.smartcomment import read_smartcomment
from memtrace.loaders.smartcomment_writer import to_smartcomment

Format = Literal["native", "smartcomment", "otlp"]
Records = Iterable[tuple[str, AnyRecord]]


@dataclass(frozen=True)
class Detection:
    """The format a file was read as, and why (quoted in errors when the guess was weak)."""

    format: Format
    reason: str
    certain: bool = True


class Sniff:
    """What detectors look at: the file's first bytes, its first non-blank line, and (read only
    when a detector asks) the whole file as one JSON value."""

    def __init__(self, file: Path) -> None:
        self.file = file
        try:
            with file.open("rb") as handle:
                self.head = handle.read(4096)
                handle.seek(0)
                self.first_line = next((raw for raw in handle if raw.strip()), None)
        except OSError as exc:
            raise InputError(str(file), None, f"cannot read file: {exc.strerror or exc}") from None

    @cached_property
    def first(self) -> object:
        """The first line as JSON, or None when it is not complete JSON."""
        try:
            return json.loads(self.first_line) if self.first_line else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None

    @property
    def starts_json(self) -> bool:
        return self.first_line is not None and self.first_line.lstrip()[:1] in (b"{", b"[")

    @cached_property
    def document(self) -> object:
        """The file as one JSON value, or None when it is not one (JSON Lines, cut off, ...)."""
        try:
            return json.loads(self.file.read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return None
        except OSError as exc:
            path = str(self.file)
            raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class TraceFormat:
    name: Format
    description: str  # what a file of this format looks like (said in a guess's error)
    detect: Callable[[Sniff], Detection | None]
    read: Callable[[Path, Labels | None], Records]
    # a native trace file as this format's text (`bench make --format`); None: not written
    write: Callable[[Path], str] | None = None


def _detect_otlp(sniff: Sniff) -> Detection | None:
    if looks_like_otlp(sniff.head):
        return Detection("otlp", 'its first JSON key is "resourceSpans"')
    return None


def _detect_native(sniff: Sniff) -> Detection | None:
    if sniff.first_line is None:
        return Detection("native", "the file is empty", certain=False)
    if isinstance(sniff.first, dict) and "type" in sniff.first:
        return Detection("native", 'its first line is a JSON object with a "type" field')
    if not sniff.starts_json:
        return Detection(
            "native", "it does not start with '{' or '[' (JSON Lines assumed)", certain=False
        )
    if not isinstance(sniff.document, dict) and (
        sniff.first_line.lstrip().startswith(b"[") or isinstance(sniff.first, dict)
    ):
        return Detection(
            "native",
            'its first line is complete JSON but not an object with a "type" field',
            certain=False,
        )
    return None


def _detect_smartcomment(sniff: Sniff) -> Detection | None:
    if not sniff.starts_json or (isinstance(sniff.first, dict) and "type" in sniff.first):
        return None
    if isinstance(sniff.document, dict):
        if "graph_id" in sniff.document:
            return Detection("smartcomment", "it is one JSON object with a graph_id")
        return Detection(
            "smartcomment",
            "it is one JSON object (not JSON Lines), though without a graph_id",
            certain=False,
        )
    starts_object = sniff.first_line is not None and sniff.first_line.lstrip()[:1] == b"{"
    if starts_object and not isinstance(sniff.first, dict):
        return Detection(
            "smartcomment",
            "it starts with '{' and its first line is not a complete object",
            certain=False,
        )
    return None


def _read_native(file: Path, labels: Labels | None) -> Iterator[tuple[str, AnyRecord]]:
    return read_native(file)


def _read_smartcomment(file: Path, labels: Labels | None) -> Records:
    return read_smartcomment(file)


FORMATS: Final[dict[Format, TraceFormat]] = {
    # OTLP first: its detector reads 4 KB, where the others may parse the whole file
    "otlp": TraceFormat(
        "otlp", 'OTLP JSON, {"resourceSpans": [...]}, or JSON Lines of it', _detect_otlp, read_otlp
    ),
    "native": TraceFormat(
        "native",
        'JSON Lines whose first line is {"type": "trace", ...}',
        _detect_native,
        _read_native,
        lambda file: file.read_text(encoding="utf-8"),
    ),
    "smartcomment": TraceFormat(
        "smartcomment",
        'one JSON object with "graph_id" and "data"',
        _detect_smartcomment,
        _read_smartcomment,
        to_smartcomment,
    ),
}
FORMAT_NAMES: Final[tuple[Format, ...]] = tuple(FORMATS)
WRITTEN_FORMATS: Final[tuple[Format, ...]] = tuple(n for n, f in FORMATS.items() if f.write)


def detect(file: Path) -> Detection:
    """The format a detector is certain of; else (after refusing a LoCoMo dataset or a JSON
    array by name) the one a detector guesses."""
    sniff = Sniff(file)
    guesses = []
    for trace_format in FORMATS.values():
        detection = trace_format.detect(sniff)
        if detection is not None and detection.certain:
            return detection
        if detection is not None:
            guesses.append(detection)
    if sniff.starts_json:
        _refuse_non_traces(file, sniff.document)
    if guesses:
        return guesses[0]
    raise InputError(
        str(file), None, f"not a trace file of any format memtrace reads: {_formats_said()}"
    )


def record_source(
    file: Path, fmt: Format, labels: Labels | None = None
) -> Callable[[], Iterator[tuple[str, AnyRecord]]]:
    """A function that reads the file's records again each time it is called."""
    read = FORMATS[fmt].read
    return lambda: iter(read(file, labels))


def explained(error: InputError, detection: Detection) -> InputError:
    """Add why the file was read as its format, when that was a guess, and how to force
    another."""
    if detection.certain:
        return error
    others = [name for name in FORMATS if name != detection.format]
    return InputError(
        error.path,
        error.location,
        f"{error.problem} [read as {detection.format} because {detection.reason}; "
        f"{_formats_said(others)}]",
    )


def _formats_said(names: Iterable[Format] = FORMAT_NAMES) -> str:
    return "; ".join(f"`--format {n}` reads {FORMATS[n].description}" for n in names)


def _is_locomo_sample(value: object) -> bool:
    return isinstance(value, dict) and {"conversation", "qa"} <= value.keys()


def _refuse_non_traces(file: Path, document: object) -> None:
    """A LoCoMo dataset or a JSON array is a common wrong file: say what it is and what to do."""
    samples = document if isinstance(document, list) else [document]
    if samples and all(_is_locomo_sample(sample) for sample in samples):
        questions = sum(
            len(s["qa"]) for s in samples if isinstance(s, dict) and isinstance(s["qa"], list)
        )
        raise InputError(
            str(file),
            None,
            f"this is a LoCoMo dataset ({len(samples)} conversations, {questions} questions), "
            "not a trace. Run a memory system over it to make traces, e.g. "
            f"`memtrace run mem0 --data {file} --out traces/ --load`",
        )
    if isinstance(document, list):
        raise InputError(
            str(file),
            None,
            "a JSON array is not a trace: native traces are JSON Lines (one object per line, "
            'the first {"type": "trace", ...}) and smartcomment graphs are one JSON object',
        )
