"""`/mcp` on the API server, through the MCP SDK's own client: the tools are listed; a search and an answer
cite the right path and line; an unanswerable question is refused plainly; a scoped key never sees another
repository through any tool; and every protection of the API holds there (401 without a key, 403 for a
foreign Origin, 400 for a foreign Host, 413 over the body limit), with bad arguments refused with the API's
own messages.

The server is the real app under uvicorn on a loopback port, over the real engine in its lexical lane with
the scripted NLI of `tests.api_support` (the shipped NLI model is too slow for a 2-core run).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.mcp.results import NOT_VERIFIED
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import (
    ALPHA_KEY,
    FULL_KEY,
    KEYS,
    VOTE_KEY,
    index_two_repositories,
    real_answering,
    served,
)
from tests.helpers import sentence_ids
from tests.mcp_support import call, http_session, run, text_of

TOOLS = {"search_docs", "ask_docs", "read_passage", "docs_status", "give_feedback"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
def server(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[str]:
    index_two_repositories(conn, tmp_path)
    answering = real_answering(clean_database, lexical_retriever)
    app = create_app(clean_database, lexical_retriever, answering, ApiSettings(keys=KEYS))
    with served(app) as url:
        yield url


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """A raw POST: the status, headers and body, whatever the status."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def _api_detail(
    url: str, path: str, params: dict[str, Any] | None = None, body: Any = None
) -> tuple[int, str]:
    """What the HTTP API answers the same input: its status and problem detail."""
    query = "?" + urllib.parse.urlencode(params, doseq=True) if params else ""
    headers = {"Authorization": f"Bearer {FULL_KEY}", "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    status, _, raw = (
        _post(url + path + query, data or b"", headers) if data else _get(url + path + query, headers)
    )
    return status, json.loads(raw).get("detail", "")


def _get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def test_the_tools_are_listed_with_a_schema_and_a_description(server: str) -> None:
    async def listed() -> Any:
        async with http_session(server, FULL_KEY) as session:
            return (await session.list_tools()).tools

    tools = run(listed)
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.description and len(tool.description) > 80, tool.name
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False


def test_a_search_and_an_answer_cite_the_path_and_line_and_a_passage_reads_around_them(
    server: str, conn: Connection
) -> None:
    async def asked() -> tuple[Any, ...]:
        async with http_session(server, FULL_KEY) as session:
            found = await call(session, "search_docs", {"query": "blessing reference files", "k": 3})
            answer = await call(session, "ask_docs", {"question": "What does stage 0 download?"})
            source = answer.structured_content["clauses"][0]["sources"][0]
            passage = await call(session, "read_passage", {"sentence_id": source["sentence_id"], "radius": 1})
            status = await call(session, "docs_status", {})
            return found, answer, passage, status

    found, answer, passage, status = run(asked)
    assert not found.is_error, text_of(found)
    top = found.structured_content["hits"][0]
    assert (top["repository"], top["path"], top["line_start"]) == ("alpha", "guide/tests.md", 5)
    assert "Blessing updates the reference files." in top["text"] and "embedded" in top
    assert "alpha/guide/tests.md:5" in text_of(found)

    assert not answer.is_error and answer.structured_content["verified"] is True
    assert answer.structured_content["status"] == "answer" and answer.structured_content["answer_id"]
    clause = answer.structured_content["clauses"][0]
    assert "prebuilt beta toolchain" in clause["clause"]
    cited = clause["sources"][0]
    assert (cited["repository"], cited["path"], cited["line_start"]) == ("alpha", "guide/build.md", 3)
    assert cited["git_commit"] is None or isinstance(cited["git_commit"], str)
    assert "[alpha/guide/build.md:3]" in text_of(answer)
    assert f"Answer id: {answer.structured_content['answer_id']}" in text_of(answer)

    build = sentence_ids(conn, "guide/build.md")
    assert passage.structured_content["id"] == cited["sentence_id"]
    assert [n["id"] for n in passage.structured_content["after"]] == [
        build["Stage 1 builds the compiler from source."]
    ]
    assert "> 3: Stage 0 downloads a prebuilt beta toolchain." in text_of(passage)

    names = [r["repository"] for r in status.structured_content["repositories"]]
    assert names == ["alpha", "beta"] and "alpha: 2 document(s)" in text_of(status)


