"""Edit to keyword-searchable latency through the real watcher: p50/p95 over real file edits.

Starts an embedded PostgreSQL in a temp dir, a repository of 50 Markdown files and the watcher (no
embedder), then rewrites one file at a time with a unique word and polls BM25 search until it is found.
Usage: python bench/daemon_latency.py [--edits 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from pathlib import Path

from daemon.reconnect import Reconnector
from daemon.watch import Watcher
from engine.search import bm25_search
from indexer.database import open_database
from indexer.reconcile import IndexOptions, Repository, reconcile_repository


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "docs"
        root.mkdir()
        for i in range(50):
            body = " ".join(f"Paragraph {i} sentence {s} explains the build." for s in range(30))
            (root / f"page{i}.md").write_text(f"# Page {i}\n\n## Section\n\n{body}\n")
        database = open_database(None, Path(tmp) / "data")
        repo = Repository("docs", root)
        with database.connect() as conn:
            reconcile_repository(conn, repo)
        shutdown = threading.Event()
        watcher = Watcher(Reconnector(database, shutdown), [repo], IndexOptions())
        ready = threading.Event()
        loop = asyncio.new_event_loop()
        holder: dict[str, asyncio.Event] = {}

        async def run() -> None:
            holder["stop"] = asyncio.Event()
            await watcher.run(holder["stop"], ready.set)

        thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
        thread.start()
        ready.wait(60)
        latencies = []
        with database.connect() as conn:
            for n in range(args.edits):
                word = f"zq{n}x{int(time.time() * 1000) % 100000}"
                page = root / f"page{n % 50}.md"
                text = page.read_text()
                started = time.perf_counter()
                page.write_text(text + f"\nEdit {n} mentions {word} here.\n")
                while not bm25_search(conn, word, 1):
                    time.sleep(0.002)
                latencies.append(time.perf_counter() - started)
                time.sleep(0.02)
        shutdown.set()
        loop.call_soon_threadsafe(holder["stop"].set)
        thread.join(20)
    cuts = statistics.quantiles(latencies, n=100)
    print(
        f"edits: {len(latencies)}  edit->searchable p50 {cuts[49] * 1000:.0f} ms"
        f"  p95 {cuts[94] * 1000:.0f} ms  max {max(latencies) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
