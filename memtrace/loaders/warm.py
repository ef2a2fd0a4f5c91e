"""The first load on a fresh server costs what later ones do: ``warm_up`` loads a small shipped
trace (``warm_up.jsonl``: one message, its extraction, a memory, a search, an answer, one failed
case) so that the server plans the loader's queries before the user's first load, and leaves it
for the caller to attribute (the attribution queries warm on it too) and then delete."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from memtrace.db import Database
from memtrace.loaders.load import LoadOptions, load_paths

WARM_TRACE: Final = Path(__file__).with_name("warm_up.jsonl")
WARM_TRACE_ID: Final = "memtrace-warm-up"


def warm_up(db: Database) -> str:
    """Load the warm-up trace; its id (the caller deletes it: ``admin.delete_trace``)."""
    load_paths(db, [str(WARM_TRACE)], LoadOptions())
    return WARM_TRACE_ID
