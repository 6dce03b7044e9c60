"""Connections that come back: the daemon outlives a database restart instead of dying with it.

Every long-running part asks this for a connection after a failure; it retries with backoff until the
database answers or the daemon stops. An embedded server that stays down is started again, since nothing
else would start it.
"""

from __future__ import annotations

import threading

import structlog

from indexer.database import Connection, Database, DatabaseError, open_database

__all__ = ["Reconnector"]

log = structlog.get_logger(__name__)

_RESTART_EMBEDDED_AFTER = 5


class Reconnector:
    """Hands out new connections to one database, waiting out outages; thread-safe."""

    __slots__ = ("_database", "_lock", "stop")

    def __init__(self, database: Database, stop: threading.Event) -> None:
        self._database = database
        self._lock = threading.Lock()
        self.stop = stop

    @property
    def database(self) -> Database:
        return self._database

    def connect(self, *, autocommit: bool = True) -> Connection | None:
        """A new connection, or None once the daemon is stopping."""
        delay = 0.1
        failures = 0
        while not self.stop.is_set():
            try:
                return self._database.connect(autocommit=autocommit)
            except DatabaseError as exc:
                failures += 1
                log.warning("database unreachable; retrying", error=str(exc), attempt=failures)
                if failures % _RESTART_EMBEDDED_AFTER == 0:
                    self._restart_embedded()
                self.stop.wait(delay)
                delay = min(delay * 2, 5.0)
        return None

    def _restart_embedded(self) -> None:
        embedded = self._database.embedded_dir
        if embedded is None:
            return
        with self._lock:
            try:
                self._database = open_database(None, embedded.parent)
                log.info("embedded database restarted", pgdata=str(embedded))
            except DatabaseError as exc:
                log.warning("embedded database does not start", error=str(exc))
