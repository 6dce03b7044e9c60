"""Operator routes and the pages: liveness, readiness, Prometheus metrics, `/` with its static files, and the
API reference at `/docs`.

`/metrics` is not a probe: its series name repositories and count their documents, so it is scoped like
the `/v1` routes (see `api.metrics`).

Readiness is what a load balancer acts on: not ready when the database does not answer (nothing can be
served) or when the oldest embedding backlog item is older than the threshold (answers would miss recent
edits on the vector lane). An LLM planner whose endpoint does not answer leaves the API ready, because the
extractive planner still answers: `/readyz` names the planner and says why it is degraded. A probe names a
repository, and the planner's own error, only to a caller that may read every repository (a full key, or
any caller when no keys are configured): an open probe says ready or not, and why in general terms.
Liveness never touches the database, so a database outage does not restart every API replica.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import psycopg_pool
from litestar import MediaType, Request, Response, get
from litestar.di import NamedDependency
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler
from prometheus_client import CONTENT_TYPE_LATEST

from api.auth import PROBE, PUBLIC, access_of
from api.context import Services
from api.contract import problem_responses
from api.models import HealthOut, ReadyOut
from api.problems import problem
from indexer.browse import oldest_backlog, ping

__all__ = ["OPS_ROUTES", "STATIC_DIR"]

STATIC_DIR = Path(__file__).parent / "static"


@get("/healthz", opt={PROBE: True}, summary="Liveness", responses=problem_responses(401))
async def healthz() -> HealthOut:
    """The process serves requests; says nothing about the database."""
    return HealthOut()


@get(
    "/readyz",
    sync_to_thread=True,
    opt={PROBE: True},
    summary="Readiness",
    responses=problem_responses(401, 503),
)
def readyz(request: Request[Any, Any, Any], services: NamedDependency[Services]) -> Response[Any]:
    """200 when the database answers and the backlog is young enough, else 503 with the reason; the
    planner's state is reported in the 200, never a 503."""
    limit = services.settings.ready_max_backlog_age_seconds
    try:
        with services.connection() as conn:
            ping(conn)
            oldest = oldest_backlog(conn)
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        return problem(503, f"database unreachable: {type(exc).__name__}", instance="/readyz")
    access = access_of(request)
    if oldest.age_seconds > limit:
        where = f" (repository {oldest.repository})" if access.repositories is None else ""
        return problem(
            503,
            f"oldest embedding backlog item is {oldest.age_seconds:.0f} s old{where};"
            f" the limit is {limit:.0f} s",
            instance="/readyz",
            extra={
                "backlog_oldest_age_seconds": round(oldest.age_seconds, 3),
                "max_backlog_age_seconds": limit,
            },
        )
    planner = services.planner
    name, degraded = ("extractive", None) if planner is None else (planner.name, planner.probe())
    if degraded is not None:
        why = f" ({degraded})" if access.repositories is None else ""
        degraded = f"the planner's endpoint does not answer{why}; the extractive planner answers"
    return Response(ReadyOut(True, round(oldest.age_seconds, 3), limit, name, degraded))


@get(
    "/metrics",
    sync_to_thread=True,
    summary="Prometheus metrics",
    media_type=CONTENT_TYPE_LATEST,
    responses=problem_responses(401),
)
def metrics(request: Request[Any, Any, Any], services: NamedDependency[Services]) -> Response[bytes]:
    """The Prometheus text format. Not a probe: its series name repositories, so with keys configured it
    needs one whatever `protect_probes` says, and a scoped key sees only its repositories' series (plus the
    process-wide ones, which carry no repository label)."""
    body = services.metrics.render(access_of(request).repositories)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


@get("/", opt={PUBLIC: True}, include_in_schema=False, media_type=MediaType.HTML)
async def page() -> Response[bytes]:
    """The question page; it holds no data (it calls the API with the key the user enters)."""
    return Response((STATIC_DIR / "index.html").read_bytes(), media_type=MediaType.HTML)


@get("/docs", opt={PUBLIC: True}, include_in_schema=False, media_type=MediaType.HTML)
async def reference() -> Response[bytes]:
    """The API reference: a page of this project's (no CDN) that renders `/schema/openapi.json`."""
    return Response((STATIC_DIR / "docs.html").read_bytes(), media_type=MediaType.HTML)


STATIC_ROUTER = create_static_files_router(
    path="/static", directories=[STATIC_DIR], opt={PUBLIC: True}, include_in_schema=False
)

OPS_ROUTES: list[ControllerRouterHandler] = [healthz, readyz, metrics, page, reference, STATIC_ROUTER]
