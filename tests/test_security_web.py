"""The API as a web page would reach it: no other site can use it through a visitor's browser (a rebound host
name, a text/plain POST, a foreign Origin), every response carries the security headers, the page runs no
inline script and keeps its key for the session only, open probes name no repository to a caller that may
not read it, and a request nested too deep is a 400."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.ops import STATIC_DIR
from api.settings import ApiSettings
from api.web_guard import allowed_host_names
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import (
    ALPHA_KEY,
    FULL_KEY,
    KEYS,
    LOCAL,
    client_for,
    index_two_repositories,
    real_answering,
    served,
)

QUESTION = {"question": "What does stage 0 download?"}


@pytest.fixture
def client(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[TestClient]:  # type: ignore[type-arg]
    """No keys, bound to 127.0.0.1: the local default."""
    index_two_repositories(conn, tmp_path)
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, ApiSettings()) as test_client:
        yield test_client


def _stored_answers(conn: Connection) -> int:
    row = conn.execute("SELECT count(*) FROM answers").fetchone()
    return int(row[0]) if row else 0


def test_a_rebound_host_name_is_refused(client: TestClient) -> None:  # type: ignore[type-arg]
    rebound = client.get("/v1/search", params={"q": "bread"}, headers={"Host": "rebind.attacker.example"})
    assert rebound.status_code == 400
    assert "bread" not in rebound.text.lower()
    for host in ("localhost:8750", "127.0.0.1:8750", "[::1]:8750", "LOCALHOST"):
        assert client.get("/v1/search", params={"q": "bread"}, headers={"Host": host}).status_code == 200, (
            host
        )


def test_allowed_hosts_add_names_and_a_wildcard_bind_checks_none() -> None:
    names = allowed_host_names("127.0.0.1", ("docs.internal",))
    assert names is not None and {"docs.internal", "localhost", "127.0.0.1", "[::1]"} <= names
    lan = allowed_host_names("10.0.0.5", ())
    assert lan == frozenset({"10.0.0.5"})
    assert allowed_host_names("0.0.0.0", ()) is None
    assert allowed_host_names("127.0.0.1", ("*",)) is None


def test_a_post_that_is_not_json_is_refused_and_stores_nothing(
    client: TestClient,  # type: ignore[type-arg]
    conn: Connection,
) -> None:
    before = _stored_answers(conn)
    for content_type in (
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ):
        response = client.post(
            "/v1/answers",
            content=b'{"question": "What does stage 0 download?"}',
            headers={"Content-Type": content_type},
        )
        assert response.status_code == 415, content_type
    assert _stored_answers(conn) == before
    assert client.post("/v1/answers", json=QUESTION).status_code == 200


def test_a_foreign_origin_is_refused_and_the_own_origin_answered(
    client: TestClient,  # type: ignore[type-arg]
    conn: Connection,
) -> None:
    before = _stored_answers(conn)
    for origin in ("https://evil.example", "null", "http://127.0.0.1:9999"):
        response = client.post("/v1/answers", json=QUESTION, headers={"Origin": origin})
        assert response.status_code == 403, origin
        assert client.get("/v1/search", params={"q": "bread"}, headers={"Origin": origin}).status_code == 403
    assert _stored_answers(conn) == before
    assert client.post("/v1/answers", json=QUESTION, headers={"Origin": LOCAL}).status_code == 200


def test_every_response_carries_the_security_headers(client: TestClient) -> None:  # type: ignore[type-arg]
    for path in ("/", "/docs", "/static/app.js", "/v1/status", "/healthz", "/no-such-page"):
        headers = client.get(path).headers
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert "frame-ancestors 'none'" in headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["x-frame-options"] == "DENY", path
    refused = client.get("/healthz", headers={"Host": "evil.example"})
    assert refused.status_code == 400 and refused.headers["x-frame-options"] == "DENY"


def test_the_pages_run_no_inline_script_and_keep_no_key_past_the_session() -> None:
    for page in STATIC_DIR.glob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html, re.IGNORECASE), page.name
        assert not re.search(r"\son[a-z]+\s*=", html, re.IGNORECASE), page.name
        assert not re.search(r"\sstyle\s*=|<style", html, re.IGNORECASE), page.name
        assert "javascript:" not in html.lower(), page.name
    scripts = "".join(p.read_text(encoding="utf-8") for p in STATIC_DIR.glob("*.js"))
    assert "localStorage" not in scripts and "sessionStorage" in scripts


def test_open_probes_name_no_repository_the_caller_may_not_read(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    conn.execute(
        "UPDATE embedding_backlog b SET enqueued_at = now() - interval '2 hours' FROM sentences s"
        " JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id"
        " WHERE s.id = b.sentence_id AND r.name = 'beta'"
    )
    with client_for(clean_database, lexical_retriever, None, ApiSettings(keys=KEYS)) as client:
        for headers in (
            {},
            {"Authorization": f"Bearer {ALPHA_KEY}"},
            {"Authorization": "Bearer wrong-key-0000000000"},
        ):
            response = client.get("/readyz", headers=headers)
            assert response.status_code == 503, headers
            detail = response.json()["detail"]
            assert "beta" not in detail and "repository" not in detail, (headers, detail)
            assert "backlog" in detail
        full = client.get("/readyz", headers={"Authorization": f"Bearer {FULL_KEY}"})
        assert "(repository beta)" in full.json()["detail"]


@pytest.mark.parametrize("depth", [100, 1000, 10_000])
def test_deeply_nested_json_is_a_400(client: TestClient, depth: int) -> None:  # type: ignore[type-arg]
    body = '{"question": "What does stage 0 download?", "filters": ' + "[" * depth + "]" * depth + "}"
    response = client.post("/v1/answers", content=body.encode(), headers={"Content-Type": "application/json"})
    assert response.status_code in (400, 413), response.text
    assert client.get("/healthz").status_code == 200


def _raw(base: str, request: bytes) -> bytes:
    """Send `request` whole, then read the answer to its end (the server closes after refusing)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (b"GET /v1/search?q=" + b"a" * 200_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"414"),
        (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 200_000 + b"\r\n\r\n", b"431"),
    ],
)
def test_an_oversized_request_head_is_answered_not_reset(
    request_head: bytes, status: bytes, clean_database: Database, lexical_retriever: Retriever
) -> None:
    with served(create_app(clean_database, lexical_retriever, None, ApiSettings())) as base:
        answer = _raw(base, request_head)
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:100]
        assert _raw(
            base, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        ).startswith(b"HTTP/1.1 200")
