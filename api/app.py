"""The Litestar application factory: everything it needs is passed in, nothing is global.

`create_app` owns one connection pool (opened with the app, closed with it); the retriever and the answering
callable belong to the caller, who may share them with other parts of the process. The OpenAPI schema is
served as JSON at `/schema/openapi.json` only: the interactive renderers load scripts from CDNs. Every
request passes `api.web_guard` first (Host, Origin and Content-Type checks) and every response carries its
security headers. `/mcp` serves the same operations as MCP tools behind the same guards (`api.mcp.http`).
"""

from __future__ import annotations

from functools import partial

from litestar import Litestar, Router
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from psycopg_pool import ConnectionPool

from api.auth import PUBLIC, KeyGuard
from api.context import Answering, PlannerHealth, Services
from api.contract import ClosedStructs
from api.feedback import FEEDBACK_ROUTES
from api.history import HISTORY_ROUTES
from api.mcp.http import McpEndpoint
from api.metrics import ApiMetrics
from api.ops import OPS_ROUTES
from api.problems import exception_handlers
from api.requests import CitelineRequest
from api.routes import ROUTES
from api.settings import ApiSettings
from api.web_guard import WebGuard, allowed_host_names, secure_headers
from engine.search import Retriever
from indexer.database import Connection, Database, configure_session

__all__ = ["create_app"]


def create_app(
    database: Database,
    retriever: Retriever,
    answering: Answering | None,
    settings: ApiSettings | None = None,
    planner: PlannerHealth | None = None,
) -> Litestar:
    """The API app over `database`; `answering` None serves everything but `POST /v1/answers` (503);
    `planner`, the LLM planner when one answers, is reported by `/readyz`."""
    settings = settings or ApiSettings()
    pool: ConnectionPool[Connection] = ConnectionPool(
        database.url,
        min_size=1,
        max_size=settings.pool_size,
        kwargs={"autocommit": True, "connect_timeout": max(1, int(settings.database_timeout_seconds))},
        configure=configure_session,
        open=False,
    )
    metrics = ApiMetrics(lambda: pool.connection(timeout=settings.database_timeout_seconds))
    services = Services(pool, retriever, answering, settings, metrics, planner)
    hosts = allowed_host_names(settings.host, settings.allowed_hosts)
    mcp = McpEndpoint(services)  # `/mcp`: the MCP tools behind the same guards (`api.mcp.http`)

    def provide_services() -> Services:
        return services

    def open_pool() -> None:
        pool.open(wait=False)  # a database down at start must not stop the app: /readyz reports it

    def close_pool() -> None:
        pool.close()

    return Litestar(
        route_handlers=[*ROUTES, *HISTORY_ROUTES, *FEEDBACK_ROUTES, *OPS_ROUTES, mcp.route()],
        dependencies={"services": Provide(provide_services, sync_to_thread=False)},
        guards=[KeyGuard(settings.keys, settings.protect_probes)],
        exception_handlers=exception_handlers(),
        request_class=CitelineRequest,
        plugins=[ClosedStructs()],
        middleware=[metrics.middleware, partial(WebGuard, hosts=hosts)],
        before_send=[secure_headers],
        request_max_body_size=settings.limits.max_body_bytes,
        on_startup=[open_pool],
        on_shutdown=[close_pool],
        lifespan=[mcp.lifespan],
        openapi_config=OpenAPIConfig(
            title="citeline",
            version="1",
            description="Cited, verified answers and hybrid search over Markdown docs.",
            path="/schema",
            render_plugins=[JsonRenderPlugin()],
            openapi_router=Router(
                path="/schema", route_handlers=[], opt={PUBLIC: True}, include_in_schema=False
            ),
        ),
    )
