"""`citeline serve` and `citeline ask` as a user runs them: real processes, real database, real models."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from indexer.database import Database

GUIDE = "# Building\n\nThe compiler is built with x.py in stages. Stage 0 downloads a beta toolchain.\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(database: Database, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CITELINE_CONFIG", None)
    env.update(CITELINE_DATABASE_URL=database.url, CITELINE_DATA_DIR=str(tmp_path / "data"))
    return env


def test_serve_indexes_embeds_answers_http_and_stops_cleanly(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "build.md").write_text(GUIDE)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon.cli", "serve", str(repo_dir), "--port", str(port)],
        env=_env(clean_database, tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        hits: list[dict[str, object]] = []
        while time.monotonic() < deadline and not hits:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/v1/search", params={"q": "beta toolchain"})
                if response.status_code == 200:
                    hits = [h for h in response.json()["hits"] if h["embedded"]]
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        assert hits, "serve indexed, embedded and served the sentence"
        assert hits[0]["text"] == "Stage 0 downloads a beta toolchain."
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()[-2000:]


def test_ask_prints_the_engine_answer(clean_database: Database, repo_dir: Path, tmp_path: Path) -> None:
    (repo_dir / "build.md").write_text(GUIDE)
    env = _env(clean_database, tmp_path)
    subprocess.run(
        [sys.executable, "-m", "daemon.cli", "index", str(repo_dir)], env=env, check=True, capture_output=True
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "daemon.cli",
            "ask",
            "What does stage 0 download?",
            "--json",
            "--budget",
            "low",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = json.loads(done.stdout)
    assert done.returncode == (0 if result["status"] == "answer" else 1)
    assert result["question"] == "What does stage 0 download?"
    assert result["status"] in {"answer", "insufficient", "fail"}
    for clause in result["clauses"]:
        assert clause["sources"], "every clause cites its sources"
        assert all(s["path"] == "build.md" for s in clause["sources"])
