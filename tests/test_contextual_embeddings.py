"""Contextual embeddings that do not steal rank: a paraphrase finds the sentence it paraphrases first.

With the sentence before it embedded into every vector, "when is the test environment rebooted" ranked the
sentence after the staging one first, since its vector carried the staging sentence. The previous sentence
is now context only for a sentence that depends on it. Runs the shipped embedder (int8 ONNX) on a real
PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.search import vector_search
from indexer.database import Connection
from indexer.embedder import EmbeddingModel, load_embedding_model
from indexer.embedding_queue import ContextOptions, EmbeddingWorker, PreviousSentence, QueueOptions
from indexer.reconcile import Repository, reconcile_repository

_PAGE = (
    "Rotate the signing certificates every ninety days. The staging cluster restarts at midnight on Sundays."
    " Backups are copied to cold storage each night.\n"
)


@pytest.fixture(scope="module")
def model() -> EmbeddingModel:
    return load_embedding_model()


def _first_hit(conn: Connection, model: EmbeddingModel, query: str) -> str:
    hits = vector_search(conn, model.encode([query])[0], 3)
    row = conn.execute("SELECT text FROM sentences WHERE id = %s", (hits[0].sentence_id,)).fetchone()
    assert row is not None
    return str(row[0])


def test_a_paraphrase_ranks_the_sentence_it_paraphrases_first(
    conn: Connection, repo_dir: Path, model: EmbeddingModel
) -> None:
    (repo_dir / "ops.md").write_text(_PAGE, encoding="utf-8")
    reconcile_repository(conn, Repository("docs", repo_dir))
    EmbeddingWorker(conn, model, QueueOptions()).drain()
    first = _first_hit(conn, model, "when is the test environment rebooted")
    assert first == "The staging cluster restarts at midnight on Sundays."


def test_with_the_previous_sentence_always_embedded_the_next_sentence_steals_the_rank(
    conn: Connection, repo_dir: Path, model: EmbeddingModel
) -> None:
    (repo_dir / "ops.md").write_text(_PAGE, encoding="utf-8")
    reconcile_repository(conn, Repository("docs", repo_dir))
    always = QueueOptions(context=ContextOptions(previous=PreviousSentence.ALWAYS))
    EmbeddingWorker(conn, model, always).drain()
    first = _first_hit(conn, model, "when is the test environment rebooted")
    assert first == "Backups are copied to cold storage each night."
