"""Helpers for tests that run citeline as a fleet of processes against a shared server: processes with
their own data dirs, bounded waits that name what they waited for, and the HTTP calls a client makes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil
import psycopg
import pytest

from indexer.embedding_sql import LOCK_CLASS

__all__ = [
    "Fleet",
    "get",
    "indexed_documents",
    "leases_held_by",
    "metric",
    "scalar",
    "search_ids",
    "wait_for",
]

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], seconds: float = 240.0) -> T:
    """Poll `probe` until it returns something other than None (or False); fail naming `what`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = probe()
        if value is not None and value is not False:
            return value
        time.sleep(0.05)
    pytest.fail(f"gave up after {seconds:.0f} s waiting for {what}")


class Fleet:
    """citeline processes, each as if on its own host: its own data dir, the shared server's URL."""

    def __init__(self, url: str, root: Path) -> None:
        self.url = url
        self.root = root
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def env(self, name: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
        env.update(
            CITELINE_DATABASE_URL=self.url,
            CITELINE_DATA_DIR=str(self.root / f"host-{name}"),
            CITELINE_EMBEDDING__BATCH_SIZE="16",
            CITELINE_MODELS__TORCH_THREADS="1",
        )
        return env

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        with (self.root / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "daemon.cli", *args], env=self.env(name), stdout=log, stderr=log
            )
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")[-3000:]

    def alive(self, name: str) -> bool:
        """True while `name` runs; once it has exited, fails the test with its log."""
        process = self.processes[name]
        if process.poll() is not None:
            pytest.fail(f"{name} exited with {process.returncode}: {self.log(name)}")
        return True

    def healthy(self, name: str, port: int) -> bool:
        """Whether replica `name` answers /healthz (failing the test if it died)."""
        self.alive(name)
        response = get(port, "/healthz")
        return response is not None and response.status_code == 200

    def kill(self, name: str) -> None:
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def scalar(conn: psycopg.Connection[Any], sql: str, params: tuple[Any, ...] = ()) -> int:
    row = conn.execute(sql, params).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def indexed_documents(conn: psycopg.Connection[Any]) -> int:
    """Documents in the index; 0 until the first process to start has applied the migrations."""
    try:
        return scalar(conn, "SELECT count(*) FROM documents")
    except psycopg.errors.UndefinedTable:
        return 0


def leases_held_by(conn: psycopg.Connection[Any], pid: int, pg_port: int) -> int:
    """Backlog items leased right now by the worker(s) of OS process `pid` (found by its client ports)."""
    try:
        connections = psutil.Process(pid).net_connections("tcp")
    except psutil.Error:
        return 0
    return scalar(
        conn,
        "SELECT count(*) FROM embedding_backlog q WHERE q.claimed_by IS NOT NULL AND q.claimed_worker IN"
        " (SELECT l.objid::bigint::integer FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        "  WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objsubid = 2 AND a.client_port = ANY(%s))",
        (LOCK_CLASS, [c.laddr.port for c in connections if c.raddr and c.raddr.port == pg_port]),
    )


def get(port: int, path: str, **params: Any) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", params=params, timeout=30)
    except httpx.TransportError:
        return None


def search_ids(port: int, query: str, lane: str = "hybrid") -> list[int] | None:
    response = get(port, "/v1/search", q=query, k=10, lane=lane)
    if response is None or response.status_code != 200:
        return None
    return [int(hit["sentence_id"]) for hit in response.json()["hits"]]


def metric(port: int, name: str) -> float | None:
    """The value of gauge `name` for the repository `docs` on a replica's /metrics."""
    response = get(port, "/metrics")
    if response is None or response.status_code != 200:
        return None
    for line in response.text.splitlines():
        if line.startswith(f'{name}{{repository="docs"}}'):
            return float(line.rsplit(" ", 1)[1])
    return None
