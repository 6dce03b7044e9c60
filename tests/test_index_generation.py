"""The index generation moves with every committed change to sentences or vectors, once per transaction,
and with nothing else; on a real PostgreSQL with the real embedder."""

from __future__ import annotations

from pathlib import Path

from psycopg import Rollback
from psycopg.types.json import Jsonb

from engine.store import load_answer
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from indexer.embedding_queue import EmbeddingWorker
from indexer.embedding_sql import ensure_model
from indexer.generation import index_generation
from indexer.reconcile import Repository, reconcile_repository
from indexer.schema import available_migrations
from tests.helpers import database_at_version


def test_the_first_change_of_an_empty_index_moves_the_generation(conn: Connection, repo_dir: Path) -> None:
    conn.execute("SELECT setval('citeline_index_generation', 1, false)")  # as a new database has it
    conn.commit()
    assert index_generation(conn) == 0
    (repo_dir / "a.md").write_text("# A\n\nThe first sentence.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    assert index_generation(conn) == 1


def test_indexing_embedding_and_a_new_model_each_move_the_generation(
    conn: Connection, repo_dir: Path, embedder: EmbeddingModel
) -> None:
    (repo_dir / "a.md").write_text("# A\n\nThe first sentence. The second sentence.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    indexed = index_generation(conn)
    EmbeddingWorker(conn, embedder).drain()
    embedded = index_generation(conn)
    assert embedded > indexed
    (repo_dir / "a.md").write_text("# A\n\nThe first sentence.\n")  # a deletion only
    reconcile_repository(conn, Repository("docs", repo_dir))
    deleted = index_generation(conn)
    assert deleted > embedded
    ensure_model(conn, "another-model", embedder.dimension)  # empties the vectors with TRUNCATE
    assert index_generation(conn) > deleted


def test_a_transaction_moves_it_once_and_reads_or_a_rollback_do_not(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "a.md").write_text("# A\n\nOne. Two. Three.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    before = index_generation(conn)
    with conn.transaction():
        conn.execute("UPDATE sentences SET line_end = line_end")
        conn.execute("UPDATE sentences SET line_start = line_start")
    assert index_generation(conn) == before + 1
    conn.execute("SELECT count(*) FROM sentences")
    conn.commit()
    reconcile_repository(conn, Repository("docs", repo_dir))  # nothing changed on disk
    assert index_generation(conn) == before + 1
    with conn.transaction():
        conn.execute("DELETE FROM sentences")
        raise Rollback()  # the deferred trigger never runs: the change never became visible
    assert index_generation(conn) == before + 1


def test_an_answer_stored_before_generations_has_none_so_it_is_never_served_again(database: Database) -> None:
    with database_at_version(database, 9) as conn:
        body = {"question": "q", "status": "answer", "route": "fast", "budget": "mid", "clauses": []}
        row = conn.execute(
            "INSERT INTO answers (id, question, status, body) VALUES (gen_random_uuid(), 'q', 'answer', %s)"
            " RETURNING id",
            (Jsonb(body),),
        ).fetchone()
        assert row is not None
        for upgrade in (m for m in available_migrations() if m.version > 9):
            conn.execute(upgrade.sql.encode("utf-8"))
        stored = load_answer(conn, str(row[0]))
        assert stored is not None and stored.generation is None  # the engine serves only its own generation
        assert index_generation(conn) == 0
