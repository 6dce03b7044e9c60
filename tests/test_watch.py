"""The watcher with real files, real watchfiles events and a real PostgreSQL.

Every scenario ends by comparing the watched repository with a fresh full index of the same tree (indexed
under another name into the same database): same documents, same sentences in the same order with the same
lines and headings, and exact BM25 statistics.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import string
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import pytest

from daemon.reconnect import Reconnector
from daemon.watch import Watcher
from indexer.database import Connection, Database
from indexer.reconcile import IndexOptions, Repository, reconcile_repository
from tests.helpers import drop_permission_override, lexical_stats_are_exact

Snapshot = dict[str, tuple[str, list[tuple[object, ...]]]]


class PrivilegedReconnector(Reconnector):
    """Opens connections from a thread started here, before the watcher drops root's permission override:
    the embedded server's socket belongs to its own user, as a production socket is open to citeline's."""

    def __init__(self, database: Database, stop: threading.Event) -> None:
        super().__init__(database, stop)
        self._opener = ThreadPoolExecutor(max_workers=1)
        self._opener.submit(lambda: None).result()  # its thread exists now, with this thread's rights

    def connect(self, *, autocommit: bool = True) -> Connection | None:
        return self._opener.submit(super().connect, autocommit=autocommit).result()


class RunningWatcher:
    """A Watcher on its own event loop in a thread, started and stopped like the daemon does."""

    def __init__(self, database: Database, repo: Repository, *, as_non_root: bool = False) -> None:
        self.as_non_root = as_non_root and os.geteuid() == 0
        self.shutdown = threading.Event()
        reconnector = (PrivilegedReconnector if self.as_non_root else Reconnector)(database, self.shutdown)
        self.watcher = Watcher(reconnector, [repo], IndexOptions())
        self.ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.stop: asyncio.Event | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self.stop = asyncio.Event()
            await self.watcher.run(self.stop, self.ready.set)

        try:
            if self.as_non_root:  # its worker threads inherit the loss
                drop_permission_override()
            self.loop.run_until_complete(main())
        except BaseException as exc:
            self.error = exc
            self.ready.set()

    def __enter__(self) -> RunningWatcher:
        self.thread.start()
        assert self.ready.wait(30) and self.error is None
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.shutdown.set()
        if self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(20)
        assert not self.thread.is_alive()
        assert self.error is None


def snapshot(conn: Connection, repository: str) -> Snapshot:
    docs = conn.execute(
        "SELECT d.id, d.path, d.content_hash FROM documents d JOIN repositories r ON r.id = d.repository_id"
        " WHERE r.name = %s",
        (repository,),
    ).fetchall()
    result: Snapshot = {}
    for doc_id, path, digest in docs:
        rows = conn.execute(
            "SELECT ordinal, kind, text, heading_path, line_start, line_end FROM sentences"
            " WHERE document_id = %s ORDER BY ordinal",
            (doc_id,),
        ).fetchall()
        result[path] = (digest, [tuple(r) for r in rows])
    return result


def sentence_ids(conn: Connection, path: str, repository: str = "docs") -> dict[str, int]:
    """Sentence text to id for one document of one repository (the fresh copy shares the paths)."""
    rows = conn.execute(
        "SELECT s.text, s.id FROM sentences s JOIN documents d ON d.id = s.document_id"
        " JOIN repositories r ON r.id = d.repository_id WHERE d.path = %s AND r.name = %s",
        (path, repository),
    ).fetchall()
    return dict(rows)


def wait_until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def found(conn: Connection, word: str) -> bool:
    row = conn.execute("SELECT count(*) FROM sentences WHERE text LIKE %s", (f"%{word}%",)).fetchone()
    return bool(row and row[0])


def skipped(conn: Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT path, reason FROM skipped_files").fetchall())


def equals_fresh_index(conn: Connection, root: Path, name: str = "docs") -> bool:
    reconcile_repository(conn, Repository("fresh", root))
    watched, fresh = snapshot(conn, name), snapshot(conn, "fresh")
    return watched == fresh and bool(fresh)


def _doc(i: int, variant: str = "") -> str:
    body = f"The tool number {i} builds things. It also {variant} runs tests."
    return f"# Page {i}\n\n## Usage {variant}\n\n{body}\n"


@pytest.fixture
def tree(repo_dir: Path) -> Path:
    (repo_dir / "guide").mkdir()
    (repo_dir / ".gitignore").write_text("drafts/\n")
    (repo_dir / "drafts").mkdir()
    for i in range(20):
        (repo_dir / "guide" / f"p{i}.md").write_text(_doc(i))
    return repo_dir


@pytest.fixture
def repo(conn: Connection, tree: Path) -> Repository:
    """`tree` as the repository `docs`, indexed before the watcher starts."""
    repo = Repository("docs", tree)
    reconcile_repository(conn, repo)
    return repo


def test_a_burst_of_edits_creates_deletes_and_renames(
    conn: Connection, clean_database: Database, tree: Path, repo: Repository
) -> None:
    kept = sentence_ids(conn, "guide/p10.md")
    with RunningWatcher(clean_database, repo):
        for i in range(5):
            (tree / "guide" / f"p{i}.md").write_text(_doc(i, f"edited{i}"))
        for i in range(20, 25):
            (tree / "guide" / f"p{i}.md").write_text(_doc(i, "new"))
        for i in range(5, 8):
            (tree / "guide" / f"p{i}.md").unlink()
        (tree / "guide" / "p10.md").rename(tree / "moved.md")
        (tree / "guide" / "p11.md").rename(tree / "guide" / "p11-renamed.md")
        (tree / "drafts" / "secret.md").write_text("# Secret\n\nIgnored by git.\n")
        (tree / "notes.txt").write_text("not markdown")
        wait_until(lambda: equals_fresh_index(conn, tree))
        assert sentence_ids(conn, "moved.md") == kept
        shutil.move(tree / "guide", tree / "handbook")  # a folder moved: one event for many documents
        wait_until(lambda: equals_fresh_index(conn, tree))
        assert "handbook/p12.md" in snapshot(conn, "docs")
    lexical_stats_are_exact(conn)


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


def test_a_branch_switch_of_many_files(conn: Connection, clean_database: Database, repo_dir: Path) -> None:
    for i in range(300):
        (repo_dir / f"f{i}.md").write_text(_doc(i))
    _git(repo_dir, "init", "-q", "-b", "main")
    _git(repo_dir, "add", "-A")
    _git(repo_dir, "commit", "-q", "-m", "main")
    _git(repo_dir, "checkout", "-q", "-b", "other")
    for i in range(0, 150):
        (repo_dir / f"f{i}.md").write_text(_doc(i, "other"))
    for i in range(150, 200):
        (repo_dir / f"f{i}.md").unlink()
    for i in range(300, 350):
        (repo_dir / f"f{i}.md").write_text(_doc(i, "added"))
    for i in range(200, 220):
        (repo_dir / f"f{i}.md").rename(repo_dir / f"r{i}.md")
    _git(repo_dir, "add", "-A")
    _git(repo_dir, "commit", "-q", "-m", "other")
    _git(repo_dir, "checkout", "-q", "main")
    repo = Repository("docs", repo_dir)
    reconcile_repository(conn, repo)
    kept = sentence_ids(conn, "f210.md")
    with RunningWatcher(clean_database, repo):
        _git(repo_dir, "checkout", "-q", "other")
        wait_until(lambda: equals_fresh_index(conn, repo_dir), timeout=40)
        assert sentence_ids(conn, "r210.md") == kept
        _git(repo_dir, "checkout", "-q", "main")
        wait_until(lambda: equals_fresh_index(conn, repo_dir), timeout=40)
    lexical_stats_are_exact(conn)


def test_catch_up_at_start_keeps_ids_of_renamed_files(
    conn: Connection, clean_database: Database, tree: Path, repo: Repository
) -> None:
    kept = sentence_ids(conn, "guide/p3.md")
    (tree / "guide" / "p3.md").rename(tree / "guide" / "three.md")
    (tree / "guide" / "p4.md").write_text(_doc(4, "changed while down"))
    with RunningWatcher(clean_database, repo):
        assert equals_fresh_index(conn, tree)
        assert sentence_ids(conn, "guide/three.md") == kept


def test_an_edit_is_searchable_quickly_and_a_lost_connection_is_survived(
    conn: Connection, clean_database: Database, tree: Path
) -> None:
    repo = Repository("docs", tree)

    def samples() -> int:
        row = conn.execute("SELECT count(*) FROM ingest_samples").fetchone()
        return int(row[0]) if row else 0

    with RunningWatcher(clean_database, repo):
        started = time.monotonic()
        (tree / "guide" / "p1.md").write_text(_doc(1, "zebracorn"))
        wait_until(lambda: found(conn, "zebracorn"), timeout=5)
        assert time.monotonic() - started < 2.0
        # The edit commits first and its latency sample in a transaction of its own just after: cutting the
        # connection between the two loses the sample, so the cut waits for it.
        wait_until(lambda: samples() >= 1)
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid <> pg_backend_pid() AND datname = current_database()"
        )
        (tree / "guide" / "p2.md").write_text(_doc(2, "quokkafish"))
        wait_until(lambda: found(conn, "quokkafish"), timeout=15)
        wait_until(lambda: equals_fresh_index(conn, tree))


def test_a_poison_file_is_skipped_and_the_watcher_keeps_indexing(
    conn: Connection, clean_database: Database, tree: Path
) -> None:
    rng = random.Random(16)
    words = " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(125_000))
    folders = ["".join(rng.choices(string.ascii_letters, k=240)) for _ in range(12)]
    deep = "/".join([*folders, "deep.md"])  # a (repository, path) key too long for a B-tree entry
    with RunningWatcher(clean_database, Repository("docs", tree)):
        (tree / "guide" / "words.md").write_text(f"# Words\n\n{words}\n")
        (tree / deep).parent.mkdir(parents=True)
        (tree / deep).write_text("Nobody can store this path.\n")
        (tree / "guide" / "p1.md").write_text(_doc(1, "zebracorn"))
        wait_until(lambda: found(conn, "zebracorn") and found(conn, words[:50]))
        wait_until(lambda: skipped(conn) == {deep: "rejected"})
        (tree / "guide" / "p2.md").write_text(_doc(2, "quokkafish"))
        wait_until(lambda: found(conn, "quokkafish"))


def test_a_file_name_that_is_not_utf8_does_not_stop_the_watcher(
    conn: Connection, clean_database: Database, tree: Path
) -> None:
    with RunningWatcher(clean_database, Repository("docs", tree)):
        bad = os.path.join(os.fsencode(tree / "guide"), b"\xff\xfe-name.md")
        with open(bad, "wb") as handle:
            handle.write(b"A page under a name that is not UTF-8.\n")
        wait_until(lambda: skipped(conn) == {"guide/\\xff\\xfe-name.md": "undecodable_name"})
        (tree / "guide" / "p1.md").write_text(_doc(1, "zebracorn"))
        wait_until(lambda: found(conn, "zebracorn"))
        os.unlink(bad)
        wait_until(lambda: skipped(conn) == {})
    # leaving the block asserts the watcher ran to the end without an error


def test_a_folder_the_watcher_cannot_read_keeps_its_documents(
    conn: Connection, clean_database: Database, tree: Path, repo: Repository
) -> None:
    """The watcher runs without root's permission override (see `drop_permission_override`)."""
    before = snapshot(conn, "docs")
    with RunningWatcher(clean_database, repo, as_non_root=True):
        (tree / "guide").chmod(0)
        try:
            wait_until(lambda: len(skipped(conn)) == 20)
            assert set(skipped(conn).values()) == {"folder_unreadable"}
            (tree / "top.md").write_text(_doc(99, "zebracorn"))
            wait_until(lambda: found(conn, "zebracorn"))
            assert {k: v for k, v in snapshot(conn, "docs").items() if k != "top.md"} == before
        finally:
            (tree / "guide").chmod(0o755)
        wait_until(lambda: skipped(conn) == {})
