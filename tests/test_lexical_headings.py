"""The lexical lane reads each sentence under its heading path, on a real PostgreSQL: fresh writes, heading
moves that keep sentence ids, and an index written by schema version 5 being upgraded."""

from __future__ import annotations

from pathlib import Path

from engine.search import bm25_search_terms, query_lexemes
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from indexer.schema import available_migrations
from tests.helpers import lexical_stats_are_exact, old_index_with_a_document, sentence_ids

DOC = """# Build cache

It lives in the target folder. Delete it to start over.

## Remote storage

Set the bucket in the config file.
"""


def _texts(conn: Connection, query: str) -> list[str]:
    """The texts of BM25's top 10 for `query`, best first. They are read by id rather than as hits: an index
    written by version 5 predates columns that a hit loads."""
    ids = [hit.sentence_id for hit in bm25_search_terms(conn, query_lexemes(conn, query), 10)]
    texts = dict(conn.execute("SELECT id, text FROM sentences WHERE id = ANY(%s)", (ids,)).fetchall())
    return [texts[i] for i in ids]


def test_a_sentence_is_found_by_its_headings_words(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "cache.md").write_text(DOC)
    reconcile_repository(conn, Repository("docs", repo_dir))
    found = _texts(conn, "build cache")
    assert "It lives in the target folder." in found, "its heading names what 'it' is"
    # The whole heading path counts: a subsection's sentence is read under its page's title too.
    assert "Set the bucket in the config file." in _texts(conn, "cache bucket")
    lexical_stats_are_exact(conn)


def test_a_moved_heading_changes_the_terms_and_keeps_the_ids(conn: Connection, repo_dir: Path) -> None:
    path = repo_dir / "cache.md"
    path.write_text(DOC)
    repo = Repository("docs", repo_dir)
    reconcile_repository(conn, repo)
    before = sentence_ids(conn, "cache.md")
    path.write_text(DOC.replace("# Build cache", "# Artifact store"))
    report = reconcile_repository(conn, repo)
    after = sentence_ids(conn, "cache.md")
    assert report.sentences_inserted == 1  # the heading itself; its sentences only moved
    assert after["It lives in the target folder."] == before["It lives in the target folder."]
    assert "It lives in the target folder." in _texts(conn, "artifact store")
    assert "It lives in the target folder." not in _texts(conn, "build cache")
    lexical_stats_are_exact(conn)


def test_upgrading_rebuilds_terms_and_statistics(database: Database) -> None:
    """Rows written as version 5 wrote them (the sentence's own words) are re-read under their headings."""
    with old_index_with_a_document(database, 5, "cache.md") as conn:
        rows = [
            ("heading", "Build cache", []),
            ("sentence", "It lives in the target folder.", ["Build cache"]),
        ]
        for ordinal, (kind, text, headings) in enumerate(rows):
            conn.execute(
                "INSERT INTO sentences (document_id, ordinal, kind, text, norm_hash, heading_path,"
                " line_start, line_end, tsv, token_count) SELECT 1, %s, %s, %s, '\\x00', %s, 1, 1, t,"
                " (SELECT count(*) FROM unnest(t) u, unnest(u.positions) p)"
                " FROM to_tsvector('english', %s) t",
                (ordinal, kind, text, headings, text),
            )
        assert not _texts(conn, "build cache")[1:], "version 5 finds the heading only"
        upgrade = next(m for m in available_migrations() if m.version == 6)
        conn.execute(upgrade.sql.encode("utf-8"))
        assert "It lives in the target folder." in _texts(conn, "build cache")
        lexical_stats_are_exact(conn)
