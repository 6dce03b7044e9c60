"""What the MCP tools call: a `DocsBackend`, the API's five operations as one caller sees them.

A backend answers in the API's JSON shapes (the bodies of `GET /v1/search`, `POST /v1/answers`,
`GET /v1/sentences/{id}`, `GET /v1/status` and `POST /v1/answers/{id}/feedback`) and refuses what the API
refuses, with the same status and message, as a `ToolRefusedError`. Two kinds exist:

- `ServicesBackend` (here): this process's `Services`, through the very functions the API's routes run
  (`api.routes`, `api.feedback`), for one caller's `Access`. `/mcp` builds one per request from the key the
  request carried; `citeline mcp` without a running server builds one with every repository in reach, as
  the CLI's local commands do.
- the daemon's remote backend (`daemon.mcp_backends`): the running server's HTTP API, with the configured key.

Errors that are not the caller's (an unreachable database, a bug) are refused as the API answers them: a
503 that says the database is unreachable, a 500 that names nothing (the traceback goes to the log).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from uuid import UUID

import msgspec
import psycopg
import psycopg_pool
import structlog
from litestar.exceptions import HTTPException

from api.auth import Access
from api.context import Services
from api.feedback import feedback_body, record_feedback
from api.models import AskRequest
from api.problems import INTERNAL_DETAIL, UNREACHABLE_DETAIL
from api.routes import answer_question, index_status, read_sentence, search_sentences
from engine.search import SearchMode
from indexer.database import DatabaseError

__all__ = [
    "INTERNAL_DETAIL",
    "UNREACHABLE_DETAIL",
    "DocsBackend",
    "SearchArgs",
    "ServicesBackend",
    "ToolRefusedError",
]

log = structlog.get_logger(__name__)


T = TypeVar("T")


class ToolRefusedError(Exception):
    """The API refused the call: `status` is the HTTP status it answers with, `detail` its message."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True, slots=True)
class SearchArgs:
    """A search as `GET /v1/search` takes it (the hybrid lane, no neighbours)."""

    query: str | None
    k: int
    repositories: tuple[str, ...] = ()
    path_prefix: str | None = None


class DocsBackend(Protocol):
    """The API's operations for one caller; each returns the API's JSON body or raises `ToolRefusedError`.
    Calls block (the database, the models, HTTP): the MCP server runs them in worker threads."""

    def search(self, args: SearchArgs) -> dict[str, Any]: ...

    def answer(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def sentence(self, sentence_id: int, radius: int) -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...

    def feedback(self, answer_id: str, body: dict[str, Any]) -> dict[str, Any]: ...


class ServicesBackend:
    """The operations in this process, for a caller with `access`, through the API routes' own functions."""

    __slots__ = ("_access", "_services")

    def __init__(self, services: Services, access: Access) -> None:
        self._services = services
        self._access = access

    def search(self, args: SearchArgs) -> dict[str, Any]:
        return _refusing(
            lambda: search_sentences(
                self._services,
                self._access,
                args.query or "",
                args.k,
                SearchMode.HYBRID,
                args.repositories,
                args.path_prefix,
                False,
            )
        )

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        def run() -> Any:
            try:
                request = msgspec.convert(body, AskRequest, strict=True)
            except msgspec.ValidationError as exc:
                raise ToolRefusedError(400, str(exc)) from exc
            return answer_question(self._services, self._access, request)

        return _refusing(run)

    def sentence(self, sentence_id: int, radius: int) -> dict[str, Any]:
        return _refusing(lambda: read_sentence(self._services, self._access, sentence_id, radius))

    def status(self) -> dict[str, Any]:
        return _refusing(lambda: index_status(self._services, self._access))

    def feedback(self, answer_id: str, body: dict[str, Any]) -> dict[str, Any]:
        def run() -> Any:
            try:
                answer = UUID(answer_id)
            except ValueError as exc:
                raise ToolRefusedError(404, f"no answer {answer_id}") from exc
            return record_feedback(self._services, self._access, answer, feedback_body(body))

        return _refusing(run)


def _refusing(call: Callable[[], Any]) -> dict[str, Any]:
    """`call`'s result as JSON, with every failure turned into the refusal the API would answer."""
    try:
        result = msgspec.to_builtins(call())
    except ToolRefusedError:
        raise
    except HTTPException as exc:
        raise ToolRefusedError(exc.status_code, exc.detail) from exc
    except psycopg.DataError as exc:
        detail = exc.diag.message_primary or str(exc)
        raise ToolRefusedError(400, f"a value in the request cannot be processed: {detail}") from exc
    except (psycopg.OperationalError, psycopg_pool.PoolTimeout, DatabaseError) as exc:
        log.warning("database unavailable", path="/mcp", error=str(exc))
        raise ToolRefusedError(503, UNREACHABLE_DETAIL) from exc
    except Exception as exc:
        log.exception("unhandled error", path="/mcp", error=f"{type(exc).__name__}: {exc}")
        raise ToolRefusedError(500, INTERNAL_DETAIL) from exc
    if not isinstance(result, dict):
        raise ToolRefusedError(500, INTERNAL_DETAIL)
    return result
