"""Embedding models: the bundled default loads offline; any sentence-transformers folder loads by path.

The by-path test builds a tiny BERT (a dozen-word vocabulary, one layer, 16 dimensions) with random weights
and saves it as a sentence-transformers model in a temp dir: what matters is that citeline loads a model it
has never seen from a folder, records its name and dimension, and returns unit vectors.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from indexer.embedder import DEFAULT_MODEL_NAME, EmbeddingModel, load_embedding_model

_WORDS = ["the", "compiler", "builds", "stage", "tests", "run", "docs", "a", "is", "."]


def _build_tiny_model(target: Path) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(0)
    raw = target / "raw"
    raw.mkdir()
    vocab = raw / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_WORDS]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(raw)
    config = BertConfig(
        vocab_size=len(_WORDS) + 5,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(raw)
    transformer = Transformer(str(raw), max_seq_length=32)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    out = target / "tiny-st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(out))
    return out


def test_a_model_built_here_loads_by_path(tmp_path: Path) -> None:
    folder = _build_tiny_model(tmp_path)
    model = load_embedding_model(str(folder), device="cpu")
    assert isinstance(model, EmbeddingModel)
    assert model.name == str(folder.resolve())
    assert model.dimension == 16
    vectors = model.encode(["the compiler builds stage a", "tests run", "docs"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model.encode([]).shape == (0, 16)


def test_the_bundled_default_loads_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    model = load_embedding_model("", device="cpu")
    assert model.name == DEFAULT_MODEL_NAME and model.dimension == 384
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    texts = ["How do I build the compiler?", "Building rustc from source", "Bananas are yellow"]
    a, b, c = model.encode(texts)
    assert float(a @ b) > float(a @ c)
