"""The rustc-dev-guide history replayed into a watched work tree while `citeline watch` runs.

    python bench/daemon_replay.py ../shared/data/rustc_dev_guide [--start 1500] [--commits 300] [--pace 1.0]

Checks out the guide at commit `--start`, starts the real daemon (watcher + embedder, embedded PostgreSQL in
a temp dir) on it, waits until that tree is indexed and embedded, then checks out one further commit every
`--pace` seconds. Once a second it samples the
embedding backlog: its size and the age of the oldest un-embedded sentence. Prints the series (every 10 s),
p50/p95/max of both, and how long the backlog took to drain after the last commit. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from indexer.database import Database, open_database

_SAMPLE_SQL = (
    "SELECT count(*), coalesce(extract(epoch FROM now() - min(enqueued_at)), 0)"
    " FROM embedding_backlog WHERE failed_at IS NULL"
)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _wait_for_steady_state(database: Database, deadline: float) -> None:
    """Let the daemon reconcile the starting tree and drain its backlog: the replay measures a steady pace."""
    with database.connect() as conn:
        while time.monotonic() < deadline:
            size, _ = conn.execute(_SAMPLE_SQL).fetchone() or (0, 0.0)
            indexed = conn.execute("SELECT count(*) FROM sentences").fetchone()
            if indexed and indexed[0] > 0 and size == 0:
                return
            time.sleep(1)
    raise TimeoutError("the daemon did not index and embed the starting tree in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", type=Path, help="the rustc_dev_guide folder")
    parser.add_argument("--start", type=int, default=1500, help="index the guide as of this commit first")
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between commits")
    args = parser.parse_args()
    commits = [json.loads(line)["rebuilt_commit"] for line in (args.data / "commits.jsonl").open()]
    with tempfile.TemporaryDirectory() as tmp:
        tree, data_dir = Path(tmp) / "guide", Path(tmp) / "data"
        _git(Path(tmp), "clone", "-q", "--no-checkout", str(args.data / "md_history.bundle"), str(tree))
        _git(tree, "checkout", "-q", "--force", commits[args.start])
        env = {**os.environ, "CITELINE_DATA_DIR": str(data_dir)}
        env.pop("CITELINE_DATABASE_URL", None)
        daemon = subprocess.Popen(
            [sys.executable, "-m", "daemon.cli", "watch", str(tree)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        database = open_database(None, data_dir)
        samples: list[tuple[float, int, float]] = []
        stop = threading.Event()
        begun = time.monotonic()

        def sample() -> None:
            with database.connect() as conn:
                while not stop.is_set():
                    size, age = conn.execute(_SAMPLE_SQL).fetchone() or (0, 0.0)
                    samples.append((time.monotonic() - begun, int(size), float(age)))
                    stop.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        try:
            _wait_for_steady_state(database, deadline=time.monotonic() + 900)
            begun = time.monotonic()
            sampler.start()
            for commit in commits[args.start + 1 : args.start + 1 + args.commits]:
                _git(tree, "checkout", "-q", "--force", commit)
                time.sleep(args.pace)
            replay_end = time.monotonic() - begun
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline and (not samples or samples[-1][1] > 0):
                time.sleep(1)
            drained = samples[-1][0] - replay_end if samples and samples[-1][1] == 0 else float("nan")
        finally:
            stop.set()
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(60)
    print(
        f"replayed {args.commits} commits from #{args.start}, one every {args.pace:.1f}s, daemon exit "
        f"{daemon.returncode}"
    )
    print(f"{'t (s)':>7}{'backlog':>9}{'oldest age (s)':>16}")
    for t, size, age in samples[::10]:
        print(f"{t:>7.0f}{size:>9}{age:>16.1f}")
    during = [s for s in samples if s[0] <= replay_end]
    sizes, ages = [float(s[1]) for s in during], [s[2] for s in during]
    print(
        f"during the replay: backlog p50 {_pct(sizes, 0.5):.0f} p95 {_pct(sizes, 0.95):.0f}"
        f" max {max(sizes):.0f}; "
        f"oldest age p50 {_pct(ages, 0.5):.1f}s p95 {_pct(ages, 0.95):.1f}s max {max(ages):.1f}s"
    )
    print(f"backlog drained {drained:.1f}s after the last commit")


if __name__ == "__main__":
    main()
