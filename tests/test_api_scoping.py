"""Repository-scoped keys on every route: a key for `alpha` never sees a sentence, document, answer or status
of `beta`, whatever it asks for, and asking for `beta` by name is refused."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import (
    ALPHA_KEY,
    BETA_KEY,
    FULL_KEY,
    KEYS,
    client_for,
    index_two_repositories,
    real_answering,
)

ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
BETA = {"Authorization": f"Bearer {BETA_KEY}"}
FULL = {"Authorization": f"Bearer {FULL_KEY}"}


@pytest.fixture
def client(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[TestClient]:  # type: ignore[type-arg]
    index_two_repositories(conn, tmp_path)
    settings = ApiSettings(keys=KEYS, protect_probes=True)
    with client_for(
        clean_database, lexical_retriever, real_answering(clean_database, lexical_retriever), settings
    ) as test_client:
        yield test_client


def _beta_sentence(conn: Connection) -> int:
    row = conn.execute(
        "SELECT s.id FROM sentences s JOIN documents d ON d.id = s.document_id"
        " WHERE d.path = 'recipes/bread.md'"
        " ORDER BY s.ordinal DESC LIMIT 1"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_search_is_limited_to_the_keys_repositories(client: TestClient) -> None:  # type: ignore[type-arg]
    assert client.get("/v1/search", params={"q": "bread"}, headers=FULL).json()["hits"]
    assert client.get("/v1/search", params={"q": "bread"}, headers=BETA).json()["hits"]
    for lane in ("hybrid", "lexical", "vector"):
        hits = client.get("/v1/search", params={"q": "bread", "lane": lane}, headers=ALPHA).json()["hits"]
        assert hits == [], lane
    alpha_hits = client.get("/v1/search", params={"q": "stage"}, headers=ALPHA).json()["hits"]
    assert alpha_hits and {h["repository"] for h in alpha_hits} == {"alpha"}
    refused = client.get("/v1/search", params={"q": "bread", "repo": "beta"}, headers=ALPHA)
    assert refused.status_code == 403 and "beta" in refused.json()["detail"]
    both = client.get("/v1/search", params={"q": "bread", "repo": ["alpha", "beta"]}, headers=ALPHA)
    assert both.status_code == 403


def test_sentences_and_documents_of_other_repositories_are_not_found(
    client: TestClient,  # type: ignore[type-arg]
    conn: Connection,
) -> None:
    beta_id = _beta_sentence(conn)
    assert client.get(f"/v1/sentences/{beta_id}", headers=BETA).status_code == 200
    assert client.get(f"/v1/sentences/{beta_id}", headers=ALPHA).status_code == 404
    document = {"repo": "beta", "path": "recipes/bread.md"}
    assert client.get("/v1/documents", params=document, headers=BETA).status_code == 200
    assert client.get("/v1/documents", params=document, headers=ALPHA).status_code == 404
    alpha_first = client.get(
        "/v1/documents", params={"repo": "alpha", "path": "guide/build.md"}, headers=ALPHA
    )
    assert alpha_first.status_code == 200
    neighbour_ids = {
        n["id"]
        for n in client.get(
            f"/v1/sentences/{alpha_first.json()['sentences'][-1]['id']}", headers=ALPHA
        ).json()["before"]
    }
    assert beta_id not in neighbour_ids


def test_status_shows_only_the_keys_repositories(client: TestClient) -> None:  # type: ignore[type-arg]
    alpha = client.get("/v1/status", headers=ALPHA).json()
    assert [r["repository"] for r in alpha["repositories"]] == ["alpha"]
    assert alpha["total"]["documents"] == 2
    full = client.get("/v1/status", headers=FULL).json()
    assert [r["repository"] for r in full["repositories"]] == ["alpha", "beta"]


def test_answers_are_asked_and_read_within_the_scope(client: TestClient) -> None:  # type: ignore[type-arg]
    bread = {"question": "Why does bread dough rise?"}
    from_beta = client.post("/v1/answers", json=bread, headers=BETA).json()
    assert from_beta["status"] == "answer"
    assert from_beta["filters"]["repositories"] == ["beta"]
    from_alpha = client.post("/v1/answers", json=bread, headers=ALPHA).json()
    assert from_alpha["status"] == "insufficient", "alpha's key must not find beta's evidence"
    assert (
        client.post(
            "/v1/answers", json={**bread, "filters": {"repositories": ["beta"]}}, headers=ALPHA
        ).status_code
        == 403
    )

    assert client.get(f"/v1/answers/{from_beta['id']}", headers=BETA).status_code == 200
    assert client.get(f"/v1/answers/{from_beta['id']}", headers=FULL).status_code == 200
    assert client.get(f"/v1/answers/{from_beta['id']}", headers=ALPHA).status_code == 404

    unscoped = client.post(
        "/v1/answers", json={"question": "What does stage 0 download?"}, headers=FULL
    ).json()
    assert unscoped["status"] == "answer"
    # Asked over every repository: even though it cites alpha only, a scoped key may not read it.
    assert client.get(f"/v1/answers/{unscoped['id']}", headers=ALPHA).status_code == 404
    assert client.get(f"/v1/answers/{unscoped['id']}", headers=FULL).status_code == 200


def test_operator_routes_with_scoped_keys(client: TestClient, conn: Connection) -> None:  # type: ignore[type-arg]
    assert client.get("/healthz", headers=ALPHA).status_code == 200
    conn.execute("UPDATE embedding_backlog SET enqueued_at = now() - interval '2 hours'")
    scoped = client.get("/readyz", headers=ALPHA)
    assert scoped.status_code == 503 and "repository" not in scoped.json()["detail"]
    assert "repository" in client.get("/readyz", headers=FULL).json()["detail"]


def _repositories_named(metrics_text: str) -> set[str]:
    return set(re.findall(r'repository="([^"]*)"', metrics_text))


@pytest.mark.parametrize("protect_probes", [False, True])
def test_metrics_show_a_scoped_key_only_its_repositories(
    conn: Connection,
    tmp_path: Path,
    clean_database: Database,
    lexical_retriever: Retriever,
    protect_probes: bool,
) -> None:
    index_two_repositories(conn, tmp_path)
    conn.execute(
        "INSERT INTO ingest_samples (repository_id, latency_seconds) SELECT id, 0.04 FROM repositories"
    )
    settings = ApiSettings(keys=KEYS, protect_probes=protect_probes)
    with client_for(clean_database, lexical_retriever, None, settings) as client:
        client.get("/v1/search", params={"q": "bread"}, headers=FULL)
        anonymous = client.get("/metrics")
        assert anonymous.status_code == 401, "with keys configured, /metrics needs one even for open probes"
        assert "alpha" not in anonymous.text and "beta" not in anonymous.text
        assert client.get("/healthz").status_code == (401 if protect_probes else 200)

        full = client.get("/metrics", headers=FULL)
        assert full.status_code == 200
        assert _repositories_named(full.text) == {"alpha", "beta"}

        alpha = client.get("/metrics", headers=ALPHA)
        assert alpha.status_code == 200
        assert _repositories_named(alpha.text) == {"alpha"}
        assert 'citeline_documents{repository="alpha"} 2.0' in alpha.text
        assert 'citeline_ingest_latency_seconds_count{repository="alpha"} 1.0' in alpha.text
        assert "citeline_database_up 1.0" in alpha.text, "process-wide series stay visible"
        assert 'citeline_http_request_duration_seconds_count{method="GET",route="/v1/search"' in alpha.text

        beta = client.get("/metrics", headers=BETA).text
        assert _repositories_named(beta) == {"beta"}
        assert "# TYPE citeline_documents gauge" in beta


def test_without_keys_metrics_stay_open(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    with client_for(clean_database, lexical_retriever, None, ApiSettings()) as client:
        response = client.get("/metrics")
        assert response.status_code == 200
        assert _repositories_named(response.text) == {"alpha", "beta"}
