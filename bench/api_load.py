"""API load: requests/s and p50/p95 of `GET /v1/search` and `POST /v1/answers` with concurrent clients on
loopback, while rustc-dev-guide commits are replayed into the same index.

    python bench/api_load.py ../shared/data/rustc_dev_guide [--clients 8] [--seconds 15] [--replay 300]

Indexes the guide at an early commit into an embedded PostgreSQL in a temp dir, embeds up to `--embed`
sentences (the vector lane only sees embedded ones), starts the real server (`api.server.run_api`, real
models) in a child process so the clients do not share its GIL, then runs each endpoint for `--seconds`
with `--clients` threads while a thread replays the following commits file by file. The answer store
serves a repeated question from storage, so answers are reported split into computed and cached. Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from api.server import ModelNames, run_api
from api.settings import ApiSettings
from indexer.database import open_database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import Repository, index_paths, reconcile_repository

QUERIES = [
    "how do I run the test suite",
    "bootstrap stage0 compiler",
    "query system incremental compilation",
    "borrow checker regions",
    "x.py build library std",
    "MIR borrowck",
    "type inference variables",
    "rustdoc json output",
    "LLVM codegen backend",
    "diagnostics lint emission",
    "what is a HIR id",
    "how are traits resolved",
]


@dataclass
class Samples:
    """Latencies (seconds) and what came back, for one endpoint."""

    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    computed: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(data_dir: Path, port: int) -> None:
    database = open_database(None, data_dir)
    run_api(ApiSettings(port=port, pool_size=12), database, models=ModelNames())


def _replay(
    tree: Path, data_dir: Path, commits: list[dict[str, Any]], stop: threading.Event, done: list[int]
) -> None:
    database = open_database(None, data_dir)
    repo = Repository("rustc-dev-guide", tree)
    with database.connect() as conn:
        for commit in commits:
            if stop.is_set():
                return
            _git(tree, "checkout", "-q", "--force", commit["rebuilt_commit"])
            paths = [change["path"] for change in commit["changes"]]
            paths += [change["old_path"] for change in commit["changes"] if change.get("old_path")]
            index_paths(conn, repo, paths)
            done[0] += 1


def _client(url: str, kind: str, deadline: float, samples: Samples, offset: int) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        i = offset
        while time.monotonic() < deadline:
            query = QUERIES[i % len(QUERIES)]
            i += 1
            started = time.perf_counter()
            if kind == "search":
                response = client.get("/v1/search", params={"q": query, "k": 10})
            else:
                response = client.post("/v1/answers", json={"question": query + "?", "budget": "low"})
            elapsed = time.perf_counter() - started
            with samples.lock:
                samples.latencies.append(elapsed)
                samples.statuses[response.status_code] += 1
                if kind == "answers" and response.status_code == 200:
                    body = response.json()
                    samples.kinds[f"{body['route']}/{'cached' if body['cached'] else 'computed'}"] += 1
                    if not body["cached"]:
                        samples.computed.append(elapsed)


def _load(url: str, kind: str, clients: int, seconds: float) -> Samples:
    samples = Samples()
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_client, args=(url, kind, deadline, samples, n * 3)) for n in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    n = len(samples.latencies)
    p50, p95 = 1000 * _pct(samples.latencies, 0.5), 1000 * _pct(samples.latencies, 0.95)
    print(
        f"{kind}: {n} requests in {wall:.1f}s = {n / wall:.1f} req/s, p50 {p50:.0f} ms, p95 {p95:.0f} ms,"
        f" statuses {dict(samples.statuses)}"
    )
    if kind == "answers":
        print(
            f"  computed (not from the store): {len(samples.computed)}, p95"
            f" {1000 * _pct(samples.computed, 0.95):.0f} ms; routes {dict(samples.kinds)}"
        )
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "data", type=Path, help="the rustc_dev_guide folder (md_history.bundle, commits.jsonl)"
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--start", type=int, default=1500, help="index the guide as of this commit index")
    parser.add_argument("--replay", type=int, default=300, help="commits replayed during the load")
    parser.add_argument("--embed", type=int, default=1000, help="sentences embedded before the load")
    args = parser.parse_args()
    commits = [json.loads(line) for line in (args.data / "commits.jsonl").read_text().splitlines()]
    with tempfile.TemporaryDirectory() as tmp:
        tree, data_dir = Path(tmp) / "tree", Path(tmp) / "data"
        _git(Path(tmp), "clone", "-q", "--no-checkout", str(args.data / "md_history.bundle"), str(tree))
        _git(tree, "checkout", "-q", "--force", commits[args.start]["rebuilt_commit"])
        database = open_database(None, data_dir)
        with database.connect() as conn:
            report = reconcile_repository(conn, Repository("rustc-dev-guide", tree))
            worker = EmbeddingWorker(conn, load_embedding_model())
            started, embedded = time.perf_counter(), 0
            while embedded < args.embed:
                batch = worker.run_batch()
                if batch.claimed == 0:
                    break
                embedded += batch.embedded
            print(
                f"indexed {report.sentences_inserted} sentences at commit {args.start};"
                f" embedded {embedded} in {time.perf_counter() - started:.1f}s"
            )
        port = _free_port()
        server = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(data_dir, port), daemon=True
        )
        server.start()
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180  # loading the models takes a while on a busy CPU
        while True:
            if not server.is_alive() or time.monotonic() > deadline:
                raise SystemExit("the API server did not start; see its traceback above")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        stop, done = threading.Event(), [0]
        replay = threading.Thread(
            target=_replay,
            args=(tree, data_dir, commits[args.start + 1 : args.start + 1 + args.replay], stop, done),
        )
        replay.start()
        try:
            print(f"{args.clients} clients, {args.seconds:.0f}s per endpoint, loopback, commits replaying:")
            _load(url, "search", args.clients, args.seconds)
            _load(url, "answers", args.clients, args.seconds)
        finally:
            stop.set()
            replay.join()
            server.terminate()
            server.join(timeout=10)
        print(f"commits replayed during the load: {done[0]}")


if __name__ == "__main__":
    main()
