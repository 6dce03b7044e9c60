"""Embedding models: the int8 ONNX, bfloat16 and float32 torch runtimes load offline and agree; `auto` picks
bfloat16 only where the CPU computes it natively; any sentence-transformers folder loads by path;
length-sorted batches keep each vector with its text.

The by-path test builds a tiny BERT (a dozen-word vocabulary, one layer, 16 dimensions) with random weights
and saves it as a sentence-transformers model in a temp dir: what matters is that citeline loads a model it
has never seen from a folder, records its name and dimension, and returns unit vectors.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from indexer.embedder import (
    DEFAULT_MODEL_NAME,
    DOCS_MODEL_NAME,
    DOCS_ONNX_NAME,
    EmbedderRuntime,
    EmbeddingModel,
    TokenAware,
    has_native_bf16,
    load_embedding_model,
    token_batches,
)
from indexer.onnx_embedder import ONNX_INT8_MODEL_NAME, load_onnx_int8

_FIXED = [
    "How do I build the compiler?",
    "Building rustc from source takes a while on a laptop.",
    "Bananas are yellow.",
    "The staging cluster restarts at midnight on Sundays.",
    "x",
    "Run `./x.py test tests/ui --bless` to update the expected output of every UI test that changed, then"
    " commit the new .stderr files together with the change that caused them.",
    "Stage 0 downloads a beta compiler; stage 1 is built with it, and stage 2 with stage 1.",
    "Définitions: « élément » désigne un nœud.",
]

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
    model = load_embedding_model(str(folder), EmbedderRuntime.TORCH, device="cpu")
    assert isinstance(model, EmbeddingModel)
    assert model.name == str(folder.resolve())
    assert model.dimension == 16
    vectors = model.encode(["the compiler builds stage a", "tests run", "docs"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model.encode([]).shape == (0, 16)


def test_the_bundled_default_loads_offline_on_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    model = load_embedding_model("all-MiniLM-L6-v2", EmbedderRuntime.TORCH, device="cpu")
    assert model.name == DEFAULT_MODEL_NAME and model.dimension == 384
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    texts = ["How do I build the compiler?", "Building rustc from source", "Bananas are yellow"]
    a, b, c = model.encode(texts)
    assert float(a @ b) > float(a @ c)


def test_the_int8_default_loads_offline_and_returns_unit_vectors_close_to_torch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    int8 = load_embedding_model("all-MiniLM-L6-v2", EmbedderRuntime.ONNX_INT8)
    assert int8.name == ONNX_INT8_MODEL_NAME and int8.dimension == 384
    torch = load_embedding_model("all-MiniLM-L6-v2", EmbedderRuntime.TORCH, device="cpu")
    a, b = int8.encode(_FIXED), torch.encode(_FIXED)
    assert a.shape == (len(_FIXED), 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(a * b, axis=1)
    assert cosines.min() >= 0.99, cosines
    assert int8.encode([]).shape == (0, 384)


def test_the_docs_embedder_loads_offline_by_name_on_int8_and_torch_and_they_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    torch = load_embedding_model("citeline-docs", EmbedderRuntime.TORCH, device="cpu")
    assert torch.name == DOCS_MODEL_NAME and torch.dimension == 384
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    int8 = load_embedding_model(DOCS_MODEL_NAME, EmbedderRuntime.ONNX_INT8)
    assert int8.name == DOCS_ONNX_NAME
    cosines = np.sum(int8.encode(_FIXED) * torch.encode(_FIXED), axis=1)
    assert cosines.min() >= 0.99, cosines


def test_the_docs_embedder_is_a_model_of_its_own_recorded_under_its_own_name() -> None:
    """Switching to it must re-embed: were it recorded as the default, an index would mix two models."""
    docs = load_embedding_model("citeline-docs", EmbedderRuntime.TORCH, device="cpu")
    default = load_embedding_model("all-MiniLM-L6-v2", EmbedderRuntime.TORCH, device="cpu")
    assert default.name == DEFAULT_MODEL_NAME != docs.name
    cosines = np.sum(docs.encode(_FIXED) * default.encode(_FIXED), axis=1)
    assert cosines.min() < 0.999, cosines


def test_length_sorted_batches_keep_each_vector_with_its_sentence() -> None:
    model = load_embedding_model("", EmbedderRuntime.ONNX_INT8, batch_tokens=64)  # several narrow batches
    texts = [*_FIXED, *reversed(_FIXED[:-1])]
    together = model.encode(texts)
    alone = np.concatenate([model.encode([t]) for t in texts])
    cosines = together @ alone.T
    for row, text in enumerate(texts):
        assert cosines[row, row] >= 0.99, text
        assert texts[int(np.argmax(cosines[row]))] == text


def test_the_batch_budget_changes_the_speed_never_the_vectors() -> None:
    """So the default budget can change without re-embedding anything: the recorded name stays the same."""
    narrow = load_embedding_model("", EmbedderRuntime.ONNX_INT8, batch_tokens=64)
    wide = load_embedding_model("", EmbedderRuntime.ONNX_INT8, batch_tokens=8192)
    assert narrow.name == wide.name
    cosines = np.sum(narrow.encode(_FIXED) * wide.encode(_FIXED), axis=1)
    assert cosines.min() >= 0.9999, cosines


def test_an_unknown_graph_optimization_level_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'fastest': not one of disable, basic, extended, all"):
        load_onnx_int8(optimization="fastest")


def test_token_batches_sort_by_length_and_stay_within_the_budget() -> None:
    lengths = [5, 40, 12, 3, 40, 300, 7, 12]
    batches = token_batches(lengths, 64)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)
    for batch in batches:
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 64


def test_every_runtime_counts_and_clips_tokens_alike() -> None:
    int8 = load_embedding_model("", EmbedderRuntime.ONNX_INT8)
    torch = load_embedding_model("", EmbedderRuntime.TORCH, device="cpu")
    bf16 = load_embedding_model("", EmbedderRuntime.TORCH_BF16, device="cpu")
    assert isinstance(int8, TokenAware) and isinstance(torch, TokenAware) and isinstance(bf16, TokenAware)
    assert int8.token_counts(_FIXED) == torch.token_counts(_FIXED) == bf16.token_counts(_FIXED)
    text = "Stage 0 downloads a beta compiler; stage 1 is built with it."
    assert int8.clip(text, 4) == torch.clip(text, 4) == bf16.clip(text, 4) == "Stage 0 downloads a"
    assert int8.clip(text, 100) == torch.clip(text, 100) == text
    long = " ".join(_FIXED * 40)  # past the model's input length: clipping must not stop there
    assert torch.clip(long, 300) == int8.clip(long, 300) != long


def test_the_bf16_runtime_returns_unit_vectors_close_to_float32() -> None:
    torch = load_embedding_model("all-MiniLM-L6-v2", EmbedderRuntime.TORCH, device="cpu")
    bf16 = load_embedding_model("all-MiniLM-L6-v2", EmbedderRuntime.TORCH_BF16, device="cpu")
    assert bf16.name == f"{DEFAULT_MODEL_NAME} (torch-bf16)" and bf16.dimension == 384
    a, b = bf16.encode(_FIXED), torch.encode(_FIXED)
    assert a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(a * b, axis=1)
    assert cosines.min() >= 0.999, cosines


def test_native_bf16_is_read_from_the_cpu_flags(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f amx_tile amx_bf16 amx_int8\n")
    assert has_native_bf16(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n")
    assert has_native_bf16(cpuinfo)
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n")
    assert not has_native_bf16(cpuinfo)
    assert not has_native_bf16(tmp_path / "missing")


@pytest.mark.parametrize(
    ("native", "spec", "expected"),
    [
        (False, "citeline-docs", DOCS_ONNX_NAME),
        (True, "citeline-docs", f"{DOCS_MODEL_NAME} (torch-bf16)"),
        (True, "", f"{DOCS_MODEL_NAME} (torch-bf16)"),
        (False, "", DOCS_ONNX_NAME),
        (True, "all-MiniLM-L6-v2", f"{DEFAULT_MODEL_NAME} (torch-bf16)"),
        (False, "all-MiniLM-L6-v2", ONNX_INT8_MODEL_NAME),
        (True, "tiny", " (torch-bf16)"),
        (False, "tiny", ""),
    ],
)
def test_auto_runs_bf16_only_where_the_cpu_computes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, native: bool, spec: str, expected: str
) -> None:
    monkeypatch.setattr("indexer.embedder.has_native_bf16", lambda: native)
    folder = str(_build_tiny_model(tmp_path).resolve()) if spec == "tiny" else ""
    model = load_embedding_model(folder or spec, EmbedderRuntime.AUTO, device="cpu")
    assert model.name == folder + expected


def test_the_int8_runtime_refuses_a_named_model() -> None:
    with pytest.raises(ValueError, match="onnx-int8"):
        load_embedding_model("sentence-transformers/all-mpnet-base-v2", EmbedderRuntime.ONNX_INT8)
