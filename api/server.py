"""Serving the API: `run_api` for `citeline api` (the API alone, a stateless replica) and `ApiService` for
`citeline serve` (one service among the watcher and the embedder, on the daemon's event loop).

Under `serve` the daemon owns SIGTERM/SIGINT and tells services to stop through an event, so the uvicorn
server here does not install signal handlers of its own; it drains in-flight requests when told to stop.
The API builds no engine: the daemon's assembly (`daemon.assembly`) loads the models and hands over the
retriever and the answering callable.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Generator

import uvicorn
from litestar import Litestar

from api.app import create_app
from api.context import Answering, PlannerHealth
from api.http11 import BoundedH11Protocol
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Database

__all__ = ["ApiService", "run_api", "uvicorn_config"]


def _uvicorn_config(
    settings: ApiSettings,
    database: Database,
    retriever: Retriever,
    answering: Answering | None,
    planner: PlannerHealth | None = None,
) -> uvicorn.Config:
    app = create_app(database, retriever, answering, settings, planner)
    return uvicorn_config(app, settings.host, settings.port)


def uvicorn_config(app: Litestar, host: str, port: int) -> uvicorn.Config:
    """How the app is served: uvicorn's h11 protocol answering 414 and 431 (`api.http11`), no access log."""
    return uvicorn.Config(
        app, host=host, port=port, access_log=False, log_config=None, http=BoundedH11Protocol
    )


def run_api(
    settings: ApiSettings,
    database: Database,
    retriever: Retriever,
    answering: Answering | None,
    planner: PlannerHealth | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM with the retriever and answering callable the caller built (and closes)."""
    uvicorn.Server(_uvicorn_config(settings, database, retriever, answering, planner)).run()


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the daemon's runtime."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class ApiService:
    """The API as a daemon service (`daemon.runtime.Service`): ready once it listens, stops on `stop`.

    `build` is the daemon's assembly, called off the loop once the service runs; the retriever it hands over
    is closed when the service stops (its pool with it, which the answer engine shares)."""

    __slots__ = ("_build", "_settings")

    def __init__(
        self,
        settings: ApiSettings,
        build: Callable[[], tuple[Database, Retriever, Answering | None, PlannerHealth | None]],
    ) -> None:
        self._settings = settings
        self._build = build

    @property
    def name(self) -> str:
        return "api"

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        """Build (off the loop: models load for seconds), listen, report ready, and serve until `stop`."""
        database, retriever, answering, planner = await asyncio.to_thread(self._build)
        server = _QuietServer(_uvicorn_config(self._settings, database, retriever, answering, planner))
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
