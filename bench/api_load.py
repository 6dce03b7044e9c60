"""API load: requests/s and p50/p95 of `GET /v1/search` and `POST /v1/answers` with concurrent clients on
loopback, while rustc-dev-guide commits are replayed into the same index.

    python bench/api_load.py ../shared/data/rustc_dev_guide [--clients 8] [--seconds 15] [--replay 300]
    python bench/api_load.py ../shared/data/rustc_dev_guide --daemon --search-clients 7 --answer-clients 1 \
        --replay 150 --seconds 60 [--workdir DIR] [--py-spy OUT]

Indexes the guide at an early commit into an embedded PostgreSQL in a temp dir, embeds up to `--embed`
sentences (the vector lane only sees embedded ones; -1: all), starts the real server in a child process so
the clients do not share its GIL, then runs each endpoint for `--seconds` with `--clients` threads while a
thread replays the following commits file by file. The answer store serves a repeated question from
storage, so answers are reported split into computed and cached. Prints figures; asserts nothing.

`--daemon` is the `citeline serve` case: the child is `citeline serve TREE` (watcher, embedder and API in
one process), the replay checks the commits out in the watched tree (`--replay` commits spread evenly over
`--seconds`), search and answer clients run at the same time, and edit-to-index is the watcher's
change-seen-to-committed latency of the samples written during the load (what `citeline status` reports).
Extra `CITELINE_*` settings for the child are passed with `--env KEY=VALUE`; `--compare-defaults` runs the
scenario twice in one run, from the same tree and index: with the defaults before issue 27 (one process,
torch on every core), then with the current ones. `--workdir` keeps the clone
and the embedded index between runs (each run resets the tree to `--start` and drains the backlog first).
`--py-spy OUT` records the child's stacks during the load (collapsed format, all threads, idle included).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from api.server import run_api
from api.settings import ApiSettings
from daemon.assembly import ModelNames, build_engine
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
    engine = build_engine(database, ModelNames())
    try:
        run_api(ApiSettings(port=port, pool_size=12), database, engine.retriever, engine.answer)
    finally:
        engine.close()


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


def _prepare(args: argparse.Namespace, root: Path, commits: list[dict[str, Any]]) -> tuple[Path, Path]:
    """The tree at `--start`, indexed, with `--embed` sentences embedded; reused from `root` when there."""
    tree, data_dir = root / "rustc-dev-guide", root / "data"
    if not tree.exists():
        _git(root, "clone", "-q", "--no-checkout", str(args.data / "md_history.bundle"), str(tree))
    _git(tree, "checkout", "-q", "--force", commits[args.start]["rebuilt_commit"])
    database = open_database(None, data_dir)
    with database.connect() as conn:
        report = reconcile_repository(conn, Repository("rustc-dev-guide", tree))
        worker = EmbeddingWorker(conn, load_embedding_model())
        started, embedded = time.perf_counter(), 0
        while args.embed < 0 or embedded < args.embed:
            batch = worker.run_batch()
            if batch.claimed == 0:
                break
            embedded += batch.embedded
        print(
            f"indexed {report.sentences_inserted} new sentences at commit {args.start};"
            f" embedded {embedded} in {time.perf_counter() - started:.1f}s"
        )
    return tree, data_dir


def _wait_healthy(url: str, alive: Callable[[], bool], path: str = "/healthz") -> None:
    deadline = time.monotonic() + 300  # loading the models takes a while on a busy CPU
    while True:
        if not alive() or time.monotonic() > deadline:
            raise SystemExit("the API server did not start; see its traceback above")
        try:
            if httpx.get(f"{url}{path}", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)


def _checkout_paced(tree: Path, commits: list[dict[str, Any]], seconds: float, stop: threading.Event) -> int:
    interval, done = seconds / max(1, len(commits)), 0
    started = time.monotonic()
    for number, commit in enumerate(commits):
        if stop.wait(max(0.0, started + number * interval - time.monotonic())):
            break
        _git(tree, "checkout", "-q", "--force", commit["rebuilt_commit"])
        done += 1
    return done


# The defaults before issue 27: one process, torch on every core (`--compare-defaults` runs them first).
OLD_DEFAULTS = [
    "CITELINE_MODELS__TORCH_THREADS=0",
    "CITELINE_EMBEDDING__SEPARATE_PROCESS=false",
    "CITELINE_WATCH__SEPARATE_PROCESS=false",
]


def _daemon_run(
    args: argparse.Namespace, tree: Path, data_dir: Path, commits: list[dict[str, Any]], settings: list[str]
) -> None:
    """`citeline serve` in a child; search and answer clients at once while the tree moves under it."""
    port = _free_port()
    env = {**os.environ, "CITELINE_DATA_DIR": str(data_dir), "CITELINE_API__PORT": str(port)}
    env.update(dict(item.split("=", 1) for item in settings))
    child = subprocess.Popen([sys.executable, "-m", "daemon.cli", "serve", str(tree)], env=env)
    url = f"http://127.0.0.1:{port}"
    database = open_database(None, data_dir)
    try:
        _wait_healthy(url, lambda: child.poll() is None, "/readyz")
        with database.connect() as conn:
            row = conn.execute("SELECT coalesce(max(id), 0) FROM ingest_samples").fetchone()
            first_sample = int(row[0]) if row else 0
        profiler = None
        if args.py_spy:
            profiler = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("py-spy")),
                    "record",
                    "--pid",
                    str(child.pid),
                    "--duration",
                    str(int(args.seconds)),
                    "--rate",
                    "50",
                    "--format",
                    "raw",
                    "--idle",
                    "--threads",
                    "--nonblocking",
                    "--output",
                    str(args.py_spy),
                ],
                stdout=subprocess.DEVNULL,
            )
        stop = threading.Event()
        replayed = [0]
        replay = threading.Thread(
            target=lambda: replayed.__setitem__(0, _checkout_paced(tree, commits, args.seconds, stop))
        )
        print(
            f"daemon: {args.search_clients} search + {args.answer_clients} answer clients for"
            f" {args.seconds:.0f}s, {len(commits)} commits checked out in the watched tree meanwhile"
        )
        replay.start()
        loads = [
            threading.Thread(target=_load, args=(url, kind, clients, args.seconds))
            for kind, clients in (("search", args.search_clients), ("answers", args.answer_clients))
            if clients
        ]
        for thread in loads:
            thread.start()
        for thread in loads:
            thread.join()
        stop.set()
        replay.join()
        time.sleep(3)  # let the last batches commit
        if profiler is not None:
            profiler.wait(timeout=60)
        with database.connect() as conn:
            rows = conn.execute(
                "SELECT latency_seconds FROM ingest_samples WHERE id > %s", (first_sample,)
            ).fetchall()
        ingest = [float(r[0]) for r in rows]
        print(
            f"edit-to-index: {len(ingest)} samples, p50 {1000 * _pct(ingest, 0.5):.0f} ms,"
            f" p95 {1000 * _pct(ingest, 0.95):.0f} ms, max {1000 * max(ingest, default=0):.0f} ms;"
            f" commits checked out: {replayed[0]}"
        )
    finally:
        child.terminate()
        child.wait(timeout=60)


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
    parser.add_argument(
        "--embed", type=int, default=1000, help="sentences embedded before the load (-1: all)"
    )
    parser.add_argument("--daemon", action="store_true", help="the child is `citeline serve` on the tree")
    parser.add_argument("--search-clients", type=int, default=7, help="with --daemon")
    parser.add_argument("--answer-clients", type=int, default=1, help="with --daemon")
    parser.add_argument("--env", action="append", default=[], help="with --daemon: KEY=VALUE for the child")
    parser.add_argument(
        "--compare-defaults", action="store_true", help="with --daemon: the old defaults, then the new"
    )
    parser.add_argument("--workdir", type=Path, help="keep the clone and the index here between runs")
    parser.add_argument("--py-spy", type=Path, help="with --daemon: record the child's stacks to this file")
    args = parser.parse_args()
    args.data = args.data.resolve()  # git runs in the bench's own folders, where a relative path is lost
    commits = [json.loads(line) for line in (args.data / "commits.jsonl").read_text().splitlines()]
    replayed = commits[args.start + 1 : args.start + 1 + args.replay]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.workdir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        if args.daemon:
            runs = [OLD_DEFAULTS + args.env, args.env] if args.compare_defaults else [args.env]
            for settings in runs:
                print(f"\n== settings: {' '.join(settings) or 'the defaults'}")
                tree, data_dir = _prepare(args, root, commits)  # each run from the same tree and index
                _daemon_run(args, tree, data_dir, replayed, settings)
            return
        tree, data_dir = _prepare(args, root, commits)
        port = _free_port()
        server = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(data_dir, port), daemon=True
        )
        server.start()
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, server.is_alive)
        stop, done = threading.Event(), [0]
        replay = threading.Thread(target=_replay, args=(tree, data_dir, replayed, stop, done))
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
