"""The HTTP API on a real PostgreSQL: every route, auth on and off, limits, readiness and metrics.

Scoped keys are tested on every route in test_api_scoping.py; the OpenAPI fuzzing is test_api_schema.py.
"""

from __future__ import annotations

import uuid
from functools import partial
from pathlib import Path

import pytest

from api.settings import ApiSettings, Limits
from engine.controller import AnswerEngine, EngineConfig, answer
from engine.search import Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from indexer.staleness import unembedded_in_scope
from tests.api_support import (
    FULL_KEY,
    KEYS,
    ContainmentNLI,
    client_for,
    index_two_repositories,
    real_answering,
)

PROBLEM = "application/problem+json"


@pytest.fixture
def indexed(conn: Connection, tmp_path: Path) -> Path:
    index_two_repositories(conn, tmp_path)
    return tmp_path


def test_answer_then_stored_answer_marks_sources(
    indexed: Path, conn: Connection, clean_database: Database, lexical_retriever: Retriever
) -> None:
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering) as client:
        response = client.post("/v1/answers", json={"question": "What does stage 0 download?"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "answer"
        assert body["id"]
        clause = body["clauses"][0]
        assert "prebuilt beta toolchain" in clause["clause"]
        assert 0 < clause["confidence"] <= 1
        assert clause["sources"][0]["path"] == "guide/build.md"
        assert body["route"] in ("fast", "reason") and body["trace"]

        stored = client.get(f"/v1/answers/{body['id']}").json()
        assert stored["clauses"][0]["sources"][0]["state"] == "live"
        assert stored["fresh"] is True

        (indexed / "alpha" / "guide/build.md").write_text("# Building\n\nStage 1 builds the compiler.\n")
        reconcile_repository(conn, Repository("alpha", indexed / "alpha"))
        stale = client.get(f"/v1/answers/{body['id']}").json()
        assert stale["clauses"][0]["sources"][0]["state"] == "changed"  # the file was edited, not deleted
        assert stale["fresh"] is False


def test_a_misspelt_question_is_answered_as_read_and_the_answer_says_how_it_was_read(
    indexed: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering) as client:
        body = client.post("/v1/answers", json={"question": "What does stage 0 downlod?"}).json()
        assert body["question"] == "What does stage 0 downlod?"
        assert body["read_as"] == "What does stage 0 download?"
        assert body["status"] == "answer" and "prebuilt beta toolchain" in body["clauses"][0]["clause"]
        assert client.get(f"/v1/answers/{body['id']}").json()["read_as"] == "What does stage 0 download?"

        spelt = client.post("/v1/answers", json={"question": "What does stage 0 download?"}).json()
        assert spelt.get("read_as") is None


def test_search_sentence_document_and_status(
    indexed: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    with client_for(clean_database, lexical_retriever, None) as client:
        hits = client.get("/v1/search", params={"q": "reference files", "k": 2, "lane": "lexical"}).json()
        assert len(hits["hits"]) == 2
        top = hits["hits"][0]
        assert top["repository"] == "alpha" and top["path"] == "guide/tests.md"
        assert top["heading"] == "Testing > UI tests" and top["lanes"] == ["lexical"]
        assert client.get("/v1/search", params={"q": "reference", "lane": "vector"}).json()["hits"] == []
        assert client.get("/v1/search", params={"q": "bread", "path_prefix": "guide/"}).json()["hits"] == []

        middle = next(h for h in hits["hits"] if h["text"].startswith("UI tests compare"))
        sentence = client.get(f"/v1/sentences/{middle['sentence_id']}").json()
        assert sentence["text"] == middle["text"]
        assert sentence["line_start"] == 5 and sentence["heading"] == "Testing > UI tests"
        assert [n["text"] for n in sentence["before"]] == ["Testing", "UI tests"]
        assert sentence["after"][0]["text"] == "Run them with the test command."

        document = client.get("/v1/documents", params={"repo": "alpha", "path": "guide/tests.md"}).json()
        assert document["sentence_count"] == len(document["sentences"]) > 2
        assert {s["embedding"] for s in document["sentences"]} == {"pending"}
        page = client.get(
            "/v1/documents", params={"repo": "alpha", "path": "guide/tests.md", "offset": 1, "limit": 1}
        ).json()
        assert [s["ordinal"] for s in page["sentences"]] == [1]

        status = client.get("/v1/status").json()
        assert [r["repository"] for r in status["repositories"]] == ["alpha", "beta"]
        assert status["total"]["backlog_size"] == status["total"]["sentences"] > 0
        assert status["total"]["embedded_share"] == 0.0

        for path in (
            "/v1/sentences/999999",
            "/v1/documents?repo=alpha&path=nope.md",
            "/v1/answers/00000000-0000-0000-0000-000000000000",
        ):
            missing = client.get(path)
            assert missing.status_code == 404
            assert missing.headers["content-type"].startswith(PROBLEM)
            assert missing.json()["status"] == 404


def test_probes_page_and_schema(
    indexed: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    with client_for(clean_database, lexical_retriever, None) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json()["ready"] is True
        page = client.get("/")
        assert page.status_code == 200 and '<form id="ask-form">' in page.text
        assert client.get("/static/app.js").status_code == 200
        schema = client.get("/schema/openapi.json").json()
        assert {"/v1/answers", "/v1/search", "/v1/status", "/readyz"} <= set(schema["paths"])


def test_no_engine_is_503(indexed: Path, clean_database: Database, lexical_retriever: Retriever) -> None:
    with client_for(clean_database, lexical_retriever, None) as client:
        response = client.post("/v1/answers", json={"question": "anything"})
        assert response.status_code == 503
        assert response.headers["content-type"].startswith(PROBLEM)


def test_auth_on_every_route(indexed: Path, clean_database: Database, lexical_retriever: Retriever) -> None:
    settings = ApiSettings(keys=KEYS)
    answering = real_answering(clean_database, lexical_retriever)
    routes = [
        ("POST", "/v1/answers", {"question": "What does stage 0 download?"}),
        ("GET", "/v1/search?q=stage", None),
        ("GET", "/v1/sentences/1", None),
        ("GET", "/v1/documents?repo=alpha&path=guide/build.md", None),
        ("GET", "/v1/status", None),
    ]
    with client_for(clean_database, lexical_retriever, answering, settings) as client:
        for method, path, body in routes:
            anonymous = client.request(method, path, json=body)
            assert anonymous.status_code == 401, path
            assert anonymous.headers["content-type"].startswith(PROBLEM)
            assert anonymous.headers["www-authenticate"].startswith("Bearer")
            wrong = client.request(
                method, path, json=body, headers={"Authorization": "Bearer nope-" + "x" * 20}
            )
            assert wrong.status_code == 401, path
            basic = client.request(method, path, json=body, headers={"Authorization": "Basic abc"})
            assert basic.status_code == 401, path
            good = client.request(method, path, json=body, headers={"Authorization": f"Bearer {FULL_KEY}"})
            assert good.status_code == 200, (path, good.text)
        answer_id = client.post(
            "/v1/answers",
            json={"question": "What does stage 0 download?"},
            headers={"Authorization": f"Bearer {FULL_KEY}"},
        ).json()["id"]
        assert client.get(f"/v1/answers/{answer_id}").status_code == 401
        assert client.get(
            f"/v1/answers/{answer_id}", headers={"Authorization": f"Bearer {FULL_KEY}"}
        ).is_success
        assert client.get("/metrics").status_code == 401, "metrics name repositories: a key is needed"
        for open_path in (
            "/healthz",
            "/readyz",
            "/",
            "/static/style.css",
            "/schema/openapi.json",
        ):
            assert client.get(open_path).status_code == 200, open_path

    closed = ApiSettings(keys=KEYS, protect_probes=True)
    with client_for(clean_database, lexical_retriever, None, closed) as client:
        for probe in ("/healthz", "/readyz", "/metrics"):
            assert client.get(probe).status_code == 401, probe
            assert client.get(probe, headers={"Authorization": f"Bearer {FULL_KEY}"}).status_code == 200
        assert client.get("/").status_code == 200


def test_limits(indexed: Path, clean_database: Database, lexical_retriever: Retriever) -> None:
    limits = Limits(max_question_chars=50, max_k=5, max_body_bytes=2048, max_document_sentences=10)
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, ApiSettings(limits=limits)) as client:
        bad_requests = [
            client.post("/v1/answers", json={"question": "x" * 51}),
            client.post("/v1/answers", json={"question": "   "}),
            client.post("/v1/answers", json={"question": "a\u0000b"}),
            client.post("/v1/answers", json={"question": "ok?", "budget": "huge"}),
            client.post("/v1/answers", json={"question": "ok?", "filter": {}}),
            client.post("/v1/answers", json={"question": "ok?", "filters": {"path_prefix": "\u0000"}}),
            client.post("/v1/answers", content=b"{not json", headers={"content-type": "application/json"}),
            client.get("/v1/search", params={"q": "stage", "k": 6}),
            client.get("/v1/search", params={"q": "stage", "k": "many"}),
            client.get("/v1/search", params={"q": ""}),
            client.get("/v1/search", params={"q": "stage", "lane": "sideways"}),
            client.get("/v1/search"),
            client.get("/v1/documents", params={"repo": "alpha", "path": "guide/build.md", "limit": 11}),
            client.get("/v1/documents", params={"repo": "alpha", "path": "guide/build.md", "offset": -1}),
        ]
        for response in bad_requests:
            assert response.status_code == 400, (response.request.url, response.text)
            assert response.headers["content-type"].startswith(PROBLEM)
            assert response.json()["detail"]
        too_big = client.post("/v1/answers", json={"question": "x" * 4000})
        assert too_big.status_code == 413
        assert client.get("/v1/sentences/99999999999999999999").status_code == 404
        assert client.get("/v1/answers/not-a-uuid").status_code in (400, 404)
        assert client.get("/v1/search", params={"q": "stage", "k": 5}).status_code == 200
        assert client.post("/v1/answers", json={"question": "What does stage 0 download?"}).status_code == 200


def test_readiness_flips_when_the_backlog_ages(
    indexed: Path, conn: Connection, clean_database: Database, lexical_retriever: Retriever
) -> None:
    settings = ApiSettings(ready_max_backlog_age_seconds=300)
    with client_for(clean_database, lexical_retriever, None, settings) as client:
        assert client.get("/readyz").status_code == 200
        conn.execute(
            "UPDATE embedding_backlog SET enqueued_at = now() - interval '10 minutes'"
            " WHERE sentence_id = (SELECT min(sentence_id) FROM embedding_backlog)"
        )
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.headers["content-type"].startswith(PROBLEM)
        problem = response.json()
        assert "backlog" in problem["detail"] and "(repository alpha)" in problem["detail"]
        assert problem["backlog_oldest_age_seconds"] >= 600 and problem["max_backlog_age_seconds"] == 300
        metrics = client.get("/metrics").text
        assert 'citeline_backlog_oldest_age_seconds{repository="alpha"} 6' in metrics
        conn.execute(
            "UPDATE embedding_backlog SET failed_at = now() WHERE enqueued_at < now() - interval '5 min'"
        )
        assert client.get("/readyz").status_code == 200, "failed items no longer block readiness"


def test_unreachable_database_is_503_not_500(lexical_retriever: Retriever) -> None:
    nowhere = Database("postgresql://citeline@127.0.0.1:1/citeline")
    settings = ApiSettings(database_timeout_seconds=0.3)
    with client_for(nowhere, lexical_retriever, None, settings) as client:
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "database unreachable" in ready.json()["detail"]
        for path in ("/v1/status", "/v1/sentences/1", "/v1/documents?repo=a&path=b.md"):
            response = client.get(path)
            assert response.status_code == 503, path
            assert response.headers["content-type"].startswith(PROBLEM)
        assert "citeline_database_up 0.0" in client.get("/metrics").text


def test_metrics_count_requests_clauses_and_ingest(
    indexed: Path, conn: Connection, clean_database: Database, lexical_retriever: Retriever
) -> None:
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering) as client:
        client.post("/v1/answers", json={"question": "What does stage 0 download?"})
        client.get("/v1/search", params={"q": "stage"})
        client.get("/v1/sentences/1")
        conn.execute(
            "INSERT INTO ingest_samples (repository_id, latency_seconds)"
            " SELECT id, 0.04 FROM repositories WHERE name = 'alpha'"
        )
        text = client.get("/metrics").text
        assert (
            'citeline_http_request_duration_seconds_count{method="GET",route="/v1/search",status="200"} 1.0'
            in text
        )
        assert 'route="/v1/sentences/{sentence_id}"' in text
        assert 'citeline_answers_total{route="' in text
        assert "citeline_clauses_accepted_total 1.0" in text
        assert 'citeline_ingest_latency_seconds_count{repository="alpha"} 1.0' in text
        assert 'citeline_backlog_size{repository="beta"} 3.0' in text
        again = client.get("/metrics").text
        assert 'citeline_ingest_latency_seconds_count{repository="alpha"} 1.0' in again, "observed once"


def test_a_body_that_is_not_utf8_is_a_400_on_every_route_that_takes_one(
    indexed: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering) as client:
        schema = client.get("/schema/openapi.json").json()
        with_body = [
            (method.upper(), path)
            for path, operations in schema["paths"].items()
            for method, operation in operations.items()
            if "requestBody" in operation
        ]
        assert ("POST", "/v1/answers") in with_body
        for method, path in with_body:
            response = client.request(
                method,
                path.replace("{answer_id}", str(uuid.uuid4())),  # a path that matches the route
                content=b'{"question":"\xff\xfe tests"}',
                headers={"content-type": "application/json"},
            )
            assert response.status_code == 400, (path, response.text)
            assert response.headers["content-type"].startswith(PROBLEM)
            assert "UTF-8" in response.json()["detail"]
        assert client.post("/v1/answers", json={"question": "What does stage 0 download?"}).status_code == 200


def test_an_insufficient_answer_carries_its_closest_passages_and_its_warnings(
    indexed: Path, conn: Connection, clean_database: Database, lexical_retriever: Retriever
) -> None:
    strict = AnswerEngine(
        clean_database,
        lexical_retriever,
        None,
        entailment=ContainmentNLI(),
        config=EngineConfig(verify=VerifyConfig(threshold=0.95)),  # no composite reaches it without vectors
        pool=lexical_retriever.pool,
    )
    with client_for(clean_database, lexical_retriever, partial(answer, engine=strict)) as client:
        body = client.post("/v1/answers", json={"question": "What does stage 0 download?"}).json()
        assert body["status"] == "insufficient" and body["clauses"] == []
        nearest = body["nearest"]
        assert nearest and "Stage 0 downloads a prebuilt beta toolchain." in [n["text"] for n in nearest]
        for near in nearest:
            assert set(near) >= {"path", "line_start", "heading", "text", "stage", "score", "threshold"}
            assert "link" in near
            assert near["link"] is None  # no forge known for these repositories: never a guessed one
        refused = [n for n in nearest if n["stage"] == "composite"]
        assert refused and all(n["score"] < n["threshold"] for n in refused)
        pending = unembedded_in_scope(conn)
        assert f"warning: {pending} sentences are not yet searchable by meaning" in " ".join(body["notes"])
        stored = client.get(f"/v1/answers/{body['id']}").json()
        assert stored["nearest"] == nearest, "the answer store keeps them"
