"""Entailment (NLI) and relevance cross-encoders behind the engine's Protocols.

citeline ships its own two small models in ``engine/weights/`` (trained by ``training/``; see their model
cards) because no pretrained cross-encoder can be fetched on the machines it targets. Both loaders also take
any sentence-transformers ``CrossEncoder`` by Hugging Face name or local path, for users with a network:
NLI models disagree on the order of their three classes, so the order is read from the model's
``config.id2label`` instead of being assumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from engine.precision import CrossEncoderPrecision
from indexer.batching import token_batches
from indexer.embedder import has_native_bf16

__all__ = [
    "WEIGHTS_DIR",
    "CrossEncoderPrecision",
    "EntailmentModel",
    "EntailmentScores",
    "PairScorer",
    "RelevanceModel",
    "load_answer_check",
    "load_entailment",
    "load_question_match",
    "load_relevance",
    "nli_label_order",
]

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
"""Shipped models: ``entailment/`` (3 classes), ``relevance/``, ``answer_check/`` and ``question_match/``
(1 score each)."""

_NLI_PREFIXES = ("entail", "neutral", "contradict")


@dataclass(frozen=True, slots=True)
class EntailmentScores:
    """Class probabilities for one (premise, hypothesis) pair; they sum to 1."""

    entailment: float
    neutral: float
    contradiction: float


class EntailmentModel(Protocol):
    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[EntailmentScores]: ...


class RelevanceModel(Protocol):
    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


@runtime_checkable
class PairScorer(Protocol):
    """A relevance model that also scores pairs with a query each, in one batch (the shipped ones do)."""

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


def nli_label_order(id2label: dict[int, str] | dict[str, str]) -> tuple[int, int, int]:
    """Logit columns of (entailment, neutral, contradiction), from a config's ``id2label``.

    Names are matched case-insensitively by prefix (``ENTAILMENT``, ``entailed``, ``Contradiction``...).
    A model whose labels are unnamed (``LABEL_0``...) is refused: guessing would silently swap classes.
    """
    found: dict[str, int] = {}
    for key, name in id2label.items():
        low = str(name).strip().lower()
        for prefix in _NLI_PREFIXES:
            if low.startswith(prefix):
                if prefix in found:
                    raise ValueError(f"two labels look like {prefix!r}: {id2label}")
                found[prefix] = int(key)
    if len(id2label) != 3 or len(found) != 3:
        raise ValueError(f"not a 3-way NLI model (need entailment/neutral/contradiction labels): {id2label}")
    return found["entail"], found["neutral"], found["contradict"]


def _load_cross_encoder(
    name_or_path: str | None,
    kind: str,
    batch_size: int,
    device: str | None,
    precision: CrossEncoderPrecision,
) -> Any:
    """A sentence-transformers CrossEncoder; the shipped one offline; on a CPU in `precision`."""
    import torch
    from sentence_transformers import CrossEncoder

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    shipped = name_or_path is None
    path = str(WEIGHTS_DIR / kind) if name_or_path is None else name_or_path
    if shipped and not (WEIGHTS_DIR / kind / "config.json").is_file():
        raise FileNotFoundError(f"shipped {kind} model missing at {path}; see training/README.md")
    # fp16 weights are stored for size; CPUs compute fp16 slowly (or not at all), so cast there: to bfloat16
    # where the CPU has it in hardware (scores move by thousandths, three times the pairs per second).
    if precision is CrossEncoderPrecision.AUTO:
        precision = CrossEncoderPrecision.BFLOAT16 if has_native_bf16() else CrossEncoderPrecision.FLOAT32
    dtype = torch.bfloat16 if precision is CrossEncoderPrecision.BFLOAT16 else torch.float32
    kwargs = {"dtype": dtype} if device.startswith("cpu") else None
    return CrossEncoder(path, device=device, local_files_only=shipped, model_kwargs=kwargs)


def _predict_by_length(encoder: Any, pairs: list[tuple[str, str]], batch_size: int, **kwargs: Any) -> Any:
    """`encoder.predict` over `pairs` in batches of similar length (`token_batches` on characters), the
    outputs in the order of `pairs`: one code block among short sentences pads only its own batch."""
    lengths = [len(first) + len(second) for first, second in pairs]
    out: list[Any] = [None] * len(pairs)
    for batch in token_batches(lengths, batch_size * _CHARS_PER_ROW):
        outputs = encoder.predict(
            [pairs[i] for i in batch], batch_size=batch_size, show_progress_bar=False, **kwargs
        )
        for i, value in zip(batch, np.asarray(outputs), strict=True):
            out[i] = value
    return np.stack(out)


_CHARS_PER_ROW = 256
"""A batch holds at most `batch_size` rows of this many characters, padded (fewer, longer rows)."""


class _Entailment:
    """3-way NLI cross-encoder returning probabilities in citeline's class order."""

    def __init__(self, encoder: Any, batch_size: int) -> None:
        self._encoder = encoder
        self._batch_size = batch_size
        self._order = list(nli_label_order(encoder.config.id2label))

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[EntailmentScores]:
        if not pairs:
            return []
        import torch

        logits = _predict_by_length(
            self._encoder,
            [(p, h) for p, h in pairs],
            self._batch_size,
            activation_fn=torch.nn.Identity(),
            convert_to_numpy=True,
        )
        logits = np.asarray(logits, dtype=np.float64).reshape(len(pairs), -1)[:, self._order]
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return [EntailmentScores(float(e), float(n), float(c)) for e, n, c in probs]


