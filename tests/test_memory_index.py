"""The memory's lookup by vector reads an HNSW index over the stored questions, one per embedder dimension, so
its cost barely grows with the accepted answers; it finds the question a scan finds, keeps to the caller's
repositories, and a question stored by a model of another dimension neither breaks it nor is returned."""

from __future__ import annotations

from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest

from engine.feedback import question_key
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from indexer.remembered import AcceptedAnswers, _by_vector, _literal
from tests.api_support import index_two_repositories

ASKED = "How do I refresh the expected output of UI tests?"
REWORDED = "Refreshing expected UI test output: how?"
BLESSING = "Blessing updates the reference files."
NOISE = 300


def _store(conn: Connection, question: str, vector: str, model: str) -> None:
    """An accepted answer for `question`: its sentence the live BLESSING, its question embedded as `vector`
    by `model`."""
    conn.execute(
        "WITH f AS (INSERT INTO feedback (answer_id, question, answer_status, helpful)"
        " VALUES (gen_random_uuid(), %(q)s, 'answer', true) RETURNING id)"
        " INSERT INTO accepted_answers (feedback_id, answer_id, question, question_norm, helpful,"
        " sentence_id, sentence_hash, sentence_text, path, repository_id, question_embedding,"
        " embedding_model)"
        " SELECT f.id, gen_random_uuid(), %(q)s, %(key)s, true, s.id, s.norm_hash, s.text, d.path,"
        " d.repository_id, %(v)s::vector, %(m)s"
        " FROM f, sentences s JOIN documents d ON d.id = s.document_id WHERE s.text = %(t)s",
        {"q": question, "key": question_key(question), "v": vector, "m": model, "t": BLESSING},
    )


def _random_vector(conn: Connection, dimension: int) -> str:
    row = conn.execute(
        "SELECT array_agg(random() - 0.5)::vector::text FROM generate_series(1, %s)", (dimension,)
    ).fetchone()
    assert row is not None
    return str(row[0])


def _memory(conn: Connection, embedder: EmbeddingModel) -> AcceptedAnswers:
    return AcceptedAnswers(partial(nullcontext, conn), embedder)


def _plan(conn: Connection, dimension: int, vector: str, repositories: list[str] | None) -> str:
    """The lookup's plan with scans priced out: it reads the index only if the query's words match it."""
    params: dict[str, Any] = {"repos": repositories, "prefix": None, "vector": vector, "model": "m"}
    params["limit"] = 5
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        rows = conn.execute("EXPLAIN " + _by_vector(dimension), params).fetchall()
    return "\n".join(str(r[0]) for r in rows)


def test_the_lookup_reads_an_index_of_the_embedders_dimension_and_finds_the_closest_question(
    conn: Connection, tmp_path: Path, embedder: EmbeddingModel
) -> None:
    index_two_repositories(conn, tmp_path)
    for _ in range(NOISE):
        _store(conn, "an unrelated question", _random_vector(conn, embedder.dimension), embedder.name)
    _store(conn, ASKED, _literal(embedder.encode([ASKED])[0]), embedder.name)
    memory = _memory(conn, embedder)
    vector = embedder.encode([REWORDED])[0]

    found = memory.remembered(question_key(REWORDED), vector.tolist(), None, None, 5)

    name = f"accepted_answers_question_hnsw_{embedder.dimension}"
    definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", (name,)).fetchone()
    assert definition is not None and "hnsw" in definition[0]
    assert name in _plan(conn, embedder.dimension, _literal(vector), None)
    assert name in _plan(conn, embedder.dimension, _literal(vector), ["alpha"])
    assert [r.question for r in found][:1] == [ASKED] and len(found) == 5
    assert [r.similarity for r in found] == sorted((r.similarity for r in found), reverse=True)
    assert memory.remembered(question_key(REWORDED), vector.tolist(), ["beta"], None, 5) == []


def test_a_question_stored_by_a_model_of_another_dimension_is_skipped_not_an_error(
    conn: Connection, tmp_path: Path, embedder: EmbeddingModel
) -> None:
    index_two_repositories(conn, tmp_path)
    _store(conn, ASKED, _literal(embedder.encode([ASKED])[0]), embedder.name)
    memory = _memory(conn, embedder)
    vector = embedder.encode([REWORDED])[0].tolist()
    assert [r.question for r in memory.remembered(question_key(REWORDED), vector, None, None, 5)] == [ASKED]

    _store(conn, REWORDED, _random_vector(conn, 8), "another-model")  # a replica running another embedder

    assert [r.question for r in memory.remembered(question_key(REWORDED), vector, None, None, 5)] == [ASKED]
    dims = conn.execute("SELECT vector_dims(question_embedding) FROM accepted_answers ORDER BY id").fetchall()
    assert dims == [(embedder.dimension,), (8,)]


def test_a_role_that_may_not_make_the_index_still_gets_the_closest_question_by_a_scan(
    conn: Connection, clean_database: Database, tmp_path: Path, embedder: EmbeddingModel
) -> None:
    index_two_repositories(conn, tmp_path)
    _store(conn, ASKED, _literal(embedder.encode([ASKED])[0]), embedder.name)
    name = f"accepted_answers_question_hnsw_{embedder.dimension}"
    conn.execute(f"DROP INDEX IF EXISTS {name}")
    conn.execute("DROP ROLE IF EXISTS citeline_lookup")
    try:
        conn.execute("CREATE ROLE citeline_lookup LOGIN")
    except psycopg.errors.InsufficientPrivilege:
        pytest.skip("the test database's role may not create roles")
    conn.execute("GRANT SELECT, UPDATE ON accepted_answers, sentences, repositories TO citeline_lookup")
    try:
        with psycopg.connect(clean_database.url, user="citeline_lookup", autocommit=True) as limited:
            memory = _memory(cast(Connection, limited), embedder)
            vector = embedder.encode([REWORDED])[0].tolist()
            found = memory.remembered(question_key(REWORDED), vector, None, None, 5)
        assert [r.question for r in found] == [ASKED]
        made = conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", (name,)).fetchone()
        assert made is None, "not its table: the index was not made, and the lookup scanned"
    finally:
        conn.execute("DROP OWNED BY citeline_lookup")
        conn.execute("DROP ROLE citeline_lookup")
