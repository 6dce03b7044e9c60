"""Embedding throughput: the raw encoder against the end-to-end drain, for each runtime (float32 torch, int8
ONNX, bfloat16 torch), in one run.

    python bench/daemon_embed.py [--sentences 20000] [--workers 1] [--runtimes torch,onnx-int8,torch-bf16]
        [--rustc /work/shared/data/rustc_dev_guide]

1. N synthetic sentences (varied lengths, headings, some dependent sentences) are indexed into an embedded
   PostgreSQL. For each runtime, in the same run: (a) the raw encoder on the exact contextual texts the queue
   embeds, in claim-sized chunks, and (b) `citeline embed --drain`'s code path (claim, context query, encode,
   halfvec write, backlog delete) from a full backlog to empty; the drain's share of the raw rate is printed.
   The model change between the runtimes empties the vectors and re-enqueues everything.
2. Query embedding latency (one short query a call), p50 / p95, per runtime.
3. With `--rustc DIR` (the rustc_dev_guide data folder): the guide's tip, cloned from its bundle, from an
   empty database to backlog 0 with the default embedder (`auto`): index, then drain; wall time and
   sentences/s. `--sentences 0` runs this part alone.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from daemon.embedding import drain_backlog
from daemon.reconnect import Reconnector
from indexer.database import Database, open_database
from indexer.embedder import EmbedderRuntime, EmbeddingModel, TokenAware, load_embedding_model
from indexer.embedding_queue import QueueOptions, contextual_text, pending_items
from indexer.reconcile import Repository, reconcile_repository

_WORDS = [
    "stage",
    "compiler",
    "build",
    "test",
    "flag",
    "config",
    "cache",
    "target",
    "crate",
    "query",
    "borrow",
    "checker",
    "lint",
    "macro",
    "trait",
    "module",
    "path",
    "toolchain",
    "bootstrap",
    "sysroot",
    "rustdoc",
    "error",
    "message",
    "span",
    "diagnostic",
    "suggestion",
]


def _corpus(root: Path, sentences: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    per_file = 40
    for f in range(max(1, sentences // per_file)):
        lines = [f"# Guide {f}", "", f"## Building part {f} of the {rng.choice(_WORDS)} chapter", ""]
        body = []
        for s in range(per_file - 2):
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.choice((4, 8, 12, 20, 35))))
            opening = rng.choice(("This", "It", "The", "A", "Each", "Every")) if s else "The"
            body.append(f"{opening} {words} number {f * per_file + s}.")
        lines.append(" ".join(body))
        (root / f"doc{f}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def synthetic_index(tmp: Path, sentences: int) -> Database:
    """`sentences` synthetic sentences written under `tmp/docs` and indexed (not embedded) into an embedded
    PostgreSQL under `tmp/data`, as repository "docs"."""
    root = tmp / "docs"
    root.mkdir()
    _corpus(root, sentences)
    database = open_database(None, tmp / "data")
    with database.connect() as conn:
        reconcile_repository(conn, Repository("docs", root))
    return database


def embedded_texts(database: Database, model: EmbeddingModel, options: QueueOptions) -> list[str]:
    """The contextual texts the queue embeds for every sentence of `database`, in sentence id order."""
    clip = model.clip if isinstance(model, TokenAware) else (lambda t, n: t[: n * 4])
    with database.connect() as conn:
        rows = conn.execute(
            "SELECT s.text, s.heading_path, d.title, p.text FROM sentences s JOIN documents d"
            " ON d.id = s.document_id LEFT JOIN sentences p ON p.document_id = s.document_id"
            " AND p.ordinal = s.ordinal - 1 ORDER BY s.id"
        ).fetchall()
    return [contextual_text(r[0], r[1], r[2], r[3], options.context, clip) for r in rows]


def _drain(
    database: Database, model: EmbeddingModel, options: QueueOptions, workers: int
) -> tuple[int, float]:
    started = time.perf_counter()
    report = drain_backlog(Reconnector(database, threading.Event()), model, options, workers)
    return report.embedded, time.perf_counter() - started


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=QueueOptions().batch_size)
    parser.add_argument("--runtimes", default="torch,onnx-int8,torch-bf16")
    parser.add_argument("--rustc", type=Path, default=None, help="the rustc_dev_guide folder (its bundle)")
    args = parser.parse_args()
    options = QueueOptions(batch_size=args.batch_size)
    if args.sentences == 0:  # the rustc guide alone
        if args.rustc is not None:
            _rustc(args.rustc, options, args.workers)
        return
    models = {name: load_embedding_model("", EmbedderRuntime(name)) for name in args.runtimes.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        database = synthetic_index(Path(tmp), args.sentences)
        print(f"synthetic corpus; workers {args.workers}, claim {options.batch_size} rows")
        print(f"{'runtime':<11}{'sentences':>10}{'raw /s':>9}{'drain /s':>10}{'drain/raw':>11}")
        for name, model in models.items():
            texts = embedded_texts(database, model, options)
            model.encode(texts[:64])  # warm up
            started = time.perf_counter()
            for start in range(0, len(texts), options.batch_size):
                model.encode(texts[start : start + options.batch_size])
            raw = len(texts) / (time.perf_counter() - started)
            embedded, seconds = _drain(database, model, options, args.workers)
            print(
                f"{name:<11}{embedded:>10}{raw:>9.0f}{embedded / seconds:>10.0f}"
                f"{100 * embedded / seconds / raw:>10.0f}%",
                flush=True,
            )
        queries = [f"how do I {' '.join(random.Random(i).sample(_WORDS, 5))}" for i in range(300)]
        for name, model in models.items():
            latencies = []
            for query in queries:
                started = time.perf_counter()
                model.encode([query])
                latencies.append(1000 * (time.perf_counter() - started))
            p50, p95 = _pct(latencies, 0.5), _pct(latencies, 0.95)
            print(f"query embedding {name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    if args.rustc is not None:
        _rustc(args.rustc, options, args.workers)


def first_embed(
    data: Path, model: EmbeddingModel, options: QueueOptions, workers: int
) -> tuple[float, float, int]:
    """The rustc guide's tip (cloned from its bundle in `data`) from an empty database to backlog 0: wall
    seconds, of which indexing, and the sentences embedded."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "guide"
        subprocess.run(["git", "clone", "-q", str(data / "md_history.bundle"), str(tree)], check=True)
        database = open_database(None, Path(tmp) / "data")
        started = time.perf_counter()
        with database.connect() as conn:
            reconcile_repository(conn, Repository("rustc-dev-guide", tree))
            indexed = time.perf_counter() - started
            embedded, _ = _drain(database, model, options, workers)
            assert pending_items(conn)[0] == 0
        return time.perf_counter() - started, indexed, embedded


def _rustc(data: Path, options: QueueOptions, workers: int) -> None:
    """The guide's first embed with the default model."""
    model = load_embedding_model()
    wall, indexed, embedded = first_embed(data, model, options, workers)
    print(
        f"rustc guide, empty database to backlog 0 ({model.name}, workers {workers}): {wall:.1f} s wall"
        f" (index {indexed:.1f} s), {embedded} sentences, {embedded / wall:.0f}/s end to end"
    )


if __name__ == "__main__":
    main()
