"""The backends `citeline mcp` serves its tools over: the running server's HTTP API, else this process.

Like `citeline search` and `ask` (`daemon.lookups`), `citeline mcp` goes through the `citeline serve` or
`citeline api` running for its data dir and database, whose models are loaded already, with the configured
key (`daemon.lookups.token_for`); when none answers it opens the database and loads the models itself, on
the first call that needs them, and every repository is in reach, as for the other local commands.

The choice is made per call: a server that stops answering (no connection, a 5xx) sends that call, and
every later one, to this process. A server's 4xx is the API refusing the call (an empty question, a
repository outside the key), and is the tool's error with the server's message: a key that may not read a
repository is never widened by answering in this process instead.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from api.mcp.backend import DocsBackend, SearchArgs, ServicesBackend, ToolRefusedError
from daemon.config import Config, ConfigError, load_config
from daemon.instance import ServerRecord
from daemon.lookups import server_for, token_for
from daemon.remote import RefusedError, UnreachableError, call_api
from daemon.whereabouts import no_database, no_index_message
from indexer.database import DatabaseError

if TYPE_CHECKING:
    from daemon.assembly import Engine

__all__ = ["LocalBackend", "RemoteBackend", "RoutedBackend"]

T = TypeVar("T")
ANSWER_SECONDS = 600.0
CALL_SECONDS = 60.0


class RemoteBackend:
    """The operations through a running server's HTTP API, with `token` as the bearer key."""

    __slots__ = ("_record", "_token")

    def __init__(self, record: ServerRecord, token: str | None) -> None:
        self._record = record
        self._token = token

    def _call(self, path: str, body: dict[str, Any] | None = None, timeout: float = CALL_SECONDS) -> Any:
        try:
            return call_api(self._record, path, self._token, body, timeout)
        except RefusedError as exc:
            raise ToolRefusedError(exc.status, str(exc)) from exc

    def search(self, args: SearchArgs) -> dict[str, Any]:
        params = [("q", args.query or ""), ("k", str(args.k)), ("lane", "hybrid")]
        params += [("repo", name) for name in args.repositories]
        if args.path_prefix is not None:
            params.append(("path_prefix", args.path_prefix))
        result: dict[str, Any] = self._call("/v1/search?" + urllib.parse.urlencode(params))
        return result

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("/v1/answers", body, ANSWER_SECONDS)
        return result

    def sentence(self, sentence_id: int, radius: int) -> dict[str, Any]:
        result: dict[str, Any] = self._call(f"/v1/sentences/{sentence_id}?radius={radius}")
        return result

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("/v1/status")
        return result

    def feedback(self, answer_id: str, body: dict[str, Any]) -> dict[str, Any]:
        path = f"/v1/answers/{urllib.parse.quote(answer_id, safe='')}/feedback"
        result: dict[str, Any] = self._call(path, body)
        return result


class LocalBackend:
    """The operations in this process: the API's own functions over a database and models opened here on
    the first call, with every repository in reach. A data dir with no index is refused, naming where to
    look (`daemon.whereabouts`), without creating a database there."""

    __slots__ = ("_backend", "_config_path", "_engine", "_lock")

    def __init__(self, config_path: Path | None) -> None:
        self._config_path = config_path
        self._lock = threading.Lock()
        self._backend: ServicesBackend | None = None
        self._engine: Engine | None = None

    @property
    def started(self) -> bool:
        """Whether this process has opened the database and loaded the models."""
        return self._backend is not None

    def _open(self) -> ServicesBackend:
        with self._lock:
            if self._backend is None:
                try:
                    self._backend = self._build()
                except (ConfigError, DatabaseError) as exc:  # the one line the commands print; tried again
                    raise ToolRefusedError(503, str(exc)) from exc
            return self._backend

    def _build(self) -> ServicesBackend:
        from api.auth import Access
        from api.context import Services
        from api.metrics import ApiMetrics
        from api.settings import ApiSettings
        from daemon.assembly import build_engine, model_names, open_process

        config = load_config(self._config_path)
        if no_database(config):
            raise ToolRefusedError(503, no_index_message(config))
        config, database = open_process(self._config_path, serving=True)
        engine = build_engine(database, model_names(config), config.retrieval, compare_disk=True)
        self._engine = engine
        settings = ApiSettings(
            warn_backlog_age_seconds=config.thresholds.warn_backlog_age_seconds,
            ready_max_backlog_age_seconds=config.thresholds.ready_max_backlog_age_seconds,
        )
        pool = engine.retriever.pool
        metrics = ApiMetrics(lambda: pool.connection(timeout=settings.database_timeout_seconds))
        services = Services(pool, engine.retriever, engine.answer, settings, metrics, engine.planner)
        return ServicesBackend(services, Access(None))

    def search(self, args: SearchArgs) -> dict[str, Any]:
        return self._open().search(args)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._open().answer(body)

    def sentence(self, sentence_id: int, radius: int) -> dict[str, Any]:
        return self._open().sentence(sentence_id, radius)

    def status(self) -> dict[str, Any]:
        return self._open().status()

    def feedback(self, answer_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._open().feedback(answer_id, body)

    def close(self) -> None:
        """Release the pool and the models' threads, when they were opened."""
        if self._engine is not None:
            self._engine.close()


class RoutedBackend:
    """Each call through the running server while one answers, else in this process (see the module)."""

    __slots__ = ("_config", "_local", "_record", "_token")

    def __init__(self, config: Config, config_path: Path | None) -> None:
        self._config = config
        self._token = token_for(config)
        self._record = server_for(config)
        self._local = LocalBackend(config_path)

    @property
    def remote(self) -> bool:
        """Whether the last call went (or the next one goes) through a running server."""
        return self._record is not None and not self._local.started

    def _run(self, call: Callable[[DocsBackend], T]) -> T:
        if not self._local.started:
            record = self._record or server_for(self._config)
            if record is not None:
                try:
                    result = call(RemoteBackend(record, self._token))
                except UnreachableError:
                    self._record = None
                else:
                    self._record = record
                    return result
        return call(self._local)

    def search(self, args: SearchArgs) -> dict[str, Any]:
        return self._run(lambda backend: backend.search(args))

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._run(lambda backend: backend.answer(body))

    def sentence(self, sentence_id: int, radius: int) -> dict[str, Any]:
        return self._run(lambda backend: backend.sentence(sentence_id, radius))

    def status(self) -> dict[str, Any]:
        return self._run(lambda backend: backend.status())

    def feedback(self, answer_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._run(lambda backend: backend.feedback(answer_id, body))

    def close(self) -> None:
        self._local.close()
