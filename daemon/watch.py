"""The watcher service: a catch-up pass, then every batch watchfiles reports, applied within milliseconds.

watchfiles yields a batch once no new event arrived for `step_ms` (or after `max_batch_ms` of a steady
stream), so a single save is committed a few tens of milliseconds after it is written while a branch switch
arrives as a few large batches. Watching starts before the catch-up pass, so nothing changed during the
pass is missed. A lost database connection is waited out, then a full catch-up replaces whatever batches
failed meanwhile: the tree, not the event stream, is the truth.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psycopg
import structlog
from watchfiles import Change, awatch

from daemon.reconnect import Reconnector
from daemon.sync import RepositorySync, SyncReport
from indexer.database import Connection
from indexer.reconcile import IndexOptions, Repository
from indexer.status import record_ingest

__all__ = ["Watcher"]

log = structlog.get_logger(__name__)

Batch = tuple[set[tuple[Change, str]], float]


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
        finally:
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            if self._conn is not None:
                self._conn.close()

    async def _pump(self, stop: asyncio.Event, batches: asyncio.Queue[Batch | None]) -> None:
        roots = [str(repo.root) for repo in self.repos]
        try:
            async for changes in awatch(
                *roots,
                stop_event=stop,
                step=self.step_ms,
                debounce=self.max_batch_ms,
                ignore_permission_denied=True,
            ):
                batches.put_nowait((changes, time.monotonic()))
        finally:
            batches.put_nowait(None)

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
        while not self.reconnector.stop.is_set():
            conn = self._connection()
            if conn is None:
                return
            try:
                if self._lost:
                    self._catch_up(conn, seen)
                    self._lost = False
                else:
                    for name, rels in routed.items():
                        sync = self._sync(conn, name)
                        self._record(conn, sync, sync.apply_changes(conn, rels), seen)
                return
            except psycopg.OperationalError as exc:
                log.warning("database connection lost; catching up once it is back", error=str(exc))
                self._lost = True
                conn.close()

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
            self._record(conn, sync, sync.catch_up(conn), seen, sample=False)

    def _record(
        self, conn: Connection, sync: RepositorySync, report: SyncReport, seen: float, *, sample: bool = True
    ) -> None:
        latency = time.monotonic() - seen
        if report.committed:
            if sample:
                record_ingest(conn, sync.repository_id, [latency] * report.committed)
            log.info(
                "synced",
                repository=sync.repo.name,
                written=report.written,
                deleted=report.deleted,
                renamed=report.renamed,
                full_scan=report.full_scan,
                latency_ms=round(latency * 1000, 1),
            )