def test_an_unanswerable_question_is_refused_plainly_with_its_closest_passages(server: str) -> None:
    async def asked() -> Any:
        async with http_session(server, FULL_KEY) as session:
            return await call(session, "ask_docs", {"question": "How tall is the lighthouse on the pier?"})

    answer = run(asked)
    assert not answer.is_error
    body = answer.structured_content
    assert body["verified"] is False and body["status"] in ("insufficient", "fail") and body["clauses"] == []
    assert body["notice"] == NOT_VERIFIED and body["answer_id"]
    assert text_of(answer).startswith(NOT_VERIFIED)


def test_feedback_is_recorded_for_an_answer_the_key_may_read(server: str) -> None:
    async def given() -> tuple[Any, Any]:
        async with http_session(server, FULL_KEY) as session:
            answer = await call(session, "ask_docs", {"question": "What does stage 0 download?"})
            source = answer.structured_content["clauses"][0]["sources"][0]["sentence_id"]
            arguments = {"answer_id": answer.structured_content["answer_id"], "helpful": True}
            return source, await call(session, "give_feedback", {**arguments, "sentence_ids": [source]})

    source, recorded = run(given)
    assert not recorded.is_error, text_of(recorded)
    assert recorded.structured_content["accepted"] == [source]
    assert text_of(recorded).startswith("Recorded feedback")


def test_a_key_that_may_not_teach_votes_only_and_naming_sentences_gets_the_apis_refusal(server: str) -> None:
    async def given() -> tuple[str, int, Any, Any]:
        async with http_session(server, FULL_KEY) as session:
            answer = await call(session, "ask_docs", {"question": "What does stage 0 download?"})
        answer_id = str(answer.structured_content["answer_id"])
        source = answer.structured_content["clauses"][0]["sources"][0]["sentence_id"]
        async with http_session(server, VOTE_KEY) as session:
            vote = await call(session, "give_feedback", {"answer_id": answer_id, "helpful": True})
            named = await call(
                session, "give_feedback", {"answer_id": answer_id, "helpful": True, "sentence_ids": [source]}
            )
        return answer_id, source, vote, named

    answer_id, source, vote, named = run(given)
    assert not vote.is_error and vote.structured_content["teaching"] is False
    assert vote.structured_content["accepted"] == [] and "does not teach" in text_of(vote)
    headers = {"Authorization": f"Bearer {VOTE_KEY}", "Content-Type": "application/json"}
    body = json.dumps({"helpful": True, "sentence_ids": [source]}).encode()
    status, _, raw = _post(f"{server}/v1/answers/{answer_id}/feedback", body, headers)
    assert status == 403
    assert named.is_error and named.structured_content == {"error": json.loads(raw)["detail"], "status": 403}


def test_a_scoped_key_never_sees_another_repository_through_any_tool(server: str, conn: Connection) -> None:
    bread = sentence_ids(conn, "recipes/bread.md")["Bake the bread at 220 degrees."]

    async def full_answer() -> str:
        async with http_session(server, FULL_KEY) as session:
            answer = await call(session, "ask_docs", {"question": "Why does bread dough rise?"})
            return str(answer.structured_content["answer_id"])

    beta_answer = run(full_answer)

    async def scoped() -> dict[str, Any]:
        async with http_session(server, ALPHA_KEY) as session:
            return {
                "search": await call(session, "search_docs", {"query": "bread dough yeast"}),
                "named": await call(session, "search_docs", {"query": "bread", "repositories": ["beta"]}),
                "ask": await call(session, "ask_docs", {"question": "Why does bread dough rise?"}),
                "passage": await call(session, "read_passage", {"sentence_id": bread}),
                "status": await call(session, "docs_status", {}),
                "feedback": await call(session, "give_feedback", {"answer_id": beta_answer, "helpful": True}),
            }

    seen = run(scoped)
    assert not seen["search"].is_error and all(
        h["repository"] == "alpha" for h in seen["search"].structured_content["hits"]
    )
    assert seen["named"].is_error and text_of(seen["named"]).startswith(
        "this key may not read repository beta"
    )
    asked = seen["ask"].structured_content
    assert asked["verified"] is False
    assert all(near["repository"] == "alpha" for near in asked["nearest"])
    assert seen["passage"].is_error and text_of(seen["passage"]) == f"no sentence {bread}"
    assert [r["repository"] for r in seen["status"].structured_content["repositories"]] == ["alpha"]
    assert seen["feedback"].is_error and seen["feedback"].structured_content["status"] == 404
    for result in seen.values():  # no text of beta's reaches the key, whatever the tool
        assert "carbon dioxide" not in json.dumps(result.structured_content) + text_of(result)


