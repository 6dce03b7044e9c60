"""Keyword search reads code paths in prose: a path, a dotted name or an identifier is found by its parts as
well as whole, the term statistics stay exact, and an index from schema version 12 is upgraded."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.cli import main
from engine.search import bm25_search
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from indexer.schema import available_migrations
from tests.helpers import lexical_stats_are_exact, old_index_with_a_document

STORE = "On Linux, the certificates are kept in /srv/caddy-store/certs by default."
"""As indexed: the Markdown (`PAGE`) writes the path as inline code."""
ROOT = "The root certificate lives in pki/authorities/local under the data directory."
HANDLER = "The http.handlers.file_server module serves static files."
STORE_MD = STORE.replace("/srv/caddy-store/certs", "`/srv/caddy-store/certs`")
PAGE = f"# Running\n\n{STORE_MD}\n\n{ROOT}\n\n{HANDLER}\n\nThe server answers on port 443.\n"


def _top(conn: Connection, query: str) -> str:
    hits = bm25_search(conn, query, 3)
    return hits[0].text if hits else ""


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("caddy-store", STORE),
        ("caddy store", STORE),
        ("certs", STORE),
        ("/srv/caddy-store/certs", STORE),
        ("authorities", ROOT),
        ("pki", ROOT),
        ("handlers", HANDLER),
        ("file_server", HANDLER),
    ],
)
def test_a_path_or_dotted_name_in_a_sentence_is_found_by_its_parts(
    conn: Connection, repo_dir: Path, query: str, found: str
) -> None:
    (repo_dir / "running.md").write_text(PAGE)
    reconcile_repository(conn, Repository("docs", repo_dir))
    assert _top(conn, query) == found
    lexical_stats_are_exact(conn)


def test_search_on_the_command_line_finds_a_path_by_a_hyphenated_part(
    clean_database: Database,
    repo_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    (repo_dir / "running.md").write_text(PAGE)
    assert main(["index", str(repo_dir)]) == 0
    capsys.readouterr()
    assert main(["search", "caddy-store", "--lane", "lexical", "--local", "-k", "1"]) == 0
    assert "/srv/caddy-store/certs" in capsys.readouterr().out


def test_upgrading_gives_old_prose_rows_their_parts(database: Database) -> None:
    with old_index_with_a_document(database, 12, "running.md") as conn:
        conn.execute(
            "INSERT INTO sentences (document_id, ordinal, kind, text, norm_hash, heading_path, line_start,"
            " line_end, tsv, token_count) SELECT 1, 0, 'sentence', %s, '\\x00', '{}', 1, 1, t,"
            " citeline_token_count(t) FROM to_tsvector('english', citeline_lexical_text('{}', %s)) t",
            (STORE, STORE),
        )
        assert _top(conn, "caddy-store") == ""
        assert _top(conn, "certs") == ""
        for upgrade in (m for m in available_migrations() if m.version > 12):
            conn.execute(upgrade.sql.encode("utf-8"))
        assert _top(conn, "caddy-store") == STORE
        assert _top(conn, "certs") == STORE
        lexical_stats_are_exact(conn)
