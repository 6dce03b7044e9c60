"""RFC 9457 problem details for every error the API returns.

Client mistakes keep their 4xx status with Litestar's message (and the field errors of a validation
failure), except that a query text the input contract covers (`engine.inputs`) gets the contract's
message, the one the CLI prints; an unreachable database is a 503 that says so; anything else is a 500
whose body names no internals (the traceback goes to the log). psycopg's DataError comes from values
PostgreSQL cannot take, so it is the caller's input and answers 400.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import psycopg
import psycopg_pool
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException
from litestar.types import ExceptionHandlersMap

from api.contract import PROBLEM_JSON
from engine.inputs import HITS, MAX_K, MAX_QUERY_CHARS, QUERY, InputError, hit_count, required_text
from indexer.database import DatabaseError

__all__ = ["INTERNAL_DETAIL", "PROBLEM_JSON", "UNREACHABLE_DETAIL", "exception_handlers", "problem"]

log = structlog.get_logger(__name__)

UNREACHABLE_DETAIL = "the database is unreachable; retry shortly"
"""The 503's detail for a database the API cannot reach (the MCP tools say the same: `api.mcp.backend`)."""
INTERNAL_DETAIL = "internal error; see the server log"
"""The 500's detail: nothing about the failure itself."""


def problem(
    status: int,
    detail: str,
    *,
    instance: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[dict[str, Any]]:
    """A problem+json response; `type` stays `about:blank`, so `title` is the status phrase (RFC 9457 4.2)."""
    body: dict[str, Any] = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status}
    body["detail"] = detail
    if instance is not None:
        body["instance"] = instance
    if extra:
        body.update(extra)
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _query_text(value: str | None) -> None:
    required_text(QUERY, value, MAX_QUERY_CHARS)


def _query_hits(value: str | None) -> None:
    try:
        count = int(value or "")
    except ValueError:
        return  # not a number: Litestar's own message says so, as argparse's does for `-k`
    hit_count(count, MAX_K)


_QUERY_CHECKS = {QUERY: _query_text, HITS: _query_hits}
"""Query parameters under the input contract (`engine.inputs`) that Litestar checks against the OpenAPI
schema before the handler, with the contract's check of each."""


def _contract_detail(request: Request[Any, Any, Any], errors: list[Any]) -> str | None:
    """The contract's message for a query parameter Litestar refused, so the API says what the CLI says;
    None when no such parameter is among `errors`."""
    for error in errors:
        key = error.get("key") if isinstance(error, dict) else None
        if key in _QUERY_CHECKS and error.get("source") == "query":
            try:
                _QUERY_CHECKS[key](request.query_params.get(key))
            except InputError as refused:
                return str(refused)
    return None


def _http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    extra: dict[str, Any] = {}
    detail = exc.detail
    if isinstance(exc.extra, list) and exc.extra:
        extra["errors"] = exc.extra
        if exc.status_code == 400:
            detail = _contract_detail(request, exc.extra) or detail
    elif isinstance(exc.extra, dict):
        extra.update(exc.extra)
    return problem(exc.status_code, detail, instance=request.url.path, extra=extra, headers=exc.headers)


def _unavailable(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.warning("database unavailable", path=request.url.path, error=str(exc))
    return problem(
        503,
        UNREACHABLE_DETAIL,
        instance=request.url.path,
        headers={"Retry-After": "5"},
    )


def _bad_value(request: Request[Any, Any, Any], exc: psycopg.DataError) -> Response[dict[str, Any]]:
    return problem(
        400,
        f"a value in the request cannot be processed: {exc.diag.message_primary or exc}",
        instance=request.url.path,
    )


def _internal(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.exception("unhandled error", path=request.url.path, error=f"{type(exc).__name__}: {exc}")
    return problem(500, INTERNAL_DETAIL, instance=request.url.path)


def exception_handlers() -> ExceptionHandlersMap:
    """Handlers for the app: the most specific class wins, as Litestar resolves them by MRO."""
    return {
        HTTPException: _http,
        psycopg.DataError: _bad_value,
        psycopg.OperationalError: _unavailable,
        psycopg_pool.PoolTimeout: _unavailable,
        DatabaseError: _unavailable,
        Exception: _internal,
    }
