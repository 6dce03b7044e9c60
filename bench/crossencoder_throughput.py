"""Cross-encoder throughput on this CPU: torch (the engine's wrapper, fp32 and bf16) vs onnxruntime, fp32 and
int8.

Why: the engine scores every retrieved chunk and every cited clause with these models, so pairs/s at the
engine's batch size (32) bounds answer latency; the issue's target is >= 200 pairs/s for ~40-token pairs.
int8 dynamic quantization (onnxruntime) is the usual CPU speed-up, so it is measured, together with how
far its probabilities drift from torch's on the same pairs, rather than assumed.

    python bench/crossencoder_throughput.py [--model entailment|relevance|PATH] [--seconds 8]

The ONNX rows need the ``onnx`` package (export and quantization only; onnxruntime runs the result).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, PreTrainedTokenizerBase

from engine.crossencoders import WEIGHTS_DIR, CrossEncoderPrecision, load_entailment, load_relevance

__all__ = ["main", "make_pairs"]

_SUBJECTS = ("the indexer", "a reviewer", "the daemon", "our team", "each worker", "the scheduler", "a user")
_VERBS = ("rebuilds", "verifies", "rejects", "caches", "rotates", "uploads", "summarises", "deletes")
_OBJECTS = ("the search index", "every citation", "stale chunks", "the API key", "nightly snapshots")
_WHEN = ("every night", "on startup", "twice a day", "on request")
_TAILS = (
    "after each commit to the main branch",
    "when the configuration file changes on disk",
    "before the documentation site is published",
    "unless the operator disables it explicitly",
)


def make_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Seeded docs-like (premise, hypothesis) pairs of about 40 word-piece tokens together."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        premise = (
            f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_TAILS)}, "
            f"and {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}."
        )
        hypothesis = (
            f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_WHEN)}."
        )
        pairs.append((premise[0].upper() + premise[1:], hypothesis[0].upper() + hypothesis[1:]))
    return pairs


def _rate(fn: Callable[[], object], n_pairs: int, seconds: float) -> float:
    """Median pairs/s over repeated full passes, after one warm-up pass."""
    fn()
    rates = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or len(rates) < 3:
        start = time.perf_counter()
        fn()
        rates.append(n_pairs / (time.perf_counter() - start))
    return statistics.median(rates)


def _export_onnx(path: str, out: Path) -> Path:
    """fp32 ONNX with dynamic batch and sequence axes (eager attention traces shape-independently)."""
    model = AutoModelForSequenceClassification.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dummy = tuple(torch.ones(2, 16, dtype=torch.long) for _ in names)
    target = out / "model.onnx"
    torch.onnx.export(
        model,
        dummy,
        str(target),
        input_names=names,
        output_names=["logits"],
        dynamo=False,
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "logits"]},
        opset_version=17,
    )
    return target


def _ort_runner(
    onnx_path: Path,
    tok: PreTrainedTokenizerBase,
    pairs: Sequence[tuple[str, str]],
    batch: int,
    max_length: int,
) -> Callable[[], np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}

    def forward(enc: Any) -> np.ndarray:
        return np.asarray(
            session.run(None, {k: v.astype(np.int64) for k, v in enc.items() if k in wanted})[0]
        )

    return lambda: _batched_logits(tok, pairs, batch, max_length, "np", forward)


def _batched_logits(
    tok: PreTrainedTokenizerBase,
    pairs: Sequence[tuple[str, str]],
    batch: int,
    max_length: int,
    tensors: str,
    forward: Callable[[Any], np.ndarray],
) -> np.ndarray:
    """`forward`'s logits over `pairs`, tokenized `batch` pairs at a time as `tensors` ("np" or "pt")."""
    outs = []
    for s in range(0, len(pairs), batch):
        chunk = pairs[s : s + batch]
        enc = tok(
            [a for a, _ in chunk],
            [b for _, b in chunk],
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors=tensors,
        )
        outs.append(forward(enc))
    return np.concatenate(outs)


def _probs(logits: np.ndarray) -> np.ndarray:
    if logits.shape[1] == 1:
        return 1 / (1 + np.exp(-logits[:, 0]))
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _wrapper_rate(
    path: str,
    labels: int,
    precision: CrossEncoderPrecision,
    pairs: Sequence[tuple[str, str]],
    batch_size: int,
    seconds: float,
) -> float:
    """Pairs/s through the engine's own loader and wrapper, computing in `precision`."""
    if labels == 3:
        nli = load_entailment(path, batch_size=batch_size, device="cpu", precision=precision)
        return _rate(lambda: nli.predict(pairs), len(pairs), seconds)
    rel = load_relevance(path, batch_size=batch_size, device="cpu", precision=precision)
    passages = [b for _, b in pairs]
    return _rate(lambda: rel.score(pairs[0][0], passages), len(pairs), seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="entailment", help="entailment, relevance (shipped) or a model path")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--pairs", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=8.0, help="timing budget per backend")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    path = str(WEIGHTS_DIR / args.model) if args.model in ("entailment", "relevance") else args.model
    tok = AutoTokenizer.from_pretrained(path)
    pairs = make_pairs(args.pairs)
    max_length = min(int(tok.model_max_length), 512)
    tokens = np.mean([len(x) for x in tok([a for a, _ in pairs], [b for _, b in pairs])["input_ids"]])
    print(
        f"model {path}\n{len(pairs)} pairs, mean {tokens:.1f} tokens, batch {args.batch_size}, "
        f"{args.threads} threads, torch {torch.__version__}"
    )

    rows: list[tuple[str, float, str]] = []
    hf = AutoModelForSequenceClassification.from_pretrained(path, dtype=torch.float32).eval()
    for label, precision in (
        ("fp32", CrossEncoderPrecision.FLOAT32),
        ("bf16", CrossEncoderPrecision.BFLOAT16),
    ):
        rate = _wrapper_rate(path, hf.config.num_labels, precision, pairs, args.batch_size, args.seconds)
        rows.append((f"torch {label} (engine wrapper)", rate, ""))

    @torch.inference_mode()
    def torch_logits() -> np.ndarray:
        return _batched_logits(
            tok, pairs, args.batch_size, max_length, "pt", lambda enc: hf(**enc).logits.numpy()
        )

    reference = _probs(torch_logits())
    rows.append(("torch fp32 (plain forward)", _rate(torch_logits, len(pairs), args.seconds), ""))
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnxruntime.quantization imports the optional onnx package
        print(f"ONNX rows skipped: {exc}")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            fp32 = _export_onnx(path, Path(tmp))
            int8 = Path(tmp) / "model_int8.onnx"
            quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
            for label, file in (("onnxruntime fp32", fp32), ("onnxruntime int8 (dynamic)", int8)):
                run = _ort_runner(file, tok, pairs, args.batch_size, max_length)
                drift = np.abs(_probs(run()) - reference).max()
                size = f"{file.stat().st_size / 2**20:.0f} MiB, max abs prob diff vs torch {drift:.4f}"
                rows.append((label, _rate(run, len(pairs), args.seconds), size))

    base = rows[0][1]
    print("\n| backend | pairs/s | vs wrapper | notes |\n|---|---:|---:|---|")
    for label, rate, note in rows:
        print(f"| {label} | {rate:.0f} | {rate / base:.2f}x | {note} |")


if __name__ == "__main__":
    main()
