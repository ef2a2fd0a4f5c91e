"""`memtrace run mem0-lib`: the real Mem0 library (``mem0ai`` 1.0.x or 2.x, whichever is
installed) over LoCoMo-format data, traced through ``memtrace.integrations.mem0``.

Mem0's LLM and embedder talk to the configured OpenAI-compatible endpoint (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``MEMTRACE_LLM_MODEL``; embeddings: the settings' embedding model with
``MEMTRACE_EMBEDDING_DIMS`` dimensions); its vector store is Qdrant's local in-memory mode and
its history a SQLite file, both in a temporary folder per conversation: no server. Mem0's
telemetry is off (``MEM0_TELEMETRY=False``; ``MEM0_DIR`` under ``$MEMTRACE_HOME``). The answer
and the judge come from ``--backend`` like the other systems. Each message is one ``add()``
(``"<speaker>: <text>"`` as the user), each question one ``search()`` of the conversation's
memories; faults cannot be planted here (Mem0 is not ours to break; a test plants them in the
endpoint's replies instead).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from memtrace.errors import ConfigError
from memtrace.settings import LLMSettings, Settings
from memtrace.systems.base import System, op_id
from memtrace.systems.core import Item, Loss
from memtrace.systems.locomo import Question, Turn
from memtrace.tracing import OFF, Var

DEFAULT_EMBEDDING_DIMS = 1536


def endpoint(settings: Settings | None) -> LLMSettings:
    """The configured OpenAI-compatible endpoint; ConfigError when there is none."""
    llm = settings.llm if settings is not None else None
    if llm is None or (not llm.base_url and not llm.api_key):
        raise ConfigError(
            "mem0-lib needs an OpenAI-compatible endpoint: set OPENAI_BASE_URL or OPENAI_API_KEY"
        )
    return llm


def memory_config(settings: Settings | None, folder: Path, collection: str) -> dict[str, Any]:
    """Mem0's config for one conversation: the endpoint from the settings, local storage."""
    llm = endpoint(settings)
    key = llm.api_key.get_secret_value() if llm.api_key else "not-needed"
    connection = {"api_key": key, "openai_base_url": llm.base_url}
    dims = int(os.environ.get("MEMTRACE_EMBEDDING_DIMS", DEFAULT_EMBEDDING_DIMS))
    return {
        "llm": {
            "provider": "openai",
            "config": {"model": llm.model, "temperature": 0, **connection},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": llm.embedding_model,
                "embedding_dims": dims,
                **connection,
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": collection,
                "embedding_model_dims": dims,
                "path": str(folder / "qdrant"),
                "on_disk": False,
            },
        },
        "history_db_path": str(folder / "history.db"),
    }


def import_mem0(home: Path) -> Any:
    """``mem0.Memory`` with telemetry off (the flag is read when mem0 is first imported);
    Mem0's own folder under ``home``."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(home / "mem0"))
    try:
        import mem0
        import mem0.memory.main
        import mem0.memory.telemetry
    except ImportError:
        raise ConfigError(
            "mem0-lib needs the mem0 extra: pip install 'memtrace[mem0]' (mem0ai 2.x) or "
            "'memtrace[mem0-v1]' (1.0.x)"
        ) from None
    # imported earlier with telemetry on: turn it off where it is read
    mem0.memory.telemetry.MEM0_TELEMETRY = False
    mem0.memory.main.MEM0_TELEMETRY = False
    return mem0.Memory


class Mem0LibSystem(System):
    name = "mem0-lib"
    parameters = (*System.parameters, "top_k")  # Mem0's own settings are not ours to move

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # fail before any trace file is opened, not after its first record
        endpoint(self.settings)
        assert self.settings is not None
        self.memory_class = import_mem0(self.settings.home)

    def reset(self) -> None:
        from memtrace.integrations.mem0 import Instrumented, instrument

        self._folder = tempfile.TemporaryDirectory(prefix="memtrace-mem0-")
        folder = Path(self._folder.name)
        self.user = "locomo"
        self.memory = self.memory_class.from_config(
            memory_config(self.settings, folder, "memtrace")
        )
        self.traced: Instrumented[Any] = instrument(self.memory)

    def ingest(self, turn: Turn, date: str, message: Var) -> None:
        self.user = self.run_state.sample_id or "locomo"
        with self.traced.inputs(message):
            self.memory.add(
                [{"role": "user", "content": f"{turn.speaker}: {turn.text}"}],
                user_id=self.user,
                metadata={"dia_id": turn.dia_id, "date": date},
            )

    def retrieve(self, query: Var, question: Question, case_id: str) -> tuple[list[Item], Var, str]:
        with self.traced.query(query):
            found = self.traced.search(question.text, user_id=self.user, top_k=self.params.top_k)
        search = self.traced.last_search
        memories = self.traced.memories  # empty while tracing is off
        items = [
            Item(str(r["id"]), str(r["memory"]), "", frozenset(), memories.get(str(r["id"]), OFF))
            for r in found.get("results", [])
        ]
        if search is None:  # tracing off
            return items, OFF, op_id()
        return items, search.context, search.op_id

    def where_lost(self, key: str, search_op: str) -> Loss | None:
        return None  # Mem0 keeps no provenance of message sentences: attribution finds out