class _Relevance:
    """Query/passage cross-encoder; the score is the model's own activation (sigmoid for 1-score models)."""

    def __init__(self, encoder: Any, batch_size: int) -> None:
        labels = int(encoder.num_labels)
        if labels not in (1, 2):
            raise ValueError(f"a relevance model has 1 score (or 2 classes, 2nd = relevant), not {labels}")
        self._encoder = encoder
        self._batch_size = batch_size
        self._two_class = labels == 2

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return self.score_pairs([(query, p) for p in passages])

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        out = _predict_by_length(
            self._encoder,
            list(pairs),
            self._batch_size,
            apply_softmax=self._two_class,
            convert_to_numpy=True,
        )
        scores = np.asarray(out, dtype=np.float64)
        if self._two_class:
            scores = scores.reshape(len(pairs), 2)[:, 1]
        return [float(s) for s in scores.reshape(len(pairs))]


def load_entailment(
    name_or_path: str | None = None,
    *,
    batch_size: int = 32,
    device: str | None = None,
    precision: CrossEncoderPrecision = CrossEncoderPrecision.AUTO,
) -> EntailmentModel:
    """Shipped entailment model (offline) when ``name_or_path`` is None, else any 3-way NLI CrossEncoder."""
    encoder = _load_cross_encoder(name_or_path, "entailment", batch_size, device, precision)
    return _Entailment(encoder, batch_size)


def load_relevance(
    name_or_path: str | None = None,
    *,
    batch_size: int = 32,
    device: str | None = None,
    precision: CrossEncoderPrecision = CrossEncoderPrecision.AUTO,
    shipped: str = "relevance",
) -> RelevanceModel:
    """Shipped relevance model (offline) when ``name_or_path`` is None, else any reranking CrossEncoder;
    `shipped` names the folder of ``WEIGHTS_DIR`` a shipped one comes from."""
    encoder = _load_cross_encoder(name_or_path, shipped, batch_size, device, precision)
    return _Relevance(encoder, batch_size)


def load_answer_check(name_or_path: str | None = None, **options: Any) -> RelevanceModel:
    """Shipped answer check (offline) when ``name_or_path`` is None, else any reranking CrossEncoder;
    `options` as `load_relevance` takes them.

    The answer check is a second relevance model, trained on docs only to refuse near misses (a passage on
    another page, or another section of the same page, that shares the question's words but does not answer
    it); the verifier asks it about a clause's sources once the relevance model has let them through
    (`VerifyConfig.min_answer_check`)."""
    return load_relevance(name_or_path, shipped="answer_check", **options)


def load_question_match(name_or_path: str | None = None, **options: Any) -> RelevanceModel:
    """Shipped question matcher (offline) when ``name_or_path`` is None, else any CrossEncoder; `options` as
    `load_relevance` takes them. Its score of (new question, earlier question) is how surely the two ask the
    same thing, read by the team's memory (`engine.memory`, `training.question_pairs`)."""
    return load_relevance(name_or_path, shipped="question_match", **options)
