"""Running daemon services in one process: signals, sd_notify, and a clean stop.

A service is anything with a `name` and an async `run(stop, ready)`: the watcher and the embedder are two;
`citeline serve` adds the HTTP API as a third to the same list. SIGTERM and SIGINT set `stop`; each service
finishes the transaction it is in and returns. A service that raises, or returns before it was asked to
stop, stops the daemon with exit status 1 and a one-line reason: a part that quietly ended would otherwise
leave a process that looks alive and does nothing, and systemd restarts only what exits non-zero.
READY=1 is sent once every service has called its `ready`,
then WATCHDOG=1 from the event loop (so a wedged loop is restarted by systemd) and a STATUS line with the
backlog figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import psycopg
import structlog

from daemon.embedding import EmbedderService
from daemon.sdnotify import Notifier
from indexer.database import Database, DatabaseError
from indexer.status import status_line

__all__ = ["EmbedderRunner", "Service", "run_services"]

log = structlog.get_logger(__name__)

STATUS_INTERVAL_SECONDS = 10.0


class Service(Protocol):
    """A long-running part of the daemon."""

    @property
    def name(self) -> str: ...

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        """Work until `stop` is set, calling `ready` once serving; raising stops the whole daemon."""
        ...


class EmbedderRunner:
    """The thread-based embedder service as an asyncio service; a fatal worker error stops the daemon."""

    __slots__ = ("_build",)

    def __init__(self, build: Callable[[Callable[[BaseException], None]], EmbedderService]) -> None:
        self._build = build

    @property
    def name(self) -> str:
        return "embed"

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        fatal: asyncio.Future[bool] = loop.create_future()

        def fail(exc: BaseException) -> None:
            if not fatal.done():
                fatal.set_exception(exc)

        def on_fatal(exc: BaseException) -> None:
            loop.call_soon_threadsafe(fail, exc)

        service = await asyncio.to_thread(self._build, on_fatal)  # loading the model takes seconds
        service.start()
        ready()
        try:
            stopped: asyncio.Future[bool] = asyncio.ensure_future(stop.wait())
            await asyncio.wait([stopped, fatal], return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if fatal.done():
                fatal.result()
        finally:
            await asyncio.to_thread(service.stop)


def _status(database: Database) -> str:
    try:
        with database.connect() as conn:
            return status_line(conn)
    except (DatabaseError, psycopg.Error):
        return "database unreachable; retrying"


async def _heartbeat(
    notifier: Notifier, database: Database, ready: asyncio.Event, stop: asyncio.Event
) -> None:
    await ready.wait()
    notifier.ready(await asyncio.to_thread(_status, database))
    log.info("ready")
    interval = min(notifier.watchdog_interval or STATUS_INTERVAL_SECONDS, STATUS_INTERVAL_SECONDS)
    status: asyncio.Task[str] | None = None
    while not stop.is_set():
        notifier.watchdog()
        if status is None:
            status = asyncio.create_task(asyncio.to_thread(_status, database))
        elif status.done():
            notifier.status(status.result())
            status = None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)


async def _run(
    services: Sequence[Service], database: Database, notifier: Notifier, shutdown: threading.Event
) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    all_ready = asyncio.Event()
    waiting = {service.name for service in services}

    def ready_for(name: str) -> Callable[[], None]:
        def ready() -> None:
            waiting.discard(name)
            if not waiting:
                all_ready.set()

        return ready

    tasks = [asyncio.create_task(s.run(stop, ready_for(s.name)), name=s.name) for s in services]
    heartbeat = asyncio.create_task(_heartbeat(notifier, database, all_ready, stop))
    done, _pending = await asyncio.wait(
        [*tasks, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED
    )
    requested = stop.is_set()
    log.info("stopping")
    notifier.stopping()
    stop.set()
    shutdown.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    heartbeat.cancel()
    await asyncio.gather(heartbeat, return_exceptions=True)
    failed = False
    for service, task, result in zip(services, tasks, results, strict=True):
        if isinstance(result, BaseException):
            failed = True
            log.error("service failed", service=service.name, error=f"{type(result).__name__}: {result}")
        elif task in done and not requested:
            failed = True
            log.error("service failed", service=service.name, error="it stopped without being asked to")
    return 1 if failed else 0


def run_services(
    services: Sequence[Service], database: Database, notifier: Notifier, shutdown: threading.Event
) -> int:
    """Run until SIGTERM/SIGINT or a service fails; returns the exit status. Sets `shutdown` on the way out
    so thread-based parts (reconnect loops, embedder jobs) stop too."""
    return asyncio.run(_run(services, database, notifier, shutdown))
