"""Shared checks for the index tests."""

from __future__ import annotations

import ctypes
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import psycopg

from engine.search import Hit
from indexer.database import Connection, Database
from indexer.schema import available_migrations
from indexer.store import TEXT_SEARCH_CONFIG


def lexical_stats_are_exact(conn: Connection) -> None:
    """The trigger-kept BM25 statistics equal a recomputation from the sentences themselves, and each row's
    terms are what the writer computes from its kind, heading path and text now."""
    kept = dict(conn.execute("SELECT term, df FROM lexical_terms").fetchall())
    fresh = dict(
        conn.execute(
            "SELECT u.lexeme, count(*) FROM sentences s, unnest(s.tsv) u GROUP BY u.lexeme"
        ).fetchall()
    )
    assert kept == fresh
    unit_text = conn.execute("SELECT to_regproc('citeline_unit_lexical_text') IS NOT NULL").fetchone()
    lexical = (  # before schema version 9 the lexical text had no kind
        "citeline_unit_lexical_text(kind, heading_path, text)"
        if unit_text and unit_text[0]
        else "citeline_lexical_text(heading_path, text)"
    )
    stale = conn.execute(
        f"SELECT count(*) FROM sentences WHERE tsv <> to_tsvector('{TEXT_SEARCH_CONFIG}', {lexical})"
        " OR token_count <> (SELECT count(*) FROM unnest(tsv) u, unnest(u.positions) p)"
    ).fetchone()
    assert stale == (0,), "every row's terms are those of its kind, heading path and text"
    stats = conn.execute("SELECT sentence_count, token_total FROM lexical_stats").fetchone()
    actual = conn.execute("SELECT count(*), coalesce(sum(token_count), 0) FROM sentences").fetchone()
    assert stats == actual


def sentence_ids(conn: Connection, path: str) -> dict[str, int]:
    """Sentence text to id for one document."""
    rows = conn.execute(
        "SELECT s.text, s.id FROM sentences s JOIN documents d ON d.id = s.document_id WHERE d.path = %s",
        (path,),
    ).fetchall()
    return dict(rows)


_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
_CAP_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_permission_override() -> None:
    """Drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the calling thread (Linux credentials are per
    thread), so it meets file modes as a non-root user would; threads it starts inherit the loss."""
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _CapHeader(_CAP_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    mask = ~((1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH)) & 0xFFFFFFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


T = TypeVar("T")


def without_permission_override(work: Callable[[], T]) -> T:
    """Run `work` where `chmod 000` is honoured: in a thread without root's two permission-override
    capabilities when the tests run as root (they do in CI), directly otherwise. Nothing is faked: the
    operating system itself refuses the listing or the read."""
    if os.geteuid() != 0:
        return work()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            drop_permission_override()
            outcome.append(work())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


@contextmanager
def database_at_version(database: Database, version: int) -> Iterator[Connection]:
    """A separate database on the test server, migrated up to `version` only, dropped afterwards: what an
    index written by that version looks like before the next migrations upgrade it."""
    name = f"citeline_v{version}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        url = psycopg.conninfo.make_conninfo(database.url, dbname=name)
        with psycopg.connect(url, autocommit=True) as conn:
            for migration in available_migrations():
                if migration.version <= version:
                    conn.execute(migration.sql.encode("utf-8"))
            yield conn
    finally:
        with psycopg.connect(database.url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@contextmanager
def old_index_with_a_document(database: Database, version: int, path: str) -> Iterator[Connection]:
    """`database_at_version` holding the repository `docs` (id 1) and its document `path` (id 1), for a
    test to add the rows that version wrote and then run the later migrations."""
    with database_at_version(database, version) as conn:
        conn.execute("INSERT INTO repositories (name, root) VALUES ('docs', '/docs')")
        conn.execute(
            "INSERT INTO documents (repository_id, path, content_hash, size_bytes, mtime_ns)"
            " VALUES (1, %s, 'h', 1, 1)",
            (path,),
        )
        yield conn


def sentence_id_of(conn: Connection, text: str) -> int:
    """The id of the indexed sentence that says `text`."""
    row = conn.execute("SELECT id FROM sentences WHERE text = %s", (text,)).fetchone()
    assert row is not None, text
    return int(row[0])


def hit_of(conn: Connection, text: str) -> Hit:
    """The indexed sentence that says `text`, as search returns it (no score, not from memory)."""
    r = conn.execute(
        "SELECT s.id, s.text, rp.name, d.path, s.line_start, s.line_end, s.heading_path, d.id, s.ordinal"
        " FROM sentences s JOIN documents d ON d.id = s.document_id"
        " JOIN repositories rp ON rp.id = d.repository_id WHERE s.text = %s",
        (text,),
    ).fetchone()
    assert r is not None, text
    return Hit(r[0], r[1], r[2], r[3], r[4], r[5], tuple(r[6]), r[7], r[8], None, False)
