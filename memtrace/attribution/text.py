"""What a message or memory variable says: the text, the speaker, the time, as systems
write them down (``said`` takes speaker prefixes, timestamps and message wrappers off a message
before its sentences are followed: what was said is matched, not how a system wrote it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

# Wrappers that memory frameworks append to message text; not part of what was said.
_SUFFIXES = (re.compile(r"\s*Below is this message's metadata:.*\Z", re.DOTALL),)


@dataclass(frozen=True)
class Said:
    """A message variable's value, taken apart: what was said, by whom, when (where it says)."""

    text: str
    speaker: str | None = None
    timestamp: str | None = None


# How systems write who said a message and when around what was said; none of it was said.
# MemBase: "Speaker Ana (role: user) says: TEXT\nTimestamp: 2024-03-02T10:15:00"
_WRAPPED = re.compile(
    r"^Speaker\s+(?P<speaker>[^\n]+?)\s+\(role:[^)]*\)\s+says:\s*(?P<text>.*?)"
    r"(?:\n\s*Timestamp:\s*(?P<time>[^\n]*))?\s*\Z",
    re.DOTALL,
)
# chat logs: "[2023-06-02 09:14] Ana: TEXT", "Ana: TEXT", "(9:14) Ana Lima: TEXT"
_STAMP = re.compile(r"^[\[(](?=[^\])\n]*\d)(?P<time>[^\])\n]{4,40})[\])]\s*")
_PREFIX = re.compile(r"^(?P<speaker>[A-Z][\w.'-]*(?: [A-Z][\w.'-]*)?):\s+(?=\S)")


@lru_cache(maxsize=65536)
def said(value: str | None) -> Said:
    """What a message variable says: JSON with content / text (and speaker / name, timestamp),
    or plain text; a wrapper naming the speaker and the time (MemBase's "Speaker NAME (role:
    user) says: ...", a chat log's "[time] NAME: ...") is taken off the text."""
    if not value:
        return Said("")
    text, speaker, timestamp = value, None, None
    try:
        data = json.loads(value)
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("content", "text", "message"):
            if isinstance(data.get(key), str):
                text = data[key]
                break
        speaker = next(
            (str(data[k]).strip() for k in ("speaker", "name") if _filled(data.get(k))), None
        )
        timestamp = data["timestamp"] if isinstance(data.get("timestamp"), str) else None
    elif isinstance(data, str):
        text = data
    for suffix in _SUFFIXES:
        text = suffix.sub("", text)
    text = text.strip()
    if wrapped := _WRAPPED.match(text):
        text = wrapped["text"].strip()
        speaker = speaker or wrapped["speaker"].strip()
        timestamp = timestamp or (wrapped["time"] or "").strip() or None
    if stamp := _STAMP.match(text):
        text = text[stamp.end() :]
        timestamp = timestamp or stamp["time"].strip()
    if prefix := _PREFIX.match(text):
        text = text[prefix.end() :]
        speaker = speaker or prefix["speaker"]
    return Said(text.strip(), speaker, timestamp)


def _filled(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def message_text(value: str | None) -> str:
    """The spoken text of a message variable (``said``)."""
    return said(value).text


def memory_text(value: str) -> str:
    """What a memory says: the ``memory`` / ``text`` of its JSON value, else the value."""
    try:
        data = json.loads(value)
    except ValueError:
        return value
    if isinstance(data, dict):
        for key in ("memory", "text", "content"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return value


def message_speaker(value: str | None) -> str | None:
    """Who said a message, if its value says (``said``)."""
    return said(value).speaker


def message_timestamp(value: str | None) -> str | None:
    """When a message was said, if its value says (``said``)."""
    return said(value).timestamp
