"""The LLM planner against a scripted chat-completions server: validation, one retry, failed rounds."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from engine.answers import ReferenceNeed
from engine.controller import AnswerEngine, EngineConfig
from engine.crossencoders import EntailmentScores
from engine.evidence import EvidencePool
from engine.llm_planner import LLMConfig, LLMPlanner, parse_plan
from engine.planning import PlannerError, PlannerState
from engine.routing import shape
from engine.search import Hit, Retriever
from indexer.database import Connection, Database
from indexer.embedder import load_embedding_model
from indexer.reconcile import Repository, reconcile_repository


class FakeChatServer:
    """A FAKE OpenAI-compatible chat-completions server for tests: it is not a model.

    It answers POST /v1/chat/completions with the next scripted reply (a message content string, or an int
    HTTP status to fail with) and records every request body and header, so tests can check what the
    planner sent and how it reacted to malformed output.
    """

    def __init__(self) -> None:
        self.replies: list[str | int] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                outer.requests.append(json.loads(self.rfile.read(length)))
                outer.headers.append(dict(self.headers))
                reply = outer.replies.pop(0) if outer.replies else 500
                if self.path != "/v1/chat/completions" or isinstance(reply, int):
                    self.send_response(404 if self.path != "/v1/chat/completions" else int(reply))
                    self.end_headers()
                    return
                body = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": reply}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


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


def test_http_failure_is_a_planner_error(server: FakeChatServer, planner: LLMPlanner) -> None:
    server.replies = [503]
    with pytest.raises(PlannerError, match="chat completion failed"):
        planner.plan(_state(), final=False)


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


def test_llm_plans_run_through_the_loop_and_unsupported_clauses_are_not_emitted(
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
    assert [c.clause for c in result.clauses] == [
        "Live at the Manne-Hole is an album by Les McCann.",
        "Les McCann was born in 1935.",
    ]
    assert result.clauses[1].sources[0].sentence_id == born
    rejected = {r.clause: r.reason for t in result.trace for r in t.rejected}
    assert "coverage" in rejected["Les McCann was born in 1936."]
    assert result.trace[1].queries == []  # round 2 plans on the evidence the failed round left
    assert result.trace[2].queries == ["Les McCann birth"]
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
