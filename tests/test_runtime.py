"""The exit status: a part of the daemon that fails or quietly ends stops it non-zero, with a reason."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from daemon.reconnect import Reconnector
from daemon.runtime import run_services
from daemon.sdnotify import Notifier
from daemon.watch import Watcher
from indexer.database import Connection, Database
from indexer.reconcile import IndexOptions, Repository


class EndsOnItsOwn:
    """A service that returns without being asked to: what the watcher did when watchfiles gave up."""

    name = "ends"

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        ready()


class RunsUntilStopped:
    name = "runs"

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        ready()
        await stop.wait()


def test_a_service_that_ends_unasked_stops_the_daemon_with_status_1(clean_database: Database) -> None:
    with capture_logs() as logs:
        status = run_services(
            [RunsUntilStopped(), EndsOnItsOwn()], clean_database, Notifier(None), threading.Event()
        )
    assert status == 1
    (failure,) = [e for e in logs if e["log_level"] == "error"]
    assert failure["service"] == "ends" and "without being asked" in failure["error"]


def test_a_database_error_no_file_explains_stops_the_watcher_instead_of_retrying_forever(
    conn: Connection, clean_database: Database, repo_dir: Path
) -> None:
    """The error comes from a trigger this test puts on the real table; psycopg files its class (54, a
    program limit) under OperationalError, as it does a lost connection."""
    (repo_dir / "a.md").write_text("One sentence.\n")
    conn.execute(
        "CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN RAISE EXCEPTION 'out of something' USING ERRCODE = '54000'; END $$"
    )
    conn.execute(
        "CREATE TRIGGER test_refuse BEFORE INSERT ON repositories FOR EACH ROW EXECUTE FUNCTION test_refuse()"
    )
    shutdown = threading.Event()
    watcher = Watcher(Reconnector(clean_database, shutdown), [Repository("docs", repo_dir)], IndexOptions())

    async def watch() -> None:
        stop, loop = asyncio.Event(), asyncio.get_running_loop()

        def give_up() -> None:  # a watcher that retries forever is stopped, and returns: the test fails
            shutdown.set()
            loop.call_soon_threadsafe(stop.set)

        timer = threading.Timer(60, give_up)
        timer.start()
        try:
            await watcher.run(stop, lambda: None)
        finally:
            timer.cancel()

    try:
        with pytest.raises(RuntimeError, match="indexing keeps failing"):
            asyncio.run(watch())
    finally:
        shutdown.set()
        conn.execute("DROP TRIGGER test_refuse ON repositories")
        conn.execute("DROP FUNCTION test_refuse()")
