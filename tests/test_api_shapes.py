"""The JSON shapes of the browse and status routes, field by field and in order: they are a contract.

The routes serialize the indexer's records directly, so these tests pin what a client reads: every key, its
position, and the JSON type of its value, for a sentence, a document page and the status.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import client_for, index_two_repositories

SENTENCE_KEYS = [
    "id",
    "text",
    "repository",
    "path",
    "document_id",
    "ordinal",
    "heading",
    "heading_path",
    "line_start",
    "line_end",
    "git_commit",
    "embedded",
    "before",
    "after",
    "kind",
]
NEIGHBOUR_KEYS = ["id", "text", "line_start", "line_end", "kind"]
DOCUMENT_KEYS = [
    "id",
    "repository",
    "path",
    "title",
    "git_commit",
    "indexed_at",
    "sentence_count",
    "offset",
    "sentences",
]
DOCUMENT_SENTENCE_KEYS = [
    "id",
    "ordinal",
    "kind",
    "text",
    "heading_path",
    "line_start",
    "line_end",
    "embedding",
]
REPOSITORY_STATUS_KEYS = [
    "repository",
    "documents",
    "sentences",
    "backlog_size",
    "backlog_oldest_age_seconds",
    "failed_embeddings",
    "embeddings",
    "embedded_share",
    "embedded_per_second",
    "last_change",
    "ingest_latency_p50_seconds",
    "ingest_latency_p95_seconds",
    "backlog_eta_seconds",
    "skipped_files",
    "replaced_files",
    "replaced_file_paths",
]
STATUS_TOTAL_KEYS = [
    "documents",
    "sentences",
    "backlog_size",
    "backlog_oldest_age_seconds",
    "failed_embeddings",
    "embedded_share",
    "embedded_per_second",
    "backlog_eta_seconds",
    "skipped_files",
    "replaced_files",
]


@pytest.fixture
def client(
    conn: Connection, clean_database: Database, lexical_retriever: Retriever, tmp_path: Path
) -> Iterator[Any]:
    index_two_repositories(conn, tmp_path)
    with client_for(clean_database, lexical_retriever, None) as test_client:
        yield test_client


def _sentence_id(client: Any, text_start: str) -> int:
    hits = client.get("/v1/search", params={"q": "reference files", "k": 5, "lane": "lexical"}).json()["hits"]
    return int(next(h["sentence_id"] for h in hits if h["text"].startswith(text_start)))


def test_a_sentence_has_its_keys_in_order_with_neighbours_as_objects(client: Any) -> None:
    body = client.get(f"/v1/sentences/{_sentence_id(client, 'UI tests compare')}").json()
    assert list(body) == SENTENCE_KEYS
    assert body["heading"] == " > ".join(body["heading_path"]) == "Testing > UI tests"
    assert isinstance(body["heading_path"], list) and isinstance(body["embedded"], bool)
    neighbours = body["before"] + body["after"]
    assert len(neighbours) == 4 and all(list(n) == NEIGHBOUR_KEYS for n in neighbours)
    assert [n["line_start"] for n in body["before"]] == [1, 3]


def test_a_document_page_has_its_keys_in_order_and_the_state_as_a_word(client: Any) -> None:
    params = {"repo": "alpha", "path": "guide/tests.md", "offset": 1, "limit": 2}
    body = client.get("/v1/documents", params=params).json()
    assert list(body) == DOCUMENT_KEYS
    assert body["offset"] == 1 and body["title"] == "Testing" and isinstance(body["indexed_at"], str)
    assert [list(s) for s in body["sentences"]] == [DOCUMENT_SENTENCE_KEYS] * 2
    assert [(s["ordinal"], s["embedding"]) for s in body["sentences"]] == [(1, "pending"), (2, "pending")]
    assert all(isinstance(s["heading_path"], list) for s in body["sentences"])


def test_the_status_has_its_keys_in_order(client: Any) -> None:
    body = client.get("/v1/status").json()
    assert list(body) == ["repositories", "total", "thresholds", "skipped"]
    assert body["skipped"] == []
    assert [list(r) for r in body["repositories"]] == [REPOSITORY_STATUS_KEYS] * 2
    assert list(body["total"]) == STATUS_TOTAL_KEYS
    assert body["thresholds"] == {"warn_backlog_age_seconds": 300.0, "ready_max_backlog_age_seconds": 1800.0}
