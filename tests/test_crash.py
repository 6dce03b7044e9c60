"""kill -9 during indexing leaves every file fully old or fully new: never half."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from indexer.database import Database
from indexer.hashing import sentence_hash
from indexer.reconcile import Repository, reconcile_repository
from indexer.segment import markdown_units
from tests.helpers import lexical_stats_are_exact

_WORKER = """
import sys
from pathlib import Path
import psycopg
from indexer.reconcile import Repository, reconcile_repository
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    print("ready", flush=True)
    reconcile_repository(conn, Repository("docs", Path(sys.argv[2])))
"""


def _version(i: int, generation: int) -> str:
    body = "\n\n".join(
        f"Paragraph {p} of file {i} says generation {generation} holds value {p * generation}. It ends here."
        for p in range(40)
    )
    return f"# File {i}\n\n{body}\n"


def _hashes(text: str) -> list[bytes]:
    return [sentence_hash(u.text) for u in markdown_units(text)]


def _wait_for_first_commit(database: Database, generation: int) -> None:
    """Poll until the worker committed one file of this generation, so the kill lands mid-pass."""
    marker = f"%says generation {generation} holds%"
    deadline = time.monotonic() + 30
    with database.connect() as conn:
        while time.monotonic() < deadline:
            if conn.execute("SELECT 1 FROM sentences WHERE text LIKE %s LIMIT 1", (marker,)).fetchone():
                return
            time.sleep(0.005)
    raise AssertionError("the worker committed nothing in 30 s")


def test_kill_during_index_never_leaves_a_half_file(clean_database: Database, repo_dir: Path) -> None:
    files = 60
    for i in range(files):
        (repo_dir / f"f{i}.md").write_text(_version(i, 1))
    with clean_database.connect() as conn:
        reconcile_repository(conn, Repository("docs", repo_dir))
    rng = random.Random(7)
    for generation in (2, 3, 4):
        for i in range(files):
            (repo_dir / f"f{i}.md").write_text(_version(i, generation))
        proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, clean_database.url, str(repo_dir)],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).parent.parent,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        _wait_for_first_commit(clean_database, generation)
        time.sleep(rng.uniform(0.0, 0.1))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with clean_database.connect() as conn:
            rows = conn.execute(
                "SELECT d.path, array_agg(s.norm_hash ORDER BY s.ordinal) FROM documents d"
                " JOIN sentences s ON s.document_id = d.id GROUP BY d.path"
            ).fetchall()
            assert len(rows) == files
            states = set()
            for path, hashes in rows:
                i = int(path[1:-3])
                stored = [bytes(h) for h in hashes]
                old, new = _hashes(_version(i, generation - 1)), _hashes(_version(i, generation))
                assert stored in (old, new), f"{path} is half written"
                states.add("new" if stored == new else "old")
            assert "new" in states, "the worker was killed after committing at least one file"
            lexical_stats_are_exact(conn)
            # Catch up so the next generation starts from a fully indexed tree.
            reconcile_repository(conn, Repository("docs", repo_dir))
