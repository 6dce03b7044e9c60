"""The watcher service: a catch-up pass, then every batch watchfiles reports, applied within milliseconds.

watchfiles yields a batch once no new event arrived for `step_ms` (or after `max_batch_ms` of a steady
stream), so a single save is committed a few tens of milliseconds after it is written while a branch switch
arrives as a few large batches. Watching starts before the catch-up pass, so nothing changed during the
pass is missed. A lost database connection is waited out, then a full catch-up replaces whatever batches
failed meanwhile: the tree, not the event stream, is the truth. The same catch-up follows a batch that
watchfiles could not report (a file name that is not UTF-8 aborts its watcher, which is started again).

A file's own trouble (unreadable, refused by the database) is the indexer's to skip; what reaches this loop
is either a lost connection, retried for as long as it takes, or a database error that no file explains,
retried a few times and then raised. Either way the watcher never returns while it was not asked to stop:
`run` raising is how the daemon exits non-zero, so that systemd restarts it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psycopg
import structlog
from watchfiles import Change, awatch
from watchfiles._rust_notify import WatchfilesRustInternalError

from daemon.reconnect import Reconnector
from indexer.database import Connection
from indexer.reconcile import IndexOptions, Repository, RepositorySync, SyncReport
from indexer.status import record_ingest

__all__ = ["Watcher"]

log = structlog.get_logger(__name__)

Batch = tuple[set[tuple[Change, str]], float]

_WATCHER_RESTARTS = 10
"""Restarts of watchfiles in a row, each failing within a second, after which watching has failed."""
_DATABASE_RETRIES = 3
"""Attempts at a batch failing with a database error other than a lost connection, before giving up."""


def _connection_lost(exc: psycopg.Error, conn: Connection) -> bool:
    """Whether `exc` means the connection (or the server) went away, as opposed to a refused statement."""
    state = exc.sqlstate or ""
    return conn.closed or conn.broken or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def _undecodable_event(exc: BaseException) -> bool:
    """Whether watchfiles failed on a path it could not decode (its error arrives in an exception group)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_undecodable_event(inner) for inner in exc.exceptions)
    return isinstance(exc, WatchfilesRustInternalError) and "decode" in str(exc)


