"""The daemon as operators run it: sd_notify messages, SIGTERM, `embed --drain` and `status --json`.

`citeline watch` runs as a real subprocess against the session's PostgreSQL with a fake NOTIFY_SOCKET;
`embed --drain` uses the tiny model test_embedder.py builds, so no real model is loaded here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from daemon.cli import main
from daemon.sdnotify import Notifier
from indexer.database import Database
from tests.test_embedder import _build_tiny_model


def _listen(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(1.0)
    return sock


def test_notifier_sends_datagrams_and_is_silent_without_a_manager(tmp_path: Path) -> None:
    sock = _listen(tmp_path / "notify")
    notifier = Notifier.from_environment(
        {"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "4000000"}
    )
    assert notifier.watchdog_interval == 2.0
    assert notifier.ready("backlog 0")
    assert sock.recv(4096) == b"READY=1\nSTATUS=backlog 0"
    assert not Notifier.from_environment({}).watchdog()
    other_pid = Notifier.from_environment({"NOTIFY_SOCKET": "x", "WATCHDOG_USEC": "5", "WATCHDOG_PID": "1"})
    assert other_pid.watchdog_interval is None


def test_watch_notifies_ready_and_stops_cleanly_on_sigterm(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "a.md").write_text("# A\n\nThe first sentence.\n")
    sock = _listen(tmp_path / "notify")
    env = {
        **os.environ,
        "CITELINE_DATABASE_URL": clean_database.url,
        "CITELINE_DATA_DIR": str(tmp_path / "data"),
        "NOTIFY_SOCKET": str(tmp_path / "notify"),
        "WATCHDOG_USEC": "400000",
        "PYTHONPATH": str(Path(__file__).parents[1]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon.cli", "watch", "--no-embed", str(repo_dir)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    messages: list[str] = []
    deadline = time.monotonic() + 30
    while not any("WATCHDOG=1" in m for m in messages) and time.monotonic() < deadline:
        try:
            messages.append(sock.recv(4096).decode())
        except TimeoutError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    assert any(m.startswith("READY=1\nSTATUS=backlog ") for m in messages), messages
    (repo_dir / "b.md").write_text("# B\n\nA platypus appears.\n")
    with clean_database.connect() as conn:
        for _ in range(100):
            if conn.execute("SELECT count(*) FROM sentences WHERE text LIKE '%platypus%'").fetchone() == (1,):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the watched edit never reached the index")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    rest = []
    while True:
        try:
            rest.append(sock.recv(4096).decode())
        except TimeoutError:
            break
    assert any("STOPPING=1" in m for m in rest)


def test_embed_drain_and_status_json(
    clean_database: Database,
    repo_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = _build_tiny_model(tmp_path)
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CITELINE_MODELS__EMBEDDER", str(model))
    monkeypatch.setenv("CITELINE_MODELS__EMBEDDER_RUNTIME", "torch")  # the recorded name, on any CPU
    (repo_dir / "a.md").write_text("# Stage\n\nThe compiler builds a stage. Tests run.\n")
    assert main(["index", str(repo_dir)]) == 0
    capsys.readouterr()
    assert main(["embed", "--drain", "--json", "--workers", "2"]) == 0
    captured = capsys.readouterr()
    drained = json.loads(captured.out)
    assert drained["embedded"] == 3 and drained["failed"] == 0 and drained["backlog"] == 0
    logged = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    last = [entry for entry in logged if entry.get("event") == "embedding finished"]
    assert [entry["backlog"] for entry in last] == [drained["backlog"]], "the log and the summary agree"
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    (repo,) = status["repositories"]
    for key in ("documents", "sentences", "backlog_size", "backlog_oldest_age_seconds", "failed_embeddings"):
        assert key in repo and key in status["total"]
    assert repo["embeddings"] == 3 and repo["backlog_size"] == 0 and repo["embedded_per_second"] > 0
    assert status["total"]["embedding_model"] == str(model.resolve())
    assert status["total"]["embedding_dimension"] == 16
