"""`[embedding]` and `[watch] separate_process`: daemon parts as child processes, stopped with the daemon.

`citeline watch` runs as a real subprocess against the session's PostgreSQL, with the tiny model of
test_embedder.py (no real model is loaded); the child is found among the daemon's real children.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from indexer.database import Database
from tests.test_embedder import _build_tiny_model


def _wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _child_env(database: Database, tmp_path: Path, **settings: str) -> dict[str, str]:
    """This environment with the daemon pointed at `database`, the tiny model, a separate embedder process
    and `settings` (`CITELINE_*` names without the prefix)."""
    return {
        **os.environ,
        "CITELINE_DATABASE_URL": database.url,
        "CITELINE_DATA_DIR": str(tmp_path / "data"),
        "CITELINE_MODELS__EMBEDDER": str(_build_tiny_model(tmp_path)),
        "CITELINE_EMBEDDING__SEPARATE_PROCESS": "true",
        **{f"CITELINE_{name}": value for name, value in settings.items()},
        "PYTHONPATH": str(Path(__file__).parents[1]),
    }


def _start_watch(database: Database, repo_dir: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = _child_env(database, tmp_path, EMBEDDING__NICE="7")
    return subprocess.Popen([sys.executable, "-m", "daemon.cli", "watch", str(repo_dir)], env=env)


def _embedder_child(daemon: subprocess.Popen[bytes]) -> psutil.Process:
    found: list[psutil.Process] = []

    def started() -> bool:
        """A child that exits (or is a zombie not yet reaped) while it is read is skipped, not an error."""
        assert daemon.poll() is None, "the daemon died"
        found[:] = []
        for child in psutil.Process(daemon.pid).children():
            with contextlib.suppress(psutil.NoSuchProcess):
                if "embed" in child.cmdline():
                    found.append(child)
        return bool(found)

    assert _wait_until(started, 60), "no embedder child process"
    return found[0]


def _gone(child: psutil.Process) -> bool:
    """The child has exited, or is a zombie that only its (dead) parent's reaper still holds."""
    try:
        return not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _all_embedded(database: Database) -> bool:
    with database.connect() as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM sentences), (SELECT count(*) FROM sentence_embeddings),"
            " (SELECT count(*) FROM embedding_backlog)"
        ).fetchone()
    assert row is not None
    return bool(row[0] > 0 and row[1] == row[0] and row[2] == 0)


def test_the_child_embeds_at_lower_priority_and_stops_with_the_daemon(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "a.md").write_text("# Stage\n\nThe compiler builds a stage. Tests run.\n")
    daemon = _start_watch(clean_database, repo_dir, tmp_path)
    try:
        child = _embedder_child(daemon)
        assert child.nice() == psutil.Process().nice() + 7
        assert _wait_until(lambda: _all_embedded(clean_database), 120), "the child drained the backlog"
        (repo_dir / "b.md").write_text("# Tests\n\nThe tests run the compiler.\n")
        assert _wait_until(lambda: _all_embedded(clean_database), 60), "and embeds what the watcher adds"
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
        assert _wait_until(lambda: _gone(child), 10)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


def test_the_child_does_not_outlive_a_killed_daemon(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "a.md").write_text("# Stage\n\nThe compiler builds a stage.\n")
    daemon = _start_watch(clean_database, repo_dir, tmp_path)
    child = _embedder_child(daemon)
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(timeout=30)
    assert _wait_until(lambda: _gone(child), 60)


def test_serve_with_watcher_and_embedder_in_child_processes_indexes_embeds_and_serves(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    """`citeline serve` with `[watch] separate_process` and `[embedding] separate_process`: an edit made
    after the start is indexed by the watcher child, embedded by the embedder child, and served by the API."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    env = _child_env(clean_database, tmp_path, WATCH__SEPARATE_PROCESS="true")
    env.pop("CITELINE_CONFIG", None)
    (repo_dir / "a.md").write_text("# Stage\n\nThe compiler builds a stage.\n")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "daemon.cli", "serve", str(repo_dir), "--port", str(port)], env=env
    )
    try:
        children: list[str] = []

        def both_children() -> bool:
            """Both children run their commands (a child listed between fork and exec still shows `serve`)."""
            assert daemon.poll() is None, "serve died"
            children[:] = []
            for child in psutil.Process(daemon.pid).children():
                with contextlib.suppress(psutil.NoSuchProcess):
                    children.append(" ".join(child.cmdline()))
            watcher = any("watch --no-embed" in c for c in children)
            return watcher and any(c.endswith(" embed") for c in children)

        assert _wait_until(both_children, 60), children
        assert any("watch --no-embed" in c for c in children) and any(c.endswith(" embed") for c in children)
        (repo_dir / "b.md").write_text("# Tests\n\nThe tests run the compiler.\n")

        def served_embedded() -> bool:
            try:
                response = httpx.get(
                    f"http://127.0.0.1:{port}/v1/search", params={"q": "tests run", "lane": "lexical"}
                )
            except httpx.TransportError:
                return False
            hits = response.json()["hits"] if response.status_code == 200 else []
            return any(h["text"] == "The tests run the compiler." and h["embedded"] for h in hits)

        assert _wait_until(served_embedded, 120), "the edit was indexed, embedded and served"
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
