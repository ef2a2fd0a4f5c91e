"""Which requests form one timeline: the ids that tie OTel traces of one memory together.

A web service traces each request (a user message, a question) as its own OTel trace; what ties
the requests of one memory together is an attribute. The conventions' ids, in the order of
``DEFAULT_GROUPING`` (the widest memory scope first: a Mem0-style memory is a user's and lives
across that user's sessions and conversations, so grouping by session would cut a memory
written in one session from its reads in the next): the user (OpenInference / OTel ``user.id``,
Langfuse's ``langfuse.user.id``, ``enduser.id``, Mem0's ``user_id`` scope), the conversation
(GenAI ``gen_ai.conversation.id``), the session (``session.id``, ``langfuse.session.id``).
``--group-by ATTRIBUTE`` replaces them with one attribute. A request's group is the first of
these that any of its spans carries (its root span first, then in start order); a request that
carries none is a trace of its own, ``otlp-<OTel trace id>``.

Pure: spans in, ids out (docs/trace-format.md, "Timelines").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from memtrace.loaders.otlp.conventions import langfuse
from memtrace.loaders.otlp.spans import Span

TIMELINE_PREFIX: Final = "timeline:"
# a group value longer than this, or holding anything but printable non-space ASCII, is named
# by its digest in the trace id (the value itself stays on the trace as a property)
_READABLE = re.compile(r"^[!-~]{1,128}$")

USER_KEYS: Final = (*reversed(langfuse.USER_KEYS), "enduser.id", "user_id")
CONVERSATION_KEYS: Final = ("gen_ai.conversation.id",)
SESSION_KEYS: Final = tuple(reversed(langfuse.SESSION_KEYS))
# what each kind of id is stored as on the trace, its requests and their cases
ID_PROPERTIES: Final = {
    "user": "user_id",
    "conversation": "conversation_id",
    "session": "session_id",
}


@dataclass(frozen=True)
class Grouping:
    """The kinds of group id, in precedence order, each with the attributes that carry it."""

    kinds: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(key for _, keys in self.kinds for key in keys)


DEFAULT_GROUPING: Final = Grouping(
    (("user", USER_KEYS), ("conversation", CONVERSATION_KEYS), ("session", SESSION_KEYS))
)


def group_by(attribute: str) -> Grouping:
    """``--group-by ATTRIBUTE``: that attribute alone ties requests together."""
    return Grouping(((attribute, (attribute,)),))


@dataclass(frozen=True)
class Group:
    """A request's timeline: the kind of id (``user``, ..., or the ``--group-by`` attribute),
    the attribute it was read from and its value."""

    kind: str
    attribute: str
    value: str

    @property
    def trace_id(self) -> str:
        return timeline_trace_id(self.kind, self.value)

    def properties(self) -> dict[str, str]:
        """The timeline's trace properties: which attribute grouped it, its value, and the
        user / conversation / session id it is."""
        found = {"timeline_kind": self.kind, "timeline_attribute": self.attribute}
        found["timeline_value"] = self.value
        if self.kind in ID_PROPERTIES:
            found[ID_PROPERTIES[self.kind]] = self.value
        return found


def timeline_trace_id(kind: str, value: str) -> str:
    """``timeline:<kind>:<value>``: stable (the same id for the same group, from files or live),
    and a plain short string: a value longer than 128 characters or with spaces or non-ASCII
    is replaced by ``sha256-`` and its first 32 hex digits."""
    shown = value if _READABLE.match(value) else f"sha256-{_digest(value)}"
    return f"{TIMELINE_PREFIX}{kind}:{shown}"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


def by_request(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans per OTel trace id (one request each), in the order their first span came."""
    found: dict[str, list[Span]] = {}
    for span in spans:
        found.setdefault(span.trace_id, []).append(span)
    return found


def request_group(spans: list[Span], grouping: Grouping) -> Group | None:
    """The timeline one request's spans belong to, or None (a trace of its own)."""
    ordered = _root_first(spans)
    for kind, keys in grouping.kinds:
        for span in ordered:
            for key in keys:
                value = _id_value(span.attributes.get(key))
                if value is not None:
                    return Group(kind, key, value)
    return None


def request_ids(spans: list[Span]) -> dict[str, str]:
    """The user, conversation and session ids a request carries (``user_id``,
    ``conversation_id``, ``session_id``), for its session node and its cases."""
    found: dict[str, str] = {}
    ordered = _root_first(spans)
    for kind, keys in DEFAULT_GROUPING.kinds:
        value = next(
            (
                v
                for span in ordered
                for key in keys
                if (v := _id_value(span.attributes.get(key))) is not None
            ),
            None,
        )
        if value is not None:
            found[ID_PROPERTIES[kind]] = value
    return found


def _root_first(spans: list[Span]) -> list[Span]:
    return sorted(spans, key=lambda s: (s.parent_id is not None, s.start_ns, s.span_id))


def _id_value(value: object) -> str | None:
    """An id attribute's value as text (ids are strings or numbers); an empty one is none."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value).strip()
    return text or None
