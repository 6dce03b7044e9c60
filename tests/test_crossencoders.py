"""Tests for engine.crossencoders: label mapping on tiny saved models, and behaviour of the shipped weights.

The tiny models are random BERTs built here and saved to a temp dir, so the by-path loading code (the one a
user's Hugging Face model goes through) is exercised without a network. Expected values are recomputed from
the saved model directly, never hard-coded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

from engine.crossencoders import (
    WEIGHTS_DIR,
    CrossEncoderPrecision,
    EntailmentModel,
    EntailmentScores,
    RelevanceModel,
    load_answer_check,
    load_entailment,
    load_relevance,
    nli_label_order,
)

WORDS = [
    *("a", "an", "the", "man", "woman", "dog", "cat", "is", "are", "sleeping", "running", "eating"),
    *("on", "in", "park", "street", "guitar", "red", "blue"),
]
_EXACT = CrossEncoderPrecision.FLOAT32
"""The by-path tests compare with a float32 forward pass of the saved model, to four decimals."""

PAIRS = [
    ("a man is sleeping", "a woman is running"),
    ("the dog is eating in the park", "a cat"),
    ("a red guitar", "the blue guitar is on the street in the park"),
]


def _save_tiny(path: Path, id2label: dict[int, str]) -> Path:
    """A 1-layer random BERT classifier with a word-level vocabulary, saved like any HF model."""
    torch.manual_seed(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    model = BertForSequenceClassification(cfg).eval()
    # random init gives near-zero logits; spread the head so a wrong column mapping cannot pass by luck
    with torch.no_grad():
        model.classifier.weight.mul_(50)
    model.save_pretrained(path)
    BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(path)
    return path


def _direct_logits(path: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    tok = BertTokenizer.from_pretrained(path)
    model = BertForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        enc = tok([p for p, _ in pairs], [h for _, h in pairs], padding=True, return_tensors="pt")
        return model(**enc).logits.double().numpy()


def test_nli_label_order_reads_names_in_any_order_and_case() -> None:
    assert nli_label_order({0: "CONTRADICTION", 1: "entailment", 2: "Neutral"}) == (1, 2, 0)
    assert nli_label_order({"0": "entailed", "1": "neutral", "2": "contradictory"}) == (0, 1, 2)


@pytest.mark.parametrize(
    "id2label",
    [
        {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"},
        {0: "entailment", 1: "not_entailment"},
        {0: "entailment", 1: "entailment", 2: "neutral"},
    ],
)
def test_nli_label_order_refuses_unnamed_or_non_3_way(id2label: dict[int, str]) -> None:
    with pytest.raises(ValueError, match=r"NLI|look like"):
        nli_label_order(id2label)


def test_entailment_by_path_maps_shuffled_labels(tmp_path: Path) -> None:
    path = _save_tiny(tmp_path / "nli", {0: "neutral", 1: "CONTRADICTION", 2: "Entailment"})
    model = load_entailment(str(path), batch_size=2, device="cpu", precision=_EXACT)
    got = model.predict(PAIRS)
    logits = _direct_logits(path, PAIRS)
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    assert len(got) == len(PAIRS)
    for scores, row in zip(got, probs, strict=True):
        assert isinstance(scores, EntailmentScores)
        np.testing.assert_allclose(
            [scores.entailment, scores.neutral, scores.contradiction], row[[2, 0, 1]], atol=1e-4
        )
        assert scores.entailment + scores.neutral + scores.contradiction == pytest.approx(1.0)
    assert model.predict([]) == []


def test_entailment_refuses_single_score_model(tmp_path: Path) -> None:
    path = _save_tiny(tmp_path / "one", {0: "LABEL_0"})
    with pytest.raises(ValueError, match="3-way"):
        load_entailment(str(path), device="cpu")


def test_relevance_by_path_keeps_passage_order(tmp_path: Path) -> None:
    path = _save_tiny(tmp_path / "rel", {0: "LABEL_0"})
    model = load_relevance(str(path), batch_size=2, device="cpu", precision=_EXACT)
    query = "a man in the park"
    passages = ["the dog", "a woman is running in the park on the street", "cat", "a red guitar is blue"]
    got = model.score(query, passages)
    expected = 1 / (1 + np.exp(-_direct_logits(path, [(query, p) for p in passages])[:, 0]))
    assert len(got) == len(passages)
    assert all(isinstance(s, float) for s in got)
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert model.score(query, []) == []


def test_bad_batch_size_is_refused(tmp_path: Path) -> None:
    path = _save_tiny(tmp_path / "rel", {0: "LABEL_0"})
    with pytest.raises(ValueError, match="batch_size"):
        load_relevance(str(path), batch_size=0, device="cpu")


# --- shipped weights -------------------------------------------------------------------------------------

_KINDS = ("entailment", "relevance", "answer_check")
_SHIPPED = all((WEIGHTS_DIR / kind / "README.md").is_file() for kind in _KINDS)
shipped = pytest.mark.skipif(not _SHIPPED, reason="engine/weights/ not trained and committed yet (issue 4)")


@pytest.fixture(scope="module")
def shipped_nli() -> EntailmentModel:
    return load_entailment(device="cpu")


@pytest.fixture(scope="module")
def shipped_rel() -> RelevanceModel:
    return load_relevance(device="cpu")


@shipped
def test_shipped_weights_are_small_and_offline_loadable() -> None:
    for kind in _KINDS:
        files = list((WEIGHTS_DIR / kind).iterdir())
        assert (WEIGHTS_DIR / kind / "README.md").is_file()
        assert sum(f.stat().st_size for f in files) < 60 * 2**20


@shipped
def test_shipped_entailment_recognises_entailment(shipped_nli: EntailmentModel) -> None:
    got = shipped_nli.predict(
        [
            ("A man is playing a guitar on stage.", "A man is playing an instrument."),
            ("The API key is rotated every 30 days by the scheduler.", "The API key is rotated."),
        ]
    )
    for s in got:
        assert s.entailment > max(s.neutral, s.contradiction)
        assert s.entailment + s.neutral + s.contradiction == pytest.approx(1.0)


@shipped
def test_shipped_entailment_detects_contradiction(shipped_nli: EntailmentModel) -> None:
    got = shipped_nli.predict(
        [
            ("A woman is sleeping in her bed.", "A woman is running a marathon."),
            ("The server listens on port 8080.", "The server does not listen on any port."),
        ]
    )
    for s in got:
        assert s.contradiction > max(s.entailment, s.neutral)


@shipped
def test_shipped_entailment_calls_unsupported_claims_not_entailed(shipped_nli: EntailmentModel) -> None:
    (s,) = shipped_nli.predict([("A child is reading a book in a library.", "The child is reading a novel.")])
    assert s.entailment < 0.5


@shipped
def test_shipped_relevance_ranks_the_answering_passage_first(shipped_rel: RelevanceModel) -> None:
    cases = {
        "What is the capital of France?": [
            "Paris is the capital and most populous city of France.",
            "The mitochondrion is the powerhouse of the cell.",
            "France borders Spain, Italy, Germany and Belgium.",
        ],
        "How do I rotate the API key?": [
            "To rotate the API key, run `citeline keys rotate` and restart the daemon.",
            "The daemon writes its logs to /var/log/citeline.",
            "API stands for application programming interface.",
        ],
    }
    for query, passages in cases.items():
        scores = shipped_rel.score(query, passages)
        assert int(np.argmax(scores)) == 0, (query, scores)


@shipped
def test_shipped_answer_check_rates_the_answer_above_a_near_miss_from_another_page() -> None:
    check = load_answer_check(device="cpu")
    question = "How do I reload the gateway configuration?"
    answer = "Configuration > Reloading: Send SIGHUP to the gateway process to reload its configuration."
    near_miss = "Logging > Log files: The gateway writes its logs to /var/log/gateway."
    rated_answer, rated_miss = check.score(question, [answer, near_miss])
    assert rated_answer > 0.5 > rated_miss, (rated_answer, rated_miss)


@shipped
@pytest.mark.parametrize("loader", [load_entailment, load_relevance, load_answer_check])
def test_auto_precision_computes_in_bfloat16_only_where_the_cpu_has_it(
    monkeypatch: pytest.MonkeyPatch, loader: Any
) -> None:
    for native, dtype in ((True, torch.bfloat16), (False, torch.float32)):
        monkeypatch.setattr("engine.crossencoders.has_native_bf16", lambda native=native: native)
        model = loader(device="cpu", precision=CrossEncoderPrecision.AUTO)
        assert next(model._encoder.model.parameters()).dtype == dtype


@shipped
def test_bfloat16_scores_stay_within_hundredths_of_float32() -> None:
    pairs = [
        ("A man is playing a guitar on stage.", "A man is playing an instrument."),
        ("The server listens on port 8080.", "The server does not listen on any port."),
        ("A child is reading a book in a library.", "The child is reading a novel."),
    ]
    full = load_entailment(device="cpu", precision=CrossEncoderPrecision.FLOAT32).predict(pairs)
    half = load_entailment(device="cpu", precision=CrossEncoderPrecision.BFLOAT16).predict(pairs)
    for a, b in zip(full, half, strict=True):
        assert abs(a.entailment - b.entailment) < 0.02 and abs(a.contradiction - b.contradiction) < 0.02
    query = "How do I rotate the API key?"
    passages = [p for _, p in pairs] + ["To rotate the API key, run `citeline keys rotate`."]
    rel_full = load_relevance(device="cpu", precision=CrossEncoderPrecision.FLOAT32).score(query, passages)
    rel_half = load_relevance(device="cpu", precision=CrossEncoderPrecision.BFLOAT16).score(query, passages)
    assert np.allclose(rel_full, rel_half, atol=0.02)
    assert int(np.argmax(rel_half)) == int(np.argmax(rel_full)) == len(passages) - 1
