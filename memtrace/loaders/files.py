"""Reading trace files: the text, JSON and validation errors every format reports the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from memtrace.errors import InputError

M = TypeVar("M", bound=BaseModel)


def read_text(file: Path, empty_problem: str) -> str:
    """The file's UTF-8 text; ``empty_problem`` is the error for a file with nothing in it."""
    path = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    if not text.strip():
        raise InputError(path, None, empty_problem)
    return text


def decode_json(
    text: str,
    path: str,
    location: str | None,
    truncated: Callable[[json.JSONDecodeError], str | None] | None = None,
) -> Any:
    """``text`` as JSON, or an InputError at ``location`` (the error's line when None) saying
    what is malformed, and what ``truncated`` says of the error (a hint when the text looks cut
    off)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(path, location, TOO_DEEP) from None
    except json.JSONDecodeError as exc:
        problem = describe_json_error(exc)
        hint = truncated(exc) if truncated is not None else None
        if hint:
            problem = f"{problem}; {hint}"
        raise InputError(path, location or str(exc.lineno), problem) from None


def validate(model: type[M], data: Any, path: str, location: str) -> M:
    """``data`` (a decoded JSON object) as ``model``, or an InputError naming each bad field."""
    if not isinstance(data, dict):
        raise InputError(path, location, "expected a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(path, location, describe_validation_error("", exc)) from None


MAX_PROBLEMS: Final = 5


def describe_validation_error(kind: str, exc: ValidationError) -> str:
    """The failing fields (as JSON paths, the first few) and what is wrong with each."""
    errors = exc.errors(include_url=False)
    problems = []
    for error in errors[:MAX_PROBLEMS]:
        path = kind
        for part in error["loc"]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
        message = error["msg"]
        if error["type"] == "missing":
            message = "required field is missing"
        elif error["type"] == "extra_forbidden":
            message = "unknown field (put extra data into 'metadata')"
        problems.append(f"{path}: {message}")
    more = f" (and {len(errors) - MAX_PROBLEMS} more)" if len(errors) > MAX_PROBLEMS else ""
    return "; ".join(problems) + more


def describe_json_error(exc: json.JSONDecodeError) -> str:
    """``malformed JSON: <what> at column N`` (json's own message may end in a dangling "at")."""
    return f"malformed JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"


TOO_DEEP: Final = "JSON nested too deeply (arrays/objects inside each other hundreds of levels)"
