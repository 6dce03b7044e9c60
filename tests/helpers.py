"""Shared checks for the index tests."""

from __future__ import annotations

from indexer.database import Connection


def lexical_stats_are_exact(conn: Connection) -> None:
    """The trigger-kept BM25 statistics equal a recomputation from the sentences themselves."""
    kept = dict(conn.execute("SELECT term, df FROM lexical_terms").fetchall())
    fresh = dict(
        conn.execute(
            "SELECT u.lexeme, count(*) FROM sentences s, unnest(s.tsv) u GROUP BY u.lexeme"
        ).fetchall()
    )
    assert kept == fresh
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
