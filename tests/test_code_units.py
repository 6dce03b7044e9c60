"""Code blocks are units of their own by default, on a real PostgreSQL: the lexical lane finds their flags,
each knows the sentence that introduces it, re-indexing keeps unchanged blocks' ids, a change of parse
options re-reads unchanged files, and an index from schema version 6 is upgraded."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.search import Retriever, SearchMode, bm25_search
from indexer.database import Connection, Database
from indexer.markdown import CodeMode
from indexer.reconcile import IndexOptions, Repository, reconcile_repository
from indexer.schema import available_migrations
from tests.helpers import lexical_stats_are_exact, old_index_with_a_document, sentence_ids

RELOAD = """# Configuration

Prometheus can reload its configuration at runtime.

To reload the configuration, send this request:

```sh
curl -X POST http://localhost:9090/-/reload
```

The endpoint needs a flag:

```
./prometheus --web.enable-lifecycle --storage.tsdb.retention.time=15d
```

## Environment

Set the variable before the start.

    export PROMETHEUS_RETENTION=15d
"""

CURL = "curl -X POST http://localhost:9090/-/reload"
FLAG = "./prometheus --web.enable-lifecycle --storage.tsdb.retention.time=15d"


def _index(conn: Connection, root: Path, mode: CodeMode = CodeMode.BLOCK) -> None:
    reconcile_repository(conn, Repository("docs", root), IndexOptions(code_mode=mode))


def _top(conn: Connection, query: str) -> str:
    hits = bm25_search(conn, query, 3)
    return hits[0].text if hits else ""


@pytest.mark.parametrize(
    "query",
    ["--web.enable-lifecycle", "web.enable-lifecycle", "enable lifecycle", "tsdb retention time"],
)
def test_a_code_blocks_flag_is_found_by_lexical_search(conn: Connection, repo_dir: Path, query: str) -> None:
    (repo_dir / "reload.md").write_text(RELOAD)
    _index(conn, repo_dir)
    assert _top(conn, query) == FLAG


def test_an_env_var_and_a_command_are_found(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "reload.md").write_text(RELOAD)
    _index(conn, repo_dir)
    assert _top(conn, "PROMETHEUS_RETENTION") == "export PROMETHEUS_RETENTION=15d"
    assert _top(conn, "curl reload") == CURL
    lexical_stats_are_exact(conn)


def test_code_is_not_indexed_in_skip_mode(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "reload.md").write_text(RELOAD)
    _index(conn, repo_dir, CodeMode.SKIP)
    assert CURL not in sentence_ids(conn, "reload.md")
    assert "To reload the configuration, send this request:" in sentence_ids(conn, "reload.md")


def test_a_block_knows_its_introducing_sentence(clean_database: Database, repo_dir: Path) -> None:
    (repo_dir / "reload.md").write_text(RELOAD)
    with clean_database.connect() as conn:
        _index(conn, repo_dir)
        ids = sentence_ids(conn, "reload.md")
    retriever = Retriever(clean_database, None)
    try:
        hits = {h.text: h for h in retriever.search("reload curl lifecycle", 10, mode=SearchMode.LEXICAL)}
    finally:
        retriever.close()
    assert hits[CURL].kind == "code"
    assert hits[CURL].intro_sentence_id == ids["To reload the configuration, send this request:"]
    assert hits[FLAG].intro_sentence_id == ids["The endpoint needs a flag:"]
    assert hits[CURL].to_dict()["kind"] == "code"
    prose = hits["To reload the configuration, send this request:"]
    assert (prose.kind, prose.intro_sentence_id) == ("sentence", None)


def test_an_indented_block_after_a_paragraph_is_introduced_by_it(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "reload.md").write_text(RELOAD)
    _index(conn, repo_dir)
    row = conn.execute(
        "SELECT i.text FROM sentences c JOIN sentences i"
        " ON i.document_id = c.document_id AND i.ordinal = c.intro_ordinal WHERE c.text = %s",
        ("export PROMETHEUS_RETENTION=15d",),
    ).fetchone()
    assert row == ("Set the variable before the start.",)


def test_reindexing_a_changed_block_keeps_the_unchanged_ones(conn: Connection, repo_dir: Path) -> None:
    path = repo_dir / "reload.md"
    path.write_text(RELOAD)
    _index(conn, repo_dir)
    before = sentence_ids(conn, "reload.md")
    edited = RELOAD.replace("Prometheus can reload", "Intro.\n\nPrometheus can reload").replace(
        "retention.time=15d", "retention.time=30d"
    )
    path.write_text(edited)
    _index(conn, repo_dir)
    after = sentence_ids(conn, "reload.md")
    assert after[CURL] == before[CURL], "an unchanged block that only moved keeps its id"
    assert FLAG not in after
    assert after[FLAG.replace("15d", "30d")] not in before.values()
    intro = conn.execute(
        "SELECT i.id FROM sentences c JOIN sentences i"
        " ON i.document_id = c.document_id AND i.ordinal = c.intro_ordinal WHERE c.id = %s",
        (after[CURL],),
    ).fetchone()
    assert intro == (after["To reload the configuration, send this request:"],), "the link moved with it"
    lexical_stats_are_exact(conn)


def test_changing_the_code_mode_reads_unchanged_files_again(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "reload.md").write_text(RELOAD)
    _index(conn, repo_dir, CodeMode.SKIP)
    prose = sentence_ids(conn, "reload.md")
    _index(conn, repo_dir, CodeMode.BLOCK)
    now = sentence_ids(conn, "reload.md")
    assert CURL in now
    assert all(now[text] == sid for text, sid in prose.items()), "prose rows keep their ids"
    _index(conn, repo_dir, CodeMode.SKIP)
    assert sentence_ids(conn, "reload.md") == prose
    lexical_stats_are_exact(conn)


def test_an_index_an_older_parser_wrote_reads_unchanged_files_again(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "faq.md").write_text("# FAQ {#faq}\n\nAsk away.\n")
    _index(conn, repo_dir)
    ids = sentence_ids(conn, "faq.md")
    # What a parser before PARSER_VERSION 2 wrote: the anchor in the heading path, another fingerprint.
    conn.execute("UPDATE sentences SET heading_path = ARRAY['FAQ {#faq}']")
    conn.execute("UPDATE repositories SET index_options = 'code=block'")
    _index(conn, repo_dir)
    paths = conn.execute("SELECT DISTINCT heading_path FROM sentences WHERE kind <> 'heading'").fetchall()
    assert paths == [(["FAQ"],)]
    assert sentence_ids(conn, "faq.md") == ids, "the sentence diff keeps every row and id"
    lexical_stats_are_exact(conn)


def test_upgrading_gives_old_code_rows_their_parts(database: Database) -> None:
    with old_index_with_a_document(database, 6, "reload.md") as conn:
        conn.execute(
            "INSERT INTO sentences (document_id, ordinal, kind, text, norm_hash, heading_path, line_start,"
            " line_end, tsv, token_count) SELECT 1, 0, 'code', %s, '\\x00', '{}', 1, 1, t,"
            " citeline_token_count(t) FROM to_tsvector('english', citeline_lexical_text('{}', %s)) t",
            (FLAG, FLAG),
        )
        assert _top(conn, "tsdb retention") == ""
        for upgrade in (m for m in available_migrations() if m.version > 6):
            conn.execute(upgrade.sql.encode("utf-8"))
        assert _top(conn, "tsdb retention") == FLAG
        lexical_stats_are_exact(conn)
