"""What a timeline already holds, as the OTLP reader asks for it while it converts new requests.

A request appended to a timeline links to what earlier requests wrote: an input text to the
latest variable holding it, a memory record to its document's latest version (and whether it
was deleted), a retrieved text without an id to the live memory holding it, an evidence text to
the message holding it. ``Prior`` answers these by exact text or by name, never by scanning
(loaders/append.py asks the graph through indexes); ``NO_PRIOR`` is a trace's first load.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final, Protocol


@dataclass(frozen=True)
class PriorVariable:
    """A variable an earlier request wrote into the timeline."""

    id: str
    name: str
    version: int
    value: str | None
    category: str | None
    class_name: str | None = None


class Prior(Protocol):
    def latest_with_text(self, text: str) -> PriorVariable | None:
        """The latest variable holding exactly ``text``."""
        ...

    def document(self, name: str) -> tuple[PriorVariable | None, bool]:
        """The latest version of memory ``name``, and whether it was deleted."""
        ...

    def live_document_with_text(self, text: str) -> PriorVariable | None:
        """The latest version of a memory, not deleted, holding exactly ``text``."""
        ...

    def documents_in_store(self, prefix: str) -> list[str]:
        """The names of the live memories whose name starts with ``prefix`` (a store's)."""
        ...

    def message_with_text(self, text: str) -> PriorVariable | None:
        """The earliest ``message`` variable holding exactly ``text`` (a case's evidence)."""
        ...

    def variable(self, var_id: str) -> PriorVariable | None:
        """The variable of that id (the shared deletion marker)."""
        ...


class _NoPrior:
    """A trace's first load: nothing came before."""

    def latest_with_text(self, text: str) -> PriorVariable | None:
        return None

    def document(self, name: str) -> tuple[PriorVariable | None, bool]:
        return None, False

    def live_document_with_text(self, text: str) -> PriorVariable | None:
        return None

    def documents_in_store(self, prefix: str) -> list[str]:
        return []

    def message_with_text(self, text: str) -> PriorVariable | None:
        return None

    def variable(self, var_id: str) -> PriorVariable | None:
        return None


NO_PRIOR: Final[Prior] = _NoPrior()


def text_key(text: str) -> str:
    """The indexed key of a variable's exact text (``Variable.text_key``): values can be far
    longer than an index key may be, their digest is not."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