class Watcher:
    """Keeps the given repositories indexed while it runs; `run` is a daemon service."""

    __slots__ = (
        "_conn",
        "_lost",
        "_syncs",
        "full_scan_threshold",
        "max_batch_ms",
        "options",
        "reconnector",
        "repos",
        "step_ms",
    )

    def __init__(
        self,
        reconnector: Reconnector,
        repos: Iterable[Repository],
        options: IndexOptions,
        *,
        step_ms: int = 30,
        max_batch_ms: int = 1000,
        full_scan_threshold: int = 200,
    ) -> None:
        self.reconnector = reconnector
        self.repos = sorted(repos, key=lambda r: len(r.root.parts), reverse=True)  # innermost root first
        self.options = options
        self.step_ms = step_ms
        self.max_batch_ms = max_batch_ms
        self.full_scan_threshold = full_scan_threshold
        self._conn: Connection | None = None
        self._lost = True  # the first connection starts with a catch-up
        self._syncs: dict[str, RepositorySync] = {}

    @property
    def name(self) -> str:
        return "watch"

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        """Watch until `stop` is set; the batch being applied then is finished first."""
        batches: asyncio.Queue[Batch | None] = asyncio.Queue()
        pump = asyncio.create_task(self._pump(stop, batches))
        for _ in range(3):  # let awatch install its watches before the catch-up pass starts
            await asyncio.sleep(0)
        try:
            await asyncio.to_thread(self._apply, {}, time.monotonic())
            ready()
            while (batch := await batches.get()) is not None:
                changes, seen = batch
                await asyncio.to_thread(self._apply, self._route(changes), seen)
            if not stop.is_set():
                await pump  # raises what stopped it
                raise RuntimeError("the file watcher stopped on its own")
        finally:
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            if self._conn is not None:
                self._conn.close()

    async def _pump(self, stop: asyncio.Event, batches: asyncio.Queue[Batch | None]) -> None:
        """Feed watchfiles' batches to `run`; after a batch it could not decode, restart it and catch up."""
        roots = [str(repo.root) for repo in self.repos]
        failures = 0
        rescans: set[asyncio.Task[None]] = set()  # held so that none is collected before it runs
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    async for changes in awatch(
                        *roots,
                        stop_event=stop,
                        step=self.step_ms,
                        debounce=self.max_batch_ms,
                        ignore_permission_denied=True,
                    ):
                        batches.put_nowait((changes, time.monotonic()))
                except BaseException as exc:
                    if not _undecodable_event(exc):
                        raise
                    failures = failures + 1 if time.monotonic() - started < 1.0 else 1
                    if failures >= _WATCHER_RESTARTS:
                        raise RuntimeError(f"the file watcher keeps failing: {exc}") from exc
                    log.warning(
                        "a changed file's name is not UTF-8; catching up with the whole tree",
                        error=str(exc.exceptions[0] if isinstance(exc, BaseExceptionGroup) else exc),
                    )
                    await asyncio.sleep(min(0.05 * 2**failures, 5.0))
                    self._lost = True  # read by the next `_apply`, which this empty batch triggers
                    rescan = asyncio.create_task(self._rescan_once_watching(batches))
                    rescans.add(rescan)
                    rescan.add_done_callback(rescans.discard)
        finally:
            batches.put_nowait(None)

    @staticmethod
    async def _rescan_once_watching(batches: asyncio.Queue[Batch | None]) -> None:
        """Ask for a catch-up once the restarted watchfiles has installed its watches (its first step runs
        when the pump's loop resumes), so every change is either seen by the walk or reported after it."""
        for _ in range(3):
            await asyncio.sleep(0)
        batches.put_nowait((set(), time.monotonic()))

    def _route(self, changes: set[tuple[Change, str]]) -> dict[str, set[str]]:
        """Changed paths by repository name, relative to its root; paths outside every root are dropped."""
        routed: dict[str, set[str]] = {}
        for _change, raw in changes:
            path = Path(raw)
            for repo in self.repos:
                if path.is_relative_to(repo.root) and path != repo.root:
                    routed.setdefault(repo.name, set()).add(path.relative_to(repo.root).as_posix())
                    break
        return routed

    def _connection(self) -> Connection | None:
        if self._conn is None or self._conn.closed:
            self._conn = self.reconnector.connect()
        return self._conn

    def _apply(self, routed: dict[str, set[str]], seen: float) -> None:
        """Apply one batch (or, after start or a lost connection, catch up with every repository)."""
        failures = 0
        while not self.reconnector.stop.is_set():
            conn = self._connection()
            if conn is None:
                return
            try:
                if self._lost:
                    self._lost = False
                    self._catch_up(conn, seen)
                else:
                    for name, rels in routed.items():
                        sync = self._sync(conn, name)
                        self._record(conn, sync, sync.apply_changes(conn, rels), seen)
                return
            except psycopg.Error as exc:
                self._lost = True
                if _connection_lost(exc, conn):
                    log.warning("database connection lost; catching up once it is back", error=str(exc))
                    conn.close()
                    continue
                failures += 1
                if failures >= _DATABASE_RETRIES:
                    raise RuntimeError(f"indexing keeps failing: {type(exc).__name__}: {exc}") from exc
                log.warning("database error; catching up again", error=str(exc), attempt=failures)
                self.reconnector.stop.wait(0.5 * failures)

    def _sync(self, conn: Connection, name: str) -> RepositorySync:
        sync = self._syncs.get(name)
        if sync is None:
            repo = next(r for r in self.repos if r.name == name)
            sync = self._syncs[name] = RepositorySync(conn, repo, self.options, self.full_scan_threshold)
        return sync

    def _catch_up(self, conn: Connection, seen: float) -> None:
        """Not sampled as ingest latency: it measures downtime, not how fast a change is picked up."""
        for repo in self.repos:
            sync = self._sync(conn, repo.name)
            self._record(conn, sync, SyncReport(sync.catch_up(conn), full_scan=True), seen, sample=False)

    def _record(
        self, conn: Connection, sync: RepositorySync, report: SyncReport, seen: float, *, sample: bool = True
    ) -> None:
        latency = time.monotonic() - seen
        index = report.index
        if index.committed:
            if sample:
                record_ingest(conn, sync.repository_id, [latency] * index.committed)
            log.info(
                "synced",
                repository=sync.repo.name,
                written=index.files_written,
                deleted=index.documents_deleted,
                renamed=index.documents_renamed,
                full_scan=report.full_scan,
                latency_ms=round(latency * 1000, 1),
            )
