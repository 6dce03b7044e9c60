"""An LLM endpoint that is down, hangs or fails costs an answer at most the planner's budget: the extractive
planner answers the rounds the model could not, and the trace says so."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.answers import Route, Status
from engine.controller import AnswerEngine
from engine.llm_client import LLMConfig, probe_endpoint
from engine.llm_planner import LLMPlanner
from indexer.database import Connection
from indexer.embedder import EmbeddingModel
from tests.engine_support import ContainmentNLI, index_docs
from tests.fake_chat import HANG, FakeChatServer


@pytest.fixture
def indexed(conn: Connection, repo_dir: Path, embedder: EmbeddingModel) -> Path:
    return index_docs(conn, repo_dir, embedder)


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    fake = FakeChatServer()
    yield fake
    fake.close()


def _closed_port_url() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_an_unreachable_endpoint_gets_the_extractive_answer_and_a_trace_note(
    new_engine: Callable[..., AnswerEngine], indexed: Path
) -> None:
    planner = LLMPlanner(LLMConfig(_closed_port_url(), "tiny-model", budget_seconds=5))
    try:
        result = new_engine(entailment=ContainmentNLI(), planner=planner).answer("why does bread dough rise")
    finally:
        planner.close()
    assert result.status is Status.ANSWER
    assert result.clauses[0].sources[0].path == "cooking.md"
    assert result.trace[0].planner_error is not None
    assert "chat completion failed" in result.trace[0].planner_error
    assert result.trace[0].planned_by == "extractive"
    assert "planner llm:tiny-model" in result.notes


def test_a_hanging_endpoint_costs_the_answer_its_budget_and_no_more_calls(
    new_engine: Callable[..., AnswerEngine], indexed: Path, server: FakeChatServer
) -> None:
    server.replies = [HANG, HANG, HANG, HANG]
    planner = LLMPlanner(LLMConfig(server.url, "tiny-model", budget_seconds=1))
    question = "Where was the BCS title game that the team coached by Nick Saban played in held?"
    try:
        result = new_engine(entailment=ContainmentNLI(), planner=planner).answer(question)
    finally:
        planner.close()
    assert result.route is Route.REASON and len(result.trace) >= 2
    assert result.status is Status.ANSWER
    assert "timed out" in (result.trace[0].planner_error or "")
    assert all(t.planned_by == "extractive" for t in result.trace)
    assert all("budget" in (t.planner_error or "") for t in result.trace[1:])
    assert len(server.requests) == 1  # later rounds did not wait on the model again


def test_the_probe_says_whether_the_endpoint_answers(server: FakeChatServer) -> None:
    assert probe_endpoint(LLMConfig(server.url, "tiny-model")) is None
    problem = probe_endpoint(LLMConfig(_closed_port_url(), "tiny-model"))
    assert problem is not None and "unreachable" in problem
    planner = LLMPlanner(LLMConfig(server.url, "tiny-model"))
    try:
        assert planner.chat.probe() is None
    finally:
        planner.close()


def test_a_model_whose_every_clause_is_refused_leaves_the_round_to_the_extractive_planner(
    new_engine: Callable[..., AnswerEngine], indexed: Path, server: FakeChatServer, conn: Connection
) -> None:
    (bread,) = conn.execute("SELECT id FROM sentences WHERE text LIKE 'Bread dough rises%'").fetchone()
    invented = {"sources": [bread], "text": "Bread rises because of baking soda.", "need": "single"}
    server.replies = [json.dumps({"clauses": [invented], "queries": [], "done": True})] * 6
    planner = LLMPlanner(LLMConfig(server.url, "tiny-model"))
    try:
        result = new_engine(entailment=ContainmentNLI(), planner=planner).answer("why does bread dough rise")
    finally:
        planner.close()
    assert result.status is Status.ANSWER
    assert "baking soda" not in result.clauses[0].clause
    assert result.clauses[0].sources[0].sentence_id == bread
    assert result.trace[0].planned_by == "extractive"
    assert result.trace[0].planner_error == "every clause llm:tiny-model proposed was refused"
    assert any("baking soda" in r.clause for r in result.trace[0].rejected)
