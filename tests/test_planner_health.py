"""An LLM planner whose endpoint does not answer degrades the planner, not the service: `/readyz` stays ready
and says so, `citeline status` says so, and answers come from the extractive planner (never a 5xx)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.settings import ApiSettings
from daemon.cli import main
from engine.controller import AnswerEngine, EngineConfig, answer
from engine.llm_planner import LLMConfig, LLMPlanner
from engine.search import Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from tests.api_support import LOCAL, ContainmentNLI, index_two_repositories
from tests.fake_chat import FakeChatServer


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def unreachable() -> Iterator[LLMPlanner]:
    planner = LLMPlanner(LLMConfig(_closed_port_url(), "tiny-model", budget_seconds=5))
    yield planner
    planner.close()


@pytest.fixture
def indexed(conn: Connection, tmp_path: Path) -> Path:
    index_two_repositories(conn, tmp_path)
    return tmp_path


def test_an_unreachable_planner_endpoint_leaves_the_api_ready_and_answering(
    indexed: Path, clean_database: Database, lexical_retriever: Retriever, unreachable: LLMPlanner
) -> None:
    config = EngineConfig(verify=VerifyConfig(threshold=0.5))
    engine = AnswerEngine(
        clean_database,
        lexical_retriever,
        None,
        entailment=ContainmentNLI(),
        planner=unreachable,
        config=config,
        pool=lexical_retriever.pool,
    )
    app = create_app(
        clean_database, lexical_retriever, partial(answer, engine=engine), ApiSettings(), unreachable
    )
    with TestClient(app=app, base_url=LOCAL) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 200
        body = ready.json()
        assert body["ready"] is True and body["planner"] == "llm:tiny-model"
        assert "unreachable" in body["planner_degraded"] and "extractive" in body["planner_degraded"]
        response = client.post("/v1/answers", json={"question": "What does stage 0 download?"})
        assert response.status_code == 200, response.text
        answered = response.json()
        assert answered["status"] == "answer"
        assert "prebuilt beta toolchain" in answered["clauses"][0]["clause"]
        assert answered["trace"][0]["planned_by"] == "extractive"
        assert "chat completion failed" in answered["trace"][0]["planner_error"]


def test_a_reachable_planner_endpoint_is_reported_without_degradation(
    clean_database: Database, lexical_retriever: Retriever
) -> None:
    server = FakeChatServer()
    planner = LLMPlanner(LLMConfig(server.url, "tiny-model"))
    try:
        app = create_app(clean_database, lexical_retriever, None, ApiSettings(), planner)
        with TestClient(app=app, base_url=LOCAL) as client:
            body = client.get("/readyz").json()
        assert body["planner"] == "llm:tiny-model" and body["planner_degraded"] is None
    finally:
        planner.close()
        server.close()
    bare = create_app(clean_database, lexical_retriever, None, ApiSettings())
    with TestClient(app=bare, base_url=LOCAL) as client:
        assert client.get("/readyz").json()["planner"] == "extractive"


def test_status_reports_an_unreachable_planner_and_still_succeeds(
    clean_database: Database,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.setenv("CITELINE_PLANNER__KIND", "llm")
    monkeypatch.setenv("CITELINE_PLANNER__URL", _closed_port_url())
    monkeypatch.setenv("CITELINE_PLANNER__MODEL", "tiny-model")
    assert main(["status"]) == 0
    printed = capsys.readouterr().out
    assert "planner: llm tiny-model at http://127.0.0.1:" in printed and "DEGRADED" in printed
    assert main(["status", "--json"]) == 0
    planner = json.loads(capsys.readouterr().out)["planner"]
    assert planner["kind"] == "llm" and planner["reachable"] is False and "unreachable" in planner["problem"]
    monkeypatch.setenv("CITELINE_PLANNER__KIND", "extractive")
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["planner"] == {"kind": "extractive"}
