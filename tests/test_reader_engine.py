"""The model as reader and as query rewriter through the answer engine, on a real PostgreSQL index, against a
FAKE OpenAI-compatible server (`tests.fake_chat`) whose replies are scripted.

The fake stands in for the model only because the real 1.5B model the benches use is too slow for the suite
(seconds per call on 2 cores) and a small real one cannot be made to say NONE, a malformed reply or a given
number on demand; the reader against a real llama.cpp server is in `tests/test_real_llm.py`. Rating models
are fakes with fixed scores, so the verification rule, not a model's mood, decides each outcome.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.answers import Status
from engine.config import EngineConfig
from engine.controller import AnswerEngine
from engine.llm_client import LLMConfig, LLMRole
from engine.llm_planner import ReaderPlanner, model_planner
from engine.search import Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from tests.engine_support import ContainmentNLI, FixedRating, index_docs
from tests.fake_chat import HANG, Completion, FakeChatServer

QUESTION = "why does bread dough rise"
BREAD = "Bread dough rises because yeast produces carbon dioxide."


@pytest.fixture
def indexed(conn: Connection, repo_dir: Path, embedder: EmbeddingModel) -> Path:
    return index_docs(conn, repo_dir, embedder)


def _reader(server: FakeChatServer, **fields: object) -> ReaderPlanner:
    planner = model_planner(LLMConfig(server.url, "tiny-model", timeout_seconds=5, **fields))  # type: ignore[arg-type]
    assert isinstance(planner, ReaderPlanner)
    return planner


def _engine(
    new_engine: Callable[..., AnswerEngine],
    planner: object,
    relevance: float,
    verify: VerifyConfig | None = None,
) -> AnswerEngine:
    config = EngineConfig(store=False, verify=verify or VerifyConfig())
    return new_engine(
        entailment=ContainmentNLI(),
        relevance=FixedRating(relevance),
        answer_check=FixedRating(0.9),
        planner=planner,
        config=config,
    )


def _number_of(text: str, prompt: str) -> str:
    return next(line.split("]")[0].lstrip("[") for line in prompt.splitlines() if text in line)


def test_the_readers_choice_is_the_clause_though_the_relevance_model_rates_it_below_its_floor(
    new_engine: Callable[..., AnswerEngine], indexed: Path, chat_server: FakeChatServer
) -> None:
    extractive = _engine(new_engine, None, relevance=0.1).answer(QUESTION)
    assert extractive.status is Status.INSUFFICIENT  # the relevance floor refuses the extractive pick
    chat_server.replies = [Completion("1", (("1", math.log(0.9)), ("NONE", math.log(0.08))))]
    planner = _reader(chat_server)
    try:
        result = _engine(new_engine, planner, relevance=0.1).answer(QUESTION)
    finally:
        planner.close()
    prompt = chat_server.requests[0]["messages"][1]["content"]
    assert _number_of(BREAD, prompt) == "1", prompt
    assert chat_server.requests[0]["logprobs"] is True and "response_format" not in chat_server.requests[0]
    assert result.status is Status.ANSWER
    assert [s.text for c in result.clauses for s in c.sources] == [BREAD]
    first = result.trace[0]
    assert first.chosen_by == {BREAD: "reader"} and first.planned_by is None
    assert first.reading is not None and first.reading["reply"] == "1"
    assert first.reading["p_none"] == pytest.approx(0.08)
    assert "planner reader:tiny-model" in result.notes


def test_none_from_the_reader_holds_the_extractive_pick_to_the_declined_floors(
    new_engine: Callable[..., AnswerEngine], indexed: Path, chat_server: FakeChatServer
) -> None:
    verify = VerifyConfig(min_relevance_declined=0.6)
    assert _engine(new_engine, None, relevance=0.5, verify=verify).answer(QUESTION).status is Status.ANSWER
    chat_server.replies = ["NONE"] * 6
    planner = _reader(chat_server)
    try:
        result = _engine(new_engine, planner, relevance=0.5, verify=verify).answer(QUESTION)
    finally:
        planner.close()
    assert result.status is Status.INSUFFICIENT
    assert result.trace[0].reading is not None and result.trace[0].reading["chosen"] == []
    assert result.trace[0].planned_by is None  # a NONE is not rescued by the extractive planner
    assert "relevance 0.50" in result.trace[0].rejected[0].reason


def test_a_malformed_reading_fails_the_round_to_the_extractive_planner(
    new_engine: Callable[..., AnswerEngine], indexed: Path, chat_server: FakeChatServer
) -> None:
    chat_server.replies = ["I think passage 1 answers it."]
    planner = _reader(chat_server)
    try:
        result = _engine(new_engine, planner, relevance=0.9).answer(QUESTION)
    finally:
        planner.close()
    assert result.status is Status.ANSWER
    assert result.trace[0].planned_by == "extractive"
    assert "the reader's reply is malformed" in (result.trace[0].planner_error or "")
    assert result.trace[0].chosen_by == {BREAD: "extractive"}


def test_a_hanging_reader_costs_the_answer_its_budget_and_the_extractive_planner_answers(
    new_engine: Callable[..., AnswerEngine], indexed: Path, chat_server: FakeChatServer
) -> None:
    chat_server.replies = [HANG]
    planner = _reader(chat_server, budget_seconds=1.0)
    started = time.monotonic()
    try:
        result = _engine(new_engine, planner, relevance=0.9).answer(QUESTION)
    finally:
        planner.close()
    assert time.monotonic() - started < 5.0
    assert result.status is Status.ANSWER and result.trace[0].planned_by == "extractive"
    assert len(chat_server.requests) == 1


def test_variants_search_again_in_the_docs_words_when_the_first_round_verifies_nothing(
    clean_database: Database, lexical_retriever: Retriever, indexed: Path, chat_server: FakeChatServer
) -> None:
    chat_server.replies = ["1. bread dough rises\n2. yeast carbon dioxide"]
    planner = _reader(chat_server, role=LLMRole.REWRITER, variants=True)
    engine = AnswerEngine(
        clean_database,
        lexical_retriever,
        None,
        entailment=ContainmentNLI(),
        planner=planner,
        config=EngineConfig(store=False),
        pool=lexical_retriever.pool,
    )
    try:
        without = AnswerEngine(clean_database, lexical_retriever, None, entailment=ContainmentNLI())
        asked = "how do I get my loaf to puff up"
        assert without.answer(asked, use_store=False).status is Status.INSUFFICIENT
        result = engine.answer(asked, use_store=False)
    finally:
        planner.close()
    assert "Question: how do I get my loaf to puff up" in chat_server.requests[0]["messages"][1]["content"]
    assert result.status is Status.ANSWER
    assert [s.text for c in result.clauses for s in c.sources] == [BREAD]
    assert result.trace[1].queries == ["bread dough rises", "yeast carbon dioxide"]
    assert result.trace[1].chosen_by == {BREAD: "extractive"}
    assert "query variants: bread dough rises | yeast carbon dioxide" in result.notes


def test_a_choice_made_while_the_reader_leaned_to_none_is_held_to_the_declined_floors(
    new_engine: Callable[..., AnswerEngine], indexed: Path, chat_server: FakeChatServer
) -> None:
    verify = VerifyConfig(min_relevance_declined=0.6)
    doubtful = Completion("1", (("NONE", math.log(0.5)), ("1", math.log(0.4))))
    chat_server.replies = [doubtful, doubtful]
    outcomes = []
    for doubt in (1.01, 0.45):
        planner = _reader(chat_server, none_doubt=doubt)
        try:
            result = _engine(new_engine, planner, relevance=0.5, verify=verify).answer(QUESTION)
        finally:
            planner.close()
        outcomes.append(result.status)
    assert outcomes == [Status.ANSWER, Status.INSUFFICIENT]
