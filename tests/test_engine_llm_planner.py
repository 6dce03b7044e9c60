"""The LLM planner against a scripted fake server, for the replies a real one cannot be made to give.

Validation, one retry, the refused `response_format`, failed rounds the extractive planner answers, and the
time budget one answer's calls share. The planner against a real llama.cpp server: `tests/test_real_llm.py`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.answers import ReferenceNeed
from engine.controller import AnswerEngine, EngineConfig
from engine.crossencoders import EntailmentScores
from engine.evidence import EvidencePool
from engine.llm_client import EndpointError
from engine.llm_planner import LLMConfig, LLMPlanner, parse_plan, reserve
from engine.planning import PlannerError, PlannerState
from engine.routing import shape
from engine.search import Hit, Retriever
from indexer.database import Connection, Database
from indexer.embedder import load_embedding_model
from indexer.reconcile import Repository, reconcile_repository
from tests.fake_chat import HANG, FakeChatServer, Status


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    fake = FakeChatServer()
    yield fake
    fake.close()


@pytest.fixture
def planner(server: FakeChatServer) -> Iterator[LLMPlanner]:
    instance = LLMPlanner(LLMConfig(server.url, "tiny-model", api_key="sk-test", timeout_seconds=5))
    yield instance
    instance.close()


def _state() -> PlannerState:
    question = "When was the pianist who recorded Live at the Manne-Hole born?"
    pool = EvidencePool(None)
    texts = ["Live at the Manne-Hole is an album by pianist Les McCann.", "Les McCann was born in 1935."]
    pool.add([Hit(i, t, "docs", f"{i}.md", 1, 1, (), i, 0, None, True) for i, t in enumerate(texts, 1)], 1, 5)
    return PlannerState(question, shape(question), pool)


def _reply(**fields: Any) -> str:
    return json.dumps({"clauses": [], "queries": [], "done": False, **fields})


def test_valid_reply_becomes_a_plan_and_the_request_speaks_the_protocol(
    server: FakeChatServer, planner: LLMPlanner
) -> None:
    server.replies = [
        _reply(
            clauses=[{"text": "Les McCann recorded the album.", "need": "single", "sources": [1]}],
            queries=["Les McCann birth date"],
        )
    ]
    plan = planner.plan(_state(), final=False)
    assert [p.clause for p in plan.proposals] == ["Les McCann recorded the album."]
    assert plan.proposals[0].need is ReferenceNeed.SINGLE and plan.proposals[0].support_ids == (1,)
    assert plan.queries == ["Les McCann birth date"] and plan.done is False
    request = server.requests[0]
    assert request["model"] == "tiny-model"
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert "[2] (2.md) Les McCann was born in 1935." in request["messages"][1]["content"]
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    assert request["max_tokens"] == 384
    schema = request["response_format"]["json_schema"]["schema"]
    assert request["response_format"]["type"] == "json_schema"
    assert schema["properties"]["clauses"]["items"]["properties"]["sources"]["items"]["enum"] == [1, 2]


def test_a_server_refusing_response_format_is_asked_again_without_it_and_never_sent_it_again(
    server: FakeChatServer, planner: LLMPlanner
) -> None:
    server.replies = [
        Status(400, '{"error": {"message": "response_format json_schema is not supported"}}'),
        _reply(done=True),
        _reply(done=True),
    ]
    assert planner.plan(_state(), final=False).done is True
    assert planner.plan(_state(), final=False).done is True
    assert ["response_format" in r for r in server.requests] == [True, False, False]
    assert planner.chat.schema_refused is True


def test_a_400_that_does_not_name_the_format_is_an_endpoint_failure(
    server: FakeChatServer, planner: LLMPlanner
) -> None:
    server.replies = [Status(400, '{"error": "context length exceeded"}')]
    with pytest.raises(EndpointError, match="HTTP 400"):
        planner.plan(_state(), final=False)
    assert planner.chat.schema_refused is False


def test_malformed_output_is_retried_once_with_the_error(server: FakeChatServer, planner: LLMPlanner) -> None:
    server.replies = ["Sure! Here is the plan: clauses...", "```json\n" + _reply(done=True) + "\n```"]
    plan = planner.plan(_state(), final=False)
    assert plan.done is True
    assert len(server.requests) == 2
    retry = server.requests[1]["messages"]
    assert retry[-2]["role"] == "assistant" and "not JSON" in retry[-1]["content"]


def test_malformed_twice_fails_the_round(server: FakeChatServer, planner: LLMPlanner) -> None:
    server.replies = ['{"clauses": "none"}', '{"clauses": [], "queries": [], "done": "yes"}', _reply()]
    with pytest.raises(PlannerError, match="malformed planner output twice"):
        planner.plan(_state(), final=False)
    assert len(server.requests) == 2  # no third try


def test_http_failure_is_a_planner_error_and_the_answer_asks_the_endpoint_no_more(
    server: FakeChatServer, planner: LLMPlanner
) -> None:
    server.replies = [503, _reply(done=True)]
    state = _state()
    with pytest.raises(PlannerError, match="chat completion failed"):
        planner.plan(state, final=False)
    with pytest.raises(PlannerError, match="budget"):
        planner.plan(state, final=False)  # the same answer's next round
    assert len(server.requests) == 1
    assert planner.plan(_state(), final=False).done is True  # the next answer asks again


def test_a_hanging_endpoint_fails_the_call_when_the_budget_is_spent(server: FakeChatServer) -> None:
    server.replies = [HANG]
    hurried = LLMPlanner(LLMConfig(server.url, "tiny-model", budget_seconds=0.5))
    try:
        with pytest.raises(EndpointError, match="timed out"):
            hurried.plan(_state(), final=False)
    finally:
        hurried.close()


def test_the_budget_counts_from_the_question_so_a_slow_start_leaves_the_model_less(
    server: FakeChatServer,
) -> None:
    server.replies = [_reply(done=True), _reply(done=True)]
    planner = LLMPlanner(LLMConfig(server.url, "tiny-model", budget_seconds=5))
    late = _state()
    late.started = time.monotonic() - 4  # 5 s less the 1.25 s kept for verifying: spent before the call
    early = _state()
    try:
        with pytest.raises(PlannerError, match="budget of 5 s for this answer is spent"):
            planner.plan(late, final=False)
        assert server.requests == []
        assert planner.plan(early, final=False).done is True
        assert early.planner_deadline == pytest.approx(early.started + 5 - reserve(5))
    finally:
        planner.close()
    assert reserve(10) == 1.5 and reserve(2) == 0.5  # a small budget keeps three quarters for the model


@pytest.mark.parametrize(
    ("reply", "final", "error"),
    [
        (_reply(queries=["a", "b", "c", "d"]), False, "at most 3"),
        (_reply(queries=["more please"]), True, "final round"),
        (_reply(clauses=[{"text": "x", "sources": [99]}]), False, "not evidence ids"),
        (_reply(clauses=[{"text": "x", "need": "some"}]), False, "unknown need"),
        (_reply(clauses=[{"text": " "}]), False, "non-empty"),
        ("[1, 2]", False, "JSON object"),
    ],
)
def test_validation_rules(reply: str, final: bool, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_plan(reply, _state(), final=final)


def test_final_round_offers_no_queries(server: FakeChatServer, planner: LLMPlanner) -> None:
    server.replies = [_reply(clauses=[{"text": "Les McCann was born in 1935.", "sources": [2]}])]
    plan = planner.plan(_state(), final=True)
    assert plan.done is True and plan.queries == []
    prompt = server.requests[0]["messages"][1]["content"]
    assert "final round" in prompt and "at most 3" not in prompt
    server.replies = [_reply()]
    planner.plan(_state(), final=False)
    assert "at most 3 specific queries" in server.requests[1]["messages"][1]["content"]


def test_llm_plans_run_through_the_loop_and_a_failed_round_is_planned_extractively(
    server: FakeChatServer, planner: LLMPlanner, clean_database: Database, conn: Connection, repo_dir: Path
) -> None:
    (repo_dir / "jazz.md").write_text(
        "# Les McCann\n\nLive at the Manne-Hole is an album by pianist Les McCann.\n\n"
        "## Life\n\nLes McCann was born in 1935 in Lexington.\n"
    )
    reconcile_repository(conn, Repository("docs", repo_dir))
    ids = dict(conn.execute("SELECT text, id FROM sentences").fetchall())
    album, born = (
        ids["Live at the Manne-Hole is an album by pianist Les McCann."],
        ids["Les McCann was born in 1935 in Lexington."],
    )
    server.replies = [
        "not json at all",
        "still not json",  # round 1 fails: malformed twice
        _reply(
            clauses=[
                {"text": "Live at the Manne-Hole is an album by Les McCann.", "sources": [album]},
                {"text": "Les McCann was born in 1936.", "sources": [born]},  # unsupported number
            ],
            queries=["Les McCann birth"],
        ),
        _reply(clauses=[{"text": "Les McCann was born in 1935.", "sources": [born]}], done=True),
    ]
    embedder = load_embedding_model()
    retriever = Retriever(clean_database, embedder)
    try:
        engine = AnswerEngine(
            clean_database,
            retriever,
            embedder,
            entailment=ContainsNLI(),
            planner=planner,
            config=EngineConfig(store=False),
        )
        result = engine.answer("When was the pianist who recorded Live at the Manne-Hole born?")
    finally:
        retriever.close()
    assert result.trace[0].planner_error is not None and "malformed" in result.trace[0].planner_error
    assert result.trace[0].planned_by == "extractive"  # the failed round was planned without the model
    assert all(t.planned_by is None for t in result.trace[1:])
    clauses = [c.clause for c in result.clauses]
    assert "Les McCann was born in 1935." in clauses
    assert not any("1936" in c for c in clauses)
    rejected = {r.clause: r.reason for t in result.trace for r in t.rejected}
    assert "coverage" in rejected["Les McCann was born in 1936."]
    assert len(server.requests) == 4


class ContainsNLI:
    """Scripted NLI for the loop test: entailed when the hypothesis's long words are all in the premise.

    Numbers are ignored on purpose, as a lenient real model might: the coverage stage must catch them.
    """

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[EntailmentScores]:
        out = []
        for premise, hypothesis in pairs:
            words = set(premise.lower().replace(".", "").split())
            needed = {w for w in hypothesis.lower().replace(".", "").split() if len(w) > 3 and w.isalpha()}
            out.append(
                EntailmentScores(0.9, 0.05, 0.05) if needed <= words else EntailmentScores(0.1, 0.8, 0.1)
            )
        return out
