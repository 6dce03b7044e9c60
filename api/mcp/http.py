"""`/mcp`: the MCP tools over streamable HTTP, inside the API app and behind everything the API has.

The endpoint is a Litestar ASGI route, so before the MCP SDK reads a byte the request has passed what every
API request passes: `api.web_guard` (the Host must name this server, an `Origin` must be its own, a POST
must say it is JSON), the metrics middleware, and `KeyGuard` (no key: 401 where keys are configured). The
key's `Access` travels in the request's scope to the tools, whose backend (`ServicesBackend`) narrows every
query to it in SQL as the API's routes do: a scoped key sees only its repositories through every tool.

The transport is stateless with JSON responses: every POST is one self-contained exchange, no session is
kept between requests and no stream is left open. A body is read here first, as `api.requests` reads the
API's: over `[api]`'s limit it is 413, nested deeper than `MAX_JSON_DEPTH` it is 400, both problem+json
answered before the SDK parses anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar, asgi
from litestar.connection import ASGIConnection
from litestar.exceptions import ClientException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.handlers import ASGIRouteHandler
from litestar.types import HTTPRequestEvent, Receive, ReceiveMessage, Scope, Send
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from api.auth import Access, access_of
from api.context import Services
from api.mcp.backend import DocsBackend, ServicesBackend, ToolRefusedError
from api.mcp.server import docs_server
from api.requests import TOO_DEEP, nests_too_deep

__all__ = ["MCP_PATH", "McpEndpoint"]

MCP_PATH = "/mcp"
_ACCESS = "citeline.access"
"""The scope key the endpoint hands the caller's `Access` to the tools under."""


class McpEndpoint:
    """The `/mcp` route of one app and the lifespan its session manager needs (`create_app` wires both)."""

    __slots__ = ("_manager", "_services")

    def __init__(self, services: Services) -> None:
        self._services = services
        self._manager = StreamableHTTPSessionManager(
            app=docs_server(self._backend_of),
            json_response=True,
            stateless=True,
            security_settings=None,  # api.web_guard has checked Host and Origin already
            max_request_body_size=services.settings.limits.max_body_bytes,
        )

    def _backend_of(self, ctx: ServerRequestContext[Any, Any]) -> DocsBackend:
        request = ctx.request
        access = getattr(request, "scope", {}).get(_ACCESS)
        if not isinstance(access, Access):  # fail closed: a request the guard did not see reads nothing
            raise ToolRefusedError(401, "no access resolved for this request")
        return ServicesBackend(self._services, access)

    @asynccontextmanager
    async def lifespan(self, _app: Litestar) -> AsyncIterator[None]:
        """Runs the session manager (its task group serves the calls) while the app runs."""
        async with self._manager.run():
            yield

    def route(self) -> ASGIRouteHandler:
        """The ASGI route at `/mcp`: the key's access put in the scope, then the SDK's transport."""
        manager = self._manager
        limit = self._services.settings.limits.max_body_bytes

        @asgi(MCP_PATH, copy_scope=True)
        async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
            scope[_ACCESS] = access_of(ASGIConnection(scope=scope))  # type: ignore[literal-required]
            if scope.get("method") == "POST":
                receive = _replaying(await _checked_body(receive, limit), receive)
            await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]

        return mcp


async def _checked_body(receive: Receive, limit: int) -> bytes:
    """The whole request body, refused as the API refuses one: over `limit` bytes (413), or nested deeper
    than `MAX_JSON_DEPTH` (400)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise RequestEntityTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    if nests_too_deep(body):
        raise ClientException(TOO_DEEP)
    return body


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over `body` once, then waits on the connection as the original does."""
    pending = [body]

    async def replayed() -> ReceiveMessage:
        if pending:
            event: HTTPRequestEvent = {"type": "http.request", "body": pending.pop(), "more_body": False}
            return event
        return await receive()

    return replayed
