"""Applies the versioned SQL migrations in `indexer/migrations/` at start.

All pending files run in one transaction with their rows in `citeline_migrations`, under an advisory lock,
so several processes starting at once against one database apply each migration exactly once, or none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg

__all__ = ["Migration", "apply_migrations", "available_migrations"]

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x63697465  # "cite": any constant shared by every citeline process


@dataclass(frozen=True, slots=True)
class Migration:
    """One SQL file: its version number orders it."""

    version: int
    name: str
    sql: str


def available_migrations() -> list[Migration]:
    """The migrations shipped with the package, in version order."""
    found = []
    for entry in resources.files("indexer.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    return sorted(found, key=lambda m: m.version)


def apply_migrations(conn: psycopg.Connection[tuple[object, ...]]) -> list[int]:
    """Apply every migration not yet recorded; return the versions applied now."""
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS citeline_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT version FROM citeline_migrations")}
        for migration in available_migrations():
            if migration.version in done:
                continue
            conn.execute(migration.sql.encode("utf-8"))
            conn.execute(
                "INSERT INTO citeline_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied_now.append(migration.version)
    return applied_now
