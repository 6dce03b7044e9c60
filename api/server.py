"""Serving the API: `run_api` for `citeline api` (the API alone, a stateless replica) and `ApiService` for
`citeline serve` (one service among the watcher and the embedder, on the daemon's event loop).

Under `serve` the daemon owns SIGTERM/SIGINT and tells services to stop through an event, so the uvicorn
server here does not install signal handlers of its own; it drains in-flight requests when told to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import structlog
import uvicorn

from api.app import create_app
from api.context import Answering
from api.settings import ApiSettings
from engine.controller import AnswerEngine, answer
from engine.crossencoders import load_entailment, load_relevance
from engine.llm_planner import LLMConfig, LLMPlanner
from engine.search import RetrievalConfig, Retriever
from indexer.database import Database
from indexer.embedder import EmbedderRuntime, load_embedding_model

__all__ = ["ApiService", "ModelNames", "build_engine", "run_api"]

T = TypeVar("T")
log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ModelNames:
    """Model names or paths; empty means the model shipped with citeline (the `[models]` section).
    `llm` set means the LLM planner on that endpoint instead of the extractive one."""

    embedder: str = ""
    reranker: str = ""
    entailment: str = ""
    llm: LLMConfig | None = None
    embedder_runtime: EmbedderRuntime = EmbedderRuntime.AUTO


def _shipped_or_named(loader: Callable[[str | None], T], name: str, kind: str) -> T | None:
    """A named model must load; the shipped one may be absent from a checkout (its weights are trained
    separately), and then the engine runs without it, as it is built to, with a warning saying so."""
    if name:
        return loader(name)
    try:
        return loader(None)
    except FileNotFoundError as exc:
        log.warning("shipped model missing; running without it", model=kind, error=str(exc))
        return None


def build_engine(
    database: Database, models: ModelNames, retrieval: RetrievalConfig | None = None
) -> tuple[Retriever, Answering]:
    """Load the models and build the retriever and the answering callable the API serves (seconds)."""
    embedder = load_embedding_model(models.embedder, models.embedder_runtime)
    reranker = _shipped_or_named(load_relevance, models.reranker, "relevance")
    entailment = _shipped_or_named(load_entailment, models.entailment, "entailment")
    retriever = Retriever(database, embedder, reranker, retrieval)
    planner = LLMPlanner(models.llm) if models.llm is not None else None
    engine = AnswerEngine(
        database, retriever, embedder, entailment=entailment, relevance=reranker, planner=planner
    )
    return retriever, partial(answer, engine=engine)


def _uvicorn_config(
    settings: ApiSettings, database: Database, retriever: Retriever, answering: Answering | None
) -> uvicorn.Config:
    app = create_app(database, retriever, answering, settings)
    return uvicorn.Config(app, host=settings.host, port=settings.port, access_log=False, log_config=None)


def run_api(
    settings: ApiSettings,
    database: Database,
    *,
    retriever: Retriever | None = None,
    answering: Answering | None = None,
    models: ModelNames | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM. Without `retriever`, the models named in `models` are loaded here."""
    if retriever is None:
        retriever, answering = build_engine(database, models or ModelNames())
    try:
        uvicorn.Server(_uvicorn_config(settings, database, retriever, answering)).run()
    finally:
        retriever.close()


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the daemon's runtime."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class ApiService:
    """The API as a daemon service (`daemon.runtime.Service`): ready once it listens, stops on `stop`."""

    __slots__ = ("_build", "_settings")

    def __init__(
        self,
        settings: ApiSettings,
        build: Callable[[], tuple[Database, Retriever, Answering | None]],
    ) -> None:
        self._settings = settings
        self._build = build

    @property
    def name(self) -> str:
        return "api"

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        """Build (off the loop: models load for seconds), listen, report ready, and serve until `stop`."""
        database, retriever, answering = await asyncio.to_thread(self._build)
        server = _QuietServer(_uvicorn_config(self._settings, database, retriever, answering))
        serving = asyncio.create_task(server.serve())
        try:
            while not server.started:
                if serving.done():
                    serving.result()
                    raise RuntimeError(
                        f"the API could not listen on {self._settings.host}:{self._settings.port}"
                    )
                await asyncio.sleep(0.05)
            ready()
            await asyncio.wait(
                [serving, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED
            )
            server.should_exit = True
            await serving
        finally:
            await asyncio.to_thread(retriever.close)
