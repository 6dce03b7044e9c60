"""The answering side of the process: `citeline ask`, `citeline api` and the API service of `citeline serve`.

Everything here only translates configuration into the API's and the engine's own settings; the engine is
built by `api.server.build_engine`, the one place that decides which models a serving process loads.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from api.server import ApiService, ModelNames, build_engine, run_api
from api.settings import ApiSettings, keys_from_env, parse_keys
from daemon.config import Config, PlannerKind
from engine.llm_planner import LLMConfig
from engine.search import Filters
from indexer.database import Database

__all__ = ["api_service", "ask", "models", "serve_api"]


def _settings(config: Config, host: str | None, port: int | None) -> ApiSettings:
    keys = parse_keys(config.api.keys) + keys_from_env()
    return ApiSettings(
        host=host or config.api.host,
        port=port if port is not None else config.api.port,
        keys=keys,
        protect_probes=config.api.protect_probes,
        ready_max_backlog_age_seconds=config.thresholds.ready_max_backlog_age_seconds,
    )


def models(config: Config) -> ModelNames:
    """The models and planner a serving process loads, from `[models]` and `[planner]`."""
    planner = config.planner
    llm = (
        LLMConfig(planner.url, planner.model, planner.api_key or None, planner.timeout_seconds)
        if planner.kind is PlannerKind.LLM
        else None
    )
    return ModelNames(
        config.models.embedder,
        config.models.reranker,
        config.models.entailment,
        llm,
        config.models.embedder_runtime,
    )


def serve_api(config: Config, database: Database, host: str | None, port: int | None) -> int:
    """`citeline api`: the API alone, a stateless replica, until SIGINT/SIGTERM."""
    retriever, answering = build_engine(database, models(config), config.retrieval)
    run_api(_settings(config, host, port), database, retriever=retriever, answering=answering)
    return 0


def api_service(config: Config, database: Database, host: str | None, port: int | None) -> ApiService:
    """The API as one service of `citeline serve`, built on the daemon's loop once the models load."""
    return ApiService(
        _settings(config, host, port),
        lambda: (database, *build_engine(database, models(config), config.retrieval)),
    )


def _render(result: dict[str, Any]) -> str:
    lines = [f"{result['status']} ({result['route']} path, {len(result['trace'])} round(s))"]
    if result.get("reason"):
        lines.append(f"  reason: {result['reason']}")
    for number, clause in enumerate(result["clauses"], 1):
        lines.append(f"{number}. {clause['clause']}  [confidence {clause['confidence']:.2f}]")
        for source in clause["sources"]:
            heading = f" [{source['heading']}]" if source.get("heading") else ""
            lines.append(f"     {source['repository']}/{source['path']}:{source['line_start']}{heading}")
    return "\n".join(lines)


def ask(
    config: Config,
    database: Database,
    question: str,
    budget: str,
    filters: Filters,
    *,
    as_json: bool,
) -> int:
    """`citeline ask`: answer one question; exit 0 for an answer, 1 when insufficient or failed."""
    retriever, answering = build_engine(database, models(config), config.retrieval)
    try:
        result = answering(question, budget, filters).to_dict()
    finally:
        retriever.close()
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(_render(result))
    sys.stdout.flush()
    return 0 if result["status"] == "answer" else 1
