"""Shared pieces of the API tests: two indexed repositories, the real engine with a scripted NLI, clients.

The engine is the real `AnswerEngine` (routing, loop, verification, answer store) over the real retriever
in its lexical lane; only the entailment model is a scripted stand-in (a premise entails a hypothesis it
contains), because the shipped NLI model is too slow for a 2-core test run and is tested in the engine's
own suite. No embedder is loaded: vectors are not what these tests are about.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
import uvicorn
from litestar import Litestar
from litestar.testing import TestClient

from api.app import create_app
from api.context import Answering
from api.server import uvicorn_config
from api.settings import ApiKey, ApiSettings
from daemon.instance import ServerRecord, database_digest, recorded_server
from engine.answers import Answer
from engine.controller import AnswerEngine, EngineConfig, answer
from engine.crossencoders import EntailmentScores
from engine.search import Filters, Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.hashing import normalize_sentence
from indexer.reconcile import Repository, reconcile_repository

ALPHA = {
    "guide/tests.md": "# Testing\n\n## UI tests\n\n"
    "UI tests compare the compiler output with reference files. "
    "Run them with the test command. Blessing updates the reference files.\n",
    "guide/build.md": "# Building\n\nStage 0 downloads a prebuilt beta toolchain. "
    "Stage 1 builds the compiler from source.\n",
}
BETA = {
    "recipes/bread.md": "# Bread\n\nBread dough rises because yeast produces carbon dioxide. "
    "Bake the bread at 220 degrees.\n",
}

LOCAL = "http://127.0.0.1:8750"
"""The base URL of in-process clients: a Host the API answers when bound to loopback (`api.web_guard`)."""

FULL_KEY = "full-access-key-0123456789"
ALPHA_KEY = "alpha-only-key-0123456789"
BETA_KEY = "beta-only-key-01234567890"
VOTE_KEY = "vote-only-key-0123456789a"
"""Reads every repository but may not teach: its feedback only votes (`api.settings.ApiKey.teach`)."""
KEYS = (
    ApiKey(FULL_KEY, None, teach=True),
    ApiKey(ALPHA_KEY, ("alpha",), teach=True),
    ApiKey(BETA_KEY, ("beta",), teach=True),
    ApiKey(VOTE_KEY),
)


class ContainmentNLI:
    """Scripted NLI: the hypothesis is entailed when the premise contains it, neutral otherwise."""

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[EntailmentScores]:
        out = []
        for premise, hypothesis in pairs:
            if normalize_sentence(hypothesis).rstrip(".") in normalize_sentence(premise):
                out.append(EntailmentScores(0.95, 0.04, 0.01))
            else:
                out.append(EntailmentScores(0.05, 0.9, 0.05))
        return out


def index_two_repositories(conn: Connection, root: Path) -> None:
    """Write and index `alpha` and `beta` under `root`."""
    for name, files in (("alpha", ALPHA), ("beta", BETA)):
        for rel, text in files.items():
            path = root / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        reconcile_repository(conn, Repository(name, root / name))


def real_answering(database: Database, retriever: Retriever) -> Answering:
    """The engine's `answer` bound to an engine with the scripted NLI.

    Without an embedder the similarity stage scores 0, so the composite threshold is lowered to what the
    other four stages can reach; the API tests need accepted clauses, not the shipped calibration.
    """
    config = EngineConfig(verify=VerifyConfig(threshold=0.5))
    engine = AnswerEngine(
        database, retriever, None, entailment=ContainmentNLI(), config=config, pool=retriever.pool
    )
    return partial(answer, engine=engine)


def client_for(
    database: Database,
    retriever: Retriever,
    answering: Answering | None,
    settings: ApiSettings | None = None,
) -> TestClient:  # type: ignore[type-arg]
    """An in-process client over a fresh app (its own pool and metrics registry)."""
    return TestClient(
        app=create_app(database, retriever, answering, settings or ApiSettings()), base_url=LOCAL
    )


@contextmanager
def served(app: Litestar) -> Iterator[str]:
    """Serve `app` with uvicorn on a free loopback port in a thread; yields the base URL."""
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", 0))
    thread = threading.Thread(target=server.run, name="api-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def cli_environment(database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point the `citeline` commands a test runs in this process at `database` and a data dir under
    `tmp_path`, with no config file and no API keys from the environment; returns the data dir."""
    monkeypatch.setenv("CITELINE_DATABASE_URL", database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.delenv("CITELINE_API_KEYS", raising=False)
    return tmp_path / "data"


@contextmanager
def answering_client(
    conn: Connection,
    root: Path,
    database: Database,
    retriever: Retriever,
    settings: ApiSettings | None = None,
) -> Iterator[TestClient]:  # type: ignore[type-arg]
    """An in-process client over `alpha` and `beta` indexed under `root`, answering with the real engine
    (`real_answering`)."""
    index_two_repositories(conn, root)
    answering = real_answering(database, retriever)
    with client_for(database, retriever, answering, settings) as test_client:
        yield test_client


def counted_answering(database: Database, retriever: Retriever) -> tuple[Answering, list[str]]:
    """`real_answering`, and the list of the questions it is asked, in order."""
    answering = real_answering(database, retriever)
    asked: list[str] = []

    def counted(question: str, budget: str, filters: Filters) -> Answer:
        asked.append(question)
        return answering(question, budget, filters)

    return counted, asked


@contextmanager
def served_for(
    app: Litestar, data_dir: Path, database: Database, host: str = "127.0.0.1"
) -> Iterator[ServerRecord]:
    """Serve `app` (`served`) recorded as the server for `data_dir` and `database` (at `host`), as `citeline
    serve` records itself, so that the commands run meanwhile go through it; yields the record."""
    with served(app) as url:
        port = int(url.rsplit(":", 1)[1])
        with recorded_server(data_dir, host, port, database_digest(database.url, data_dir)) as record:
            yield record
