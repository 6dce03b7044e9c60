"""Shared checks for the index tests."""

from __future__ import annotations

from indexer.database import Connection
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
    lexical = (  # before schema version 7 the lexical text had no kind
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
