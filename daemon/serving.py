"""The API side of the process: `citeline api` and the API service of `citeline serve`.

Everything here only translates configuration into the API's own settings and hands the API the engine
`daemon.assembly` builds; it is the one daemon module that imports the API, and commands that serve no API
(`citeline ask` among them) never import it.
"""

from __future__ import annotations

from api.context import Answering, PlannerHealth
from api.server import ApiService, run_api
from api.settings import ApiKeyError, ApiSettings, keys_from_env, parse_keys
from daemon.assembly import build_engine, model_names
from daemon.config import Config, ConfigError
from engine.search import Retriever
from indexer.database import Database

__all__ = ["api_service", "serve_api"]


def _settings(config: Config, host: str | None, port: int | None) -> ApiSettings:
    """The API's settings from `[api]` and `CITELINE_API_KEYS`; a malformed key is a `ConfigError`."""
    try:
        keys = parse_keys(config.api.keys) + keys_from_env()
    except ApiKeyError as exc:
        raise ConfigError(str(exc)) from exc
    return ApiSettings(
        host=host or config.api.host,
        port=port if port is not None else config.api.port,
        keys=keys,
        protect_probes=config.api.protect_probes,
        allowed_hosts=config.api.allowed_hosts,
        warn_backlog_age_seconds=config.thresholds.warn_backlog_age_seconds,
        ready_max_backlog_age_seconds=config.thresholds.ready_max_backlog_age_seconds,
    )


def serve_api(config: Config, database: Database, host: str | None, port: int | None) -> int:
    """`citeline api`: the API alone, a stateless replica, until SIGINT/SIGTERM. A malformed key is refused
    before any model loads."""
    settings = _settings(config, host, port)
    engine = build_engine(database, model_names(config), config.retrieval)
    try:
        run_api(settings, database, engine.retriever, engine.answer, engine.planner)
    finally:
        engine.close()
    return 0


def api_service(config: Config, database: Database, host: str | None, port: int | None) -> ApiService:
    """The API as one service of `citeline serve`, built on the daemon's loop once the models load."""

    def build() -> tuple[Database, Retriever, Answering, PlannerHealth | None]:
        engine = build_engine(database, model_names(config), config.retrieval)
        return database, engine.retriever, engine.answer, engine.planner

    return ApiService(_settings(config, host, port), build)