def test_bad_arguments_are_refused_with_the_messages_of_the_api(server: str) -> None:
    async def refused() -> dict[str, Any]:
        async with http_session(server, FULL_KEY) as session:
            return {
                "empty": await call(session, "ask_docs", {"question": "   "}),
                "zero": await call(session, "search_docs", {"query": "stage", "k": 0}),
                "many": await call(session, "search_docs", {"query": "stage", "k": 100_000}),
                "unknown": await call(
                    session, "search_docs", {"query": "stage", "repositories": ["nowhere"]}
                ),
                "typed": await call(session, "search_docs", {"query": "stage", "k": "five"}),
                "extra": await call(session, "ask_docs", {"question": "What?", "filters": {}}),
                "budget": await call(session, "ask_docs", {"question": "What?", "budget": "huge"}),
                "tool": await call(session, "drop_tables", {}),
            }

    results = run(refused)
    assert all(r.is_error for r in results.values()), {k: text_of(r) for k, r in results.items()}
    expected = {
        "empty": _api_detail(server, "/v1/answers", body={"question": "   "}),
        "zero": _api_detail(server, "/v1/search", {"q": "stage", "k": 0}),
        "many": _api_detail(server, "/v1/search", {"q": "stage", "k": 100_000}),
        "unknown": _api_detail(server, "/v1/search", {"q": "stage", "repo": "nowhere"}),
    }
    for name, (status, detail) in expected.items():
        assert status == 400, (name, detail)
        assert text_of(results[name]) == detail, name
        assert results[name].structured_content == {"error": detail, "status": 400}
    assert text_of(results["empty"]) == "question must not be empty"
    assert text_of(results["typed"]) == "k must be an integer, got 'five'"
    assert text_of(results["extra"]) == "ask_docs takes no argument filters"
    assert "budget" in text_of(results["budget"])
    assert text_of(results["tool"]).startswith("no tool 'drop_tables'")


def test_a_request_without_a_valid_key_is_refused_before_any_tool_runs(server: str) -> None:
    body = json.dumps(INITIALIZE).encode()
    for headers in ({}, {"Authorization": "Bearer not-a-key-of-this-server"}):
        status, response_headers, raw = _post(f"{server}/mcp", body, {**MCP_HEADERS, **headers})
        assert status == 401
        assert response_headers.get("www-authenticate", "").startswith("Bearer")
        assert json.loads(raw)["status"] == 401
    status, _, raw = _post(f"{server}/mcp", body, {**MCP_HEADERS, "Authorization": f"Bearer {FULL_KEY}"})
    assert status == 200 and json.loads(raw)["result"]["serverInfo"]["name"] == "citeline"


def test_a_foreign_origin_a_foreign_host_and_a_body_the_api_would_refuse_are_refused(server: str) -> None:
    key = {"Authorization": f"Bearer {FULL_KEY}"}
    body = json.dumps(INITIALIZE).encode()
    status, _, raw = _post(f"{server}/mcp", body, {**MCP_HEADERS, **key, "Origin": "http://evil.example"})
    assert status == 403 and json.loads(raw)["detail"] == "cross-origin requests are refused"
    status, _, _ = _post(f"{server}/mcp", body, {**MCP_HEADERS, **key, "Host": "rebind.attacker.example"})
    assert status == 400
    status, _, _ = _post(f"{server}/mcp", body, {**key, "Content-Type": "text/plain"})
    assert status == 415
    padded = {**INITIALIZE, "params": {**INITIALIZE["params"], "pad": "x" * 70_000}}  # type: ignore[dict-item]
    status, _, raw = _post(f"{server}/mcp", json.dumps(padded).encode(), {**MCP_HEADERS, **key})
    assert status == 413 and json.loads(raw)["status"] == 413
    status, _, raw = _post(f"{server}/mcp", b"[" * 40 + b"]" * 40, {**MCP_HEADERS, **key})
    assert status == 400 and json.loads(raw)["detail"] == "the request body nests deeper than 32 levels"
