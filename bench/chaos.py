"""Crash probes on the rustc-dev-guide history: SIGKILL the watcher during a replay, then the embedders.

    python bench/chaos.py ../shared/data/rustc_dev_guide [--start 1500] [--commits 200] [--kills 12]
                          [--pace 0.4] [--embed-kills 4]

Replay probe: checks out the guide at commit `--start`, runs `citeline watch --no-embed` on it (embedded
PostgreSQL in a temp dir), checks out `--commits` further commits one every `--pace` seconds and, at `--kills`
points spread over the replay, SIGKILLs the watcher at a random moment (mid-batch or mid catch-up) and
starts it again. Once the last watcher has gone quiet it compares the index with a fresh index of the same
tree: documents and sentence rows lost (in the fresh index only), ghost (in the watched index only) and
duplicated, the BM25 statistics (term document frequencies, sentence and token totals) against a recount,
and sentences that are neither embedded nor queued.

Embedder probe: two `citeline embed` workers drain that backlog; `--embed-kills` times one of them is
SIGKILLed mid-batch and started again; then both are killed and `citeline embed --drain` runs. Counts:
sentences without a vector, vectors per sentence above one, backlog left (pending, leased) after the drain.
Prints the counts; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from daemon_replay import _git  # bench/ is on sys.path when this runs as a script

from indexer.database import Connection, Database, open_database
from indexer.reconcile import Repository, reconcile_repository
from indexer.sources import FileFilter, walk_markdown

_ROWS = """
SELECT d.path, s.ordinal, s.kind, s.text, s.heading_path, s.line_start, s.line_end
FROM sentences s JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id
WHERE r.name = %s
"""


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "daemon.cli", *args], env=env, stdout=out, stderr=out)


def _count(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    row = conn.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def _wait_quiet(log: Path, quiet: float, deadline: float) -> None:
    """Until the daemon's log has not grown for `quiet` seconds: the watcher has applied what it saw."""
    size, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = log.stat().st_size
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.2)


def _bm25_drift(conn: Connection) -> dict[str, int]:
    """Differences between the trigger-kept statistics and a recount from the rows."""
    terms = _count(
        conn,
        "SELECT count(*) FROM lexical_terms t FULL JOIN (SELECT u.lexeme AS term, count(*) AS df"
        " FROM sentences s, unnest(s.tsv) u GROUP BY u.lexeme) c USING (term)"
        " WHERE t.df IS DISTINCT FROM c.df",
    )
    stats = conn.execute(
        "SELECT l.sentence_count - (SELECT count(*) FROM sentences),"
        " l.token_total - (SELECT coalesce(sum(token_count), 0) FROM sentences) FROM lexical_stats l"
    ).fetchone()
    assert stats is not None
    return {"terms_off": terms, "sentence_count_off": int(stats[0]), "token_total_off": int(stats[1])}


def _compare(conn: Connection, watched: str, fresh: str) -> dict[str, int]:
    def rows(name: str) -> Counter[tuple[Any, ...]]:
        found = conn.execute(_ROWS, (name,))
        return Counter(tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in found)

    def docs(name: str) -> set[str]:
        sql = "SELECT d.path FROM documents d JOIN repositories r ON r.id = d.repository_id WHERE r.name = %s"
        return {r[0] for r in conn.execute(sql, (name,))}

    mine, theirs = rows(watched), rows(fresh)
    positions = Counter((r[0], r[1]) for r in mine.elements())
    return {
        "documents": len(docs(watched)),
        "documents_lost": len(docs(fresh) - docs(watched)),
        "documents_ghost": len(docs(watched) - docs(fresh)),
        "sentences": sum(mine.values()),
        "sentences_lost": sum((theirs - mine).values()),
        "sentences_ghost": sum((mine - theirs).values()),
        "sentences_duplicated": sum(n - 1 for n in positions.values() if n > 1),
        "unqueued": _count(
            conn,
            "SELECT count(*) FROM sentences s WHERE NOT EXISTS (SELECT 1 FROM sentence_embeddings e"
            " WHERE e.sentence_id = s.id) AND NOT EXISTS (SELECT 1 FROM embedding_backlog b"
            " WHERE b.sentence_id = s.id)",
        ),
    }


