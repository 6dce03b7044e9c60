"""Where a running `citeline serve` / `citeline api` is, so that `citeline search` and `ask` go through it.

A serving process writes `server.json` into its data dir (`RECORD`): its pid, the URL it serves on, and a
digest of the database it serves (never the URL itself, which may hold a password). It removes the file when
it stops; a process killed outright leaves it behind, so a reader trusts a record only while its pid is alive,
its database is the reader's, and the server answers `/healthz` within a fraction of a second.

It also leaves a note of its data dir and URL in the user's own state folder (`servers_dir`), so that a
command run against another data dir (a second terminal without `CITELINE_DATA_DIR`) can say where the
running server's index is. The notes are only ever printed, never connected to.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "RECORD",
    "RunningServer",
    "ServerRecord",
    "database_digest",
    "find_server",
    "other_servers",
    "recorded_server",
    "servers_dir",
    "sigterm_unwinds",
]

RECORD = "server.json"
"""The file name of the record, in the data dir."""
PROBE_SECONDS = 0.5
"""How long a reader waits for `/healthz` before answering on its own."""


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """A serving process: its pid, its base URL, and the digest of its database."""

    pid: int
    url: str
    database: str


@dataclass(frozen=True, slots=True)
class RunningServer:
    """A serving process as its note in `servers_dir` names it: where its data dir is, and its URL."""

    pid: int
    url: str
    data_dir: Path


def servers_dir() -> Path:
    """Where serving processes note their data dir: `$XDG_STATE_HOME/citeline/servers`, else
    `~/.local/state/citeline/servers` (the user's own, so no other user can plant a note there)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "citeline" / "servers"


def database_digest(database_url: str | None, data_dir: Path) -> str:
    """Which database a process uses, comparable and safe to write down: a digest of its configured URL, or
    of the embedded server's folder when none is configured."""
    where = database_url or f"embedded:{(data_dir / 'pgdata').resolve()}"
    return hashlib.sha256(where.encode()).hexdigest()[:32]


def _loopback(host: str) -> str:
    """The address a local client reaches a server listening on `host` by."""
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


@contextmanager
def recorded_server(data_dir: Path, host: str, port: int, database: str) -> Iterator[ServerRecord]:
    """Record this process as the server for `data_dir` while the block runs; the record is removed after
    it (only if it is still this process's)."""
    name = f"[{host}]" if ":" in host and not host.startswith("[") else _loopback(host)
    record = ServerRecord(os.getpid(), f"http://{name}:{port}", database)
    path = data_dir / RECORD
    data_dir.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{record.pid}.tmp")
    temporary.write_text(json.dumps({"pid": record.pid, "url": record.url, "database": record.database}))
    temporary.replace(path)
    note = _note(record, data_dir)
    try:
        yield record
    finally:
        with contextlib.suppress(OSError, ValueError):
            if _read(path) == record:
                path.unlink()
        if note is not None:
            note.unlink(missing_ok=True)


def _note(record: ServerRecord, data_dir: Path) -> Path | None:
    """Note this server's data dir and URL in `servers_dir`; None when that folder cannot be written (the
    server runs all the same)."""
    try:
        folder = servers_dir()
        folder.mkdir(parents=True, exist_ok=True)
        note = folder / f"{record.pid}.json"
        body = {"pid": record.pid, "url": record.url, "data_dir": str(data_dir.resolve())}
        note.write_text(json.dumps(body))
    except OSError:
        return None
    return note


def other_servers(data_dir: Path) -> list[RunningServer]:
    """The live serving processes noted in `servers_dir` whose data dir is not `data_dir`, by data dir; notes
    of processes that are gone are ignored."""
    found = []
    try:
        notes = sorted(servers_dir().glob("*.json"))
    except OSError:
        return []
    mine = data_dir.resolve()
    for note in notes:
        try:
            body = json.loads(note.read_text())
            server = RunningServer(int(body["pid"]), str(body["url"]), Path(str(body["data_dir"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if server.data_dir != mine and _alive(server.pid):
            found.append(server)
    return sorted(found, key=lambda s: (str(s.data_dir), s.pid))


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises `SystemExit` (status 143) in the block, so its `finally` clauses run (the record is
    removed): uvicorn, having drained on SIGTERM, raises it again with the handler it found."""

    def unwind(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _read(path: Path) -> ServerRecord | None:
    try:
        body = json.loads(path.read_text())
        return ServerRecord(int(body["pid"]), str(body["url"]), str(body["database"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_server(
    data_dir: Path, database: str, token: str | None = None, probe_seconds: float = PROBE_SECONDS
) -> ServerRecord | None:
    """The server recorded in `data_dir` when it serves `database`, its process is alive and it answers
    `/healthz` within `probe_seconds` (with `token` as the bearer key, when given); else None."""
    record = _read(data_dir / RECORD)
    if record is None or record.database != database or not _alive(record.pid):
        return None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(record.url + "/healthz", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=probe_seconds) as response:
            return record if response.status == 200 else None
    except (OSError, ValueError):
        return None
