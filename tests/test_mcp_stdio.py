"""`citeline mcp` over stdio, started as a client starts it (the console script, `CITELINE_DATA_DIR` in its
environment) and driven by the MCP SDK's own client: through the running server of its data dir with the
configured key (a scoped key never widened), in its own process when no server runs, and refusing plainly
when the data dir holds no index.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.mcp.results import NOT_VERIFIED
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import ALPHA_KEY, FULL_KEY, KEYS, counted_answering, index_two_repositories, served_for
from tests.mcp_support import call, run, stdio_session, text_of


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def running(
    conn: Connection, tmp_path: Path, data_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[list[str]]:
    """A server with keys for the data dir, recorded there as `citeline serve` records itself; yields the
    questions its engine was asked."""
    index_two_repositories(conn, tmp_path)
    counted, asked = counted_answering(clean_database, lexical_retriever)
    app = create_app(clean_database, lexical_retriever, counted, ApiSettings(keys=KEYS))
    with served_for(app, data_dir, clean_database):
        yield asked


def _env(data_dir: Path, database: Database, key: str | None = None) -> dict[str, str]:
    env = {"CITELINE_DATA_DIR": str(data_dir), "CITELINE_DATABASE_URL": database.url}
    return {**env, "CITELINE_API_KEYS": key} if key else env


def test_through_the_running_server_tools_cite_path_and_line_and_refuse_what_the_api_refuses(
    running: list[str], data_dir: Path, clean_database: Database
) -> None:
    async def session_work() -> dict[str, Any]:
        async with stdio_session(_env(data_dir, clean_database, FULL_KEY)) as session:
            return {
                "tools": (await session.list_tools()).tools,
                "search": await call(session, "search_docs", {"query": "blessing reference files"}),
                "answer": await call(session, "ask_docs", {"question": "What does stage 0 download?"}),
                "unanswerable": await call(session, "ask_docs", {"question": "How tall is the lighthouse?"}),
                "empty": await call(session, "ask_docs", {"question": ""}),
                "zero": await call(session, "search_docs", {"query": "stage", "k": 0}),
            }

    seen = run(session_work)
    assert {t.name for t in seen["tools"]} == {
        "search_docs",
        "ask_docs",
        "read_passage",
        "docs_status",
        "give_feedback",
    }
    assert "alpha/guide/tests.md:5" in text_of(seen["search"])
    answer = seen["answer"].structured_content
    assert answer["verified"] is True and "[alpha/guide/build.md:3]" in text_of(seen["answer"])
    assert seen["unanswerable"].structured_content["verified"] is False
    assert text_of(seen["unanswerable"]).startswith(NOT_VERIFIED)
    assert seen["empty"].is_error and text_of(seen["empty"]) == "question must not be empty"
    assert seen["zero"].is_error and text_of(seen["zero"]) == "k must be between 1 and 1000, got 0"
    assert running == ["What does stage 0 download?", "How tall is the lighthouse?"]  # the server answered


def test_through_the_running_server_a_scoped_key_is_never_widened(
    running: list[str], data_dir: Path, clean_database: Database
) -> None:
    async def session_work() -> dict[str, Any]:
        async with stdio_session(_env(data_dir, clean_database, ALPHA_KEY)) as session:
            return {
                "search": await call(session, "search_docs", {"query": "bread dough yeast"}),
                "named": await call(session, "search_docs", {"query": "bread", "repositories": ["beta"]}),
                "status": await call(session, "docs_status", {}),
            }

    seen = run(session_work)
    assert all(h["repository"] == "alpha" for h in seen["search"].structured_content["hits"])
    assert seen["named"].is_error and text_of(seen["named"]).startswith(
        "this key may not read repository beta"
    )
    assert [r["repository"] for r in seen["status"].structured_content["repositories"]] == ["alpha"]
    for result in seen.values():
        assert "carbon dioxide" not in json.dumps(result.structured_content) + text_of(result)


def test_with_no_server_it_answers_in_its_own_process(
    conn: Connection, tmp_path: Path, data_dir: Path, clean_database: Database
) -> None:
    index_two_repositories(conn, tmp_path)

    async def session_work() -> dict[str, Any]:
        async with stdio_session(_env(data_dir, clean_database)) as session:
            status = await call(session, "docs_status", {})
            found = await call(session, "search_docs", {"query": "blessing reference files", "k": 3})
            hit = found.structured_content["hits"][0]
            passage = await call(session, "read_passage", {"sentence_id": hit["sentence_id"], "radius": 0})
            return {"status": status, "search": found, "passage": passage}

    seen = run(session_work)
    assert not seen["status"].is_error, text_of(seen["status"])
    assert [r["repository"] for r in seen["status"].structured_content["repositories"]] == ["alpha", "beta"]
    hit = seen["search"].structured_content["hits"][0]
    assert (hit["path"], hit["line_start"], hit["embedded"]) == ("guide/tests.md", 5, False)
    assert "alpha/guide/tests.md:5" in text_of(seen["search"]) and "(not embedded yet)" in text_of(
        seen["search"]
    )
    assert seen["passage"].structured_content["before"] == []


def test_a_data_dir_with_no_index_is_refused_plainly_and_no_database_is_created(tmp_path: Path) -> None:
    empty = tmp_path / "elsewhere"

    async def session_work() -> Any:
        async with stdio_session({"CITELINE_DATA_DIR": str(empty)}) as session:
            return await call(session, "docs_status", {})

    refused = run(session_work)
    assert refused.is_error
    assert f"the data dir {empty} holds no index yet" in text_of(refused)
    assert not (empty / "pgdata").exists()