def replay_probe(args: argparse.Namespace, tmp: Path, env: dict[str, str], database: Database) -> Path:
    commits = [json.loads(line)["rebuilt_commit"] for line in (args.data / "commits.jsonl").open()]
    tree, log = tmp / "guide", tmp / "watch.log"
    _git(tmp, "clone", "-q", "--no-checkout", str(args.data / "md_history.bundle"), str(tree))
    _git(tree, "checkout", "-q", "--force", commits[args.start])
    daemon = _start(["watch", "--no-embed", str(tree)], env, log)
    expected = len(list(walk_markdown(tree, FileFilter())))
    with database.connect() as conn:
        deadline = time.monotonic() + 600
        while _count(conn, "SELECT count(*) FROM documents") < expected and time.monotonic() < deadline:
            time.sleep(0.5)
    replay = commits[args.start + 1 : args.start + 1 + args.commits]
    kill_at = {round((i + 0.5) * len(replay) / args.kills) for i in range(args.kills)}
    rng = random.Random(16)
    kills, died = 0, 0
    started = time.monotonic()
    for i, commit in enumerate(replay):
        _git(tree, "checkout", "-q", "--force", commit)
        if i in kill_at:
            time.sleep(rng.uniform(0.0, args.pace))  # lands mid-batch, mid catch-up or idle
            died += daemon.poll() is not None
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
            kills += 1
            daemon = _start(["watch", "--no-embed", str(tree)], env, log)
            time.sleep(rng.uniform(0.0, 1.5))  # sometimes the next commit lands during its catch-up
        else:
            time.sleep(args.pace)
    deadline = time.monotonic() + 300
    while log.read_text(errors="replace").count('"ready"') <= kills and time.monotonic() < deadline:
        time.sleep(0.2)  # the last watcher has caught up with the tree at its start
    _wait_quiet(log, quiet=5.0, deadline=deadline)
    replay_seconds = time.monotonic() - started
    with database.connect() as conn:
        drift = _bm25_drift(conn)
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(60)
    with database.connect() as conn:
        reconcile_repository(conn, Repository("fresh", tree))
        counts = _compare(conn, tree.name, "fresh")
        conn.execute("DELETE FROM repositories WHERE name = 'fresh'")  # its rows leave the embed probe
    print(
        f"replay probe: {len(replay)} commits from #{args.start} in {replay_seconds:.0f}s, {kills} SIGKILLs"
        f" of `citeline watch`, {died} watchers died on their own; the last one's exit on SIGTERM:"
        f" {daemon.returncode}"
    )
    print("  vs a fresh index of the final tree: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("  BM25 statistics vs a recount: " + ", ".join(f"{k} {v}" for k, v in drift.items()))
    return log


def embed_probe(args: argparse.Namespace, tmp: Path, env: dict[str, str], database: Database) -> None:
    log = tmp / "embed.log"
    with database.connect() as conn:
        backlog = _count(conn, "SELECT count(*) FROM embedding_backlog")
    workers = [_start(["embed", "--workers", "1"], env, log) for _ in range(2)]
    rng = random.Random(7)
    kills = 0
    with database.connect() as conn:
        for _ in range(args.embed_kills):
            before = _count(conn, "SELECT count(*) FROM sentence_embeddings")
            deadline = time.monotonic() + 120
            # kill mid-drain, not while the model loads
            while _count(conn, "SELECT count(*) FROM sentence_embeddings") == before:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            time.sleep(rng.uniform(0.0, 2.0))
            victim = rng.randrange(len(workers))
            workers[victim].send_signal(signal.SIGKILL)
            workers[victim].wait()
            kills += 1
            workers[victim] = _start(["embed", "--workers", "1"], env, log)
        time.sleep(rng.uniform(3.0, 6.0))
        leased_at_kill = _count(conn, "SELECT count(*) FROM embedding_backlog WHERE claimed_until > now()")
        for worker in workers:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        kills += len(workers)
        started = time.monotonic()
        drain = subprocess.run(
            [sys.executable, "-m", "daemon.cli", "embed", "--drain", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        drain_seconds = time.monotonic() - started
        counts = {
            "sentences": _count(conn, "SELECT count(*) FROM sentences"),
            "without_vector": _count(
                conn,
                "SELECT count(*) FROM sentences s WHERE NOT EXISTS"
                " (SELECT 1 FROM sentence_embeddings e WHERE e.sentence_id = s.id)",
            ),
            "extra_vectors": _count(
                conn, "SELECT count(*) - count(DISTINCT sentence_id) FROM sentence_embeddings"
            ),
            "backlog_pending": _count(
                conn,
                "SELECT count(*) FROM embedding_backlog WHERE failed_at IS NULL"
                " AND (claimed_until IS NULL OR claimed_until <= now())",
            ),
            "backlog_leased": _count(
                conn, "SELECT count(*) FROM embedding_backlog WHERE claimed_until > now()"
            ),
            "failed": _count(conn, "SELECT count(*) FROM embedding_backlog WHERE failed_at IS NOT NULL"),
        }
    print(
        f"embedder probe: backlog {backlog} at start, {kills} SIGKILLs of `citeline embed` workers"
        f" ({leased_at_kill} items leased when the last two died); `embed --drain` exit {drain.returncode}"
        f" after {drain_seconds:.0f}s: {drain.stdout.strip().replace(chr(10), ' ')}"
    )
    print("  after the drain: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="the rustc_dev_guide folder")
    parser.add_argument("--start", type=int, default=1500, help="index the guide as of this commit first")
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--kills", type=int, default=12, help="SIGKILLs of the watcher during the replay")
    parser.add_argument("--pace", type=float, default=0.4, help="seconds between commits")
    parser.add_argument("--embed-kills", type=int, default=4, help="SIGKILLs of one embedder worker")
    args = parser.parse_args()
    args.data = args.data.resolve()  # git runs in the probe's own folders, where a relative path is lost
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = {**os.environ, "CITELINE_DATA_DIR": str(tmp / "data"), "HF_HUB_OFFLINE": "1"}
        env.pop("CITELINE_DATABASE_URL", None)
        env.pop("CITELINE_CONFIG", None)
        database = open_database(None, tmp / "data")  # held open, so the embedded server outlives the kills
        replay_probe(args, tmp, env, database)
        if args.embed_kills >= 0:
            embed_probe(args, tmp, env, database)


if __name__ == "__main__":
    main()
