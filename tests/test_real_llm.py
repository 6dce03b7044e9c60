"""The LLM planner and the LLM reader end to end against a real llama.cpp server on the packaged small model:
through `citeline ask` (a real subprocess), through the API, and the reader's request (plain text with the
first token's log-probabilities) as the real server answers it. Skipped as a whole, in one line saying how to
run them, without the `llm` extra, except where CITELINE_REQUIRE_REAL_LLM is set (CI, and
`CITELINE_REQUIRE_REAL_LLM=1 make test`, which installs the extra), where a missing extra fails them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest

from api.app import create_app
from api.settings import ApiSettings
from engine.controller import AnswerEngine, EngineConfig, answer
from engine.llm_client import ChatClient, LLMRole
from engine.llm_planner import LLMConfig, LLMPlanner, ReaderPlanner
from engine.reader import ALTERNATIVES, READ_TOKENS, Passage, p_none, reader_messages
from engine.search import Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import ContainmentNLI, served
from tests.real_llm_support import MODEL, extra_missing, llama_server

if extra_missing() is not None and not os.environ.get("CITELINE_REQUIRE_REAL_LLM"):
    pytest.skip(str(extra_missing()), allow_module_level=True)  # one line in the summary, not one a test

pytestmark = pytest.mark.real_llm

GATEWAY = (
    "# Gateway\n\n## Configuration\n\n"
    "The gateway reads its configuration from /etc/gateway/gateway.toml when it starts. "
    "To reload the gateway configuration, send SIGHUP to the gateway process. "
    "A change of the listen port needs a restart.\n"
)
QUESTION = "How do I reload the gateway configuration?"
PATIENT = 120.0
"""The model's time budget per answer here: these tests check what the model replies, not how fast, and a
CPU shared with other work can slow the small model past the default 10 s."""


@pytest.fixture(scope="session")
def llm_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real server, started once for the session and stopped after it."""
    with llama_server(tmp_path_factory.mktemp("llama")) as url:
        yield url


@pytest.fixture
def one_page(repo_dir: Path) -> Path:
    (repo_dir / "gateway.md").write_text(GATEWAY)
    return repo_dir


def _the_model_replied_in_schema(first_round: dict[str, object]) -> bool:
    """The first round's plan came from the model (it replied in time, in the schema): either it was
    followed, or verification refused every clause it proposed and the extractive planner planned again."""
    refused = f"every clause llm:{MODEL} proposed was refused"
    return first_round["planner_error"] in (None, refused)


def _citeline(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_citeline_ask_plans_with_the_real_model_and_cites_the_page(
    llm_url: str, one_page: Path, clean_database: Database, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "CITELINE_DATABASE_URL": clean_database.url,
        "CITELINE_DATA_DIR": str(tmp_path / "data"),
        "CITELINE_PLANNER__KIND": "llm",
        "CITELINE_PLANNER__URL": llm_url,
        "CITELINE_PLANNER__MODEL": MODEL,
        "CITELINE_PLANNER__ROLE": "planner",
        "CITELINE_PLANNER__BUDGET_SECONDS": str(PATIENT),
    }
    env.pop("CITELINE_CONFIG", None)
    assert _citeline(["index", str(one_page)], env).returncode == 0
    status = json.loads(_citeline(["status", "--json"], env).stdout)
    assert status["planner"]["reachable"] is True
    done = _citeline(["ask", QUESTION, "--json"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert f"planner llm:{MODEL}" in result["notes"]
    assert result["status"] == "answer"
    assert result["clauses"][0]["sources"][0]["path"] == "gateway.md"
    assert any("SIGHUP" in s["text"] for c in result["clauses"] for s in c["sources"])
    assert _the_model_replied_in_schema(result["trace"][0]), result["trace"][0]["planner_error"]


def _lexical_engine(database: Database, retriever: Retriever, planner: LLMPlanner) -> AnswerEngine:
    """An engine on the lexical lane with a containment NLI fake (the model under test is the real one)."""
    config = EngineConfig(verify=VerifyConfig(threshold=0.5), store=False)
    return AnswerEngine(
        database,
        retriever,
        None,
        entailment=ContainmentNLI(),
        planner=planner,
        config=config,
        pool=retriever.pool,
    )


@pytest.fixture
def api_engine(
    llm_url: str, one_page: Path, conn: Connection, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[tuple[AnswerEngine, LLMPlanner]]:
    reconcile_repository(conn, Repository("docs", one_page))
    planner = LLMPlanner(LLMConfig(llm_url, MODEL, role=LLMRole.PLANNER, budget_seconds=PATIENT))
    yield _lexical_engine(clean_database, lexical_retriever, planner), planner
    planner.close()


def test_the_api_answers_with_the_real_model_and_reports_the_planner_ready(
    api_engine: tuple[AnswerEngine, LLMPlanner], clean_database: Database, lexical_retriever: Retriever
) -> None:
    engine, planner = api_engine
    answering = partial(answer, engine=engine)
    app = create_app(clean_database, lexical_retriever, answering, ApiSettings(), planner)
    with served(app) as base:
        ready = httpx.get(f"{base}/readyz", timeout=30).json()
        assert ready["planner"] == f"llm:{MODEL}" and ready["planner_degraded"] is None
        response = httpx.post(f"{base}/v1/answers", json={"question": QUESTION}, timeout=120)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "answer"
    assert body["clauses"][0]["sources"][0]["path"] == "gateway.md"
    assert any("SIGHUP" in s["text"] for c in body["clauses"] for s in c["sources"])
    assert _the_model_replied_in_schema(body["trace"][0])


def test_the_real_server_answers_the_readers_request_with_the_first_tokens_log_probabilities(
    llm_url: str,
) -> None:
    chat = ChatClient(LLMConfig(llm_url, MODEL))
    lines = GATEWAY.split("\n")[4].split(". ")
    shown = [Passage(n, ("Gateway", "Configuration"), line) for n, line in enumerate(lines, 1)]
    try:
        reply = chat.ask(
            reader_messages(QUESTION, shown),
            time.monotonic() + 60,
            max_tokens=READ_TOKENS,
            alternatives=ALTERNATIVES,
        )
    finally:
        chat.close()
    assert reply.text.strip()
    assert len(reply.first_token) > 1
    chance = p_none(reply.first_token)
    assert chance is not None and 0.0 <= chance <= 1.0


def test_the_reader_on_the_real_model_reads_or_hands_the_round_to_the_extractive_planner(
    llm_url: str, one_page: Path, conn: Connection, clean_database: Database, lexical_retriever: Retriever
) -> None:
    """The 270M model often answers the reader's prompt with prose: the strict parse refuses it and the
    extractive planner plans the round; either way the answer cites the page, and no request failed."""
    reconcile_repository(conn, Repository("docs", one_page))
    planner = ReaderPlanner(LLMConfig(llm_url, MODEL, budget_seconds=PATIENT))
    try:
        result = _lexical_engine(clean_database, lexical_retriever, planner).answer(QUESTION)
    finally:
        planner.close()
    first = result.trace[0]
    assert first.reading is not None or "the reader's reply is malformed" in (first.planner_error or "")
    assert result.status.value == "answer"
    assert any("SIGHUP" in s.text for c in result.clauses for s in c.sources)
    assert set(first.chosen_by.values()) <= {"reader", "extractive"} and first.chosen_by
