"""What keeps another web site from using the API through a visitor's browser, and the page from being framed.

A browser lets any page send requests to `127.0.0.1`: a form or a `fetch` without a preflight (text/plain,
form encodings), and, through DNS rebinding, even read the answers of a name that now points at loopback.
With no keys configured (the local default) that would be the visitor's whole index. So, before any route:

- the `Host` header must name this server: the bound address, the configured `allowed_hosts`, and, when it
  listens on loopback, `localhost`, `127.0.0.1` and `[::1]` (400 otherwise). Bound to every address
  (`0.0.0.0`) with no names configured, the names are unknown and the Host is not checked; a request with no
  Host at all (HTTP/1.0 probes) comes from no browser and is let through;
- a request carrying an `Origin` must come from this server's own origin (403 otherwise);
- a request that changes state (POST, PUT, PATCH, DELETE) must say its body is JSON (415 otherwise), which
  a browser only sends cross-origin after a preflight that nothing here answers;
- a request line or header block over `MAX_HEAD_BYTES` is 414 or 431, however it arrived (`api.http11`).

Every response, the page's and the API's, carries a Content-Security-Policy that runs only this server's
own scripts, `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY` and `Referrer-Policy: no-referrer`.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from http import HTTPStatus
from urllib.parse import urlsplit

from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    HTTPScope,
    Message,
    Receive,
    Scope,
    Send,
)

__all__ = ["MAX_HEAD_BYTES", "SECURITY_HEADERS", "WebGuard", "allowed_host_names", "secure_headers"]

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        b" connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self';"
        b" frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_WILDCARDS = ("", "0.0.0.0", "::", "[::]")
MAX_HEAD_BYTES = 16 * 1024
"""The longest request target, and the largest header block, answered: h11's limit on a head that arrives
in pieces (`api.http11`), applied here to one that arrived whole too."""
_STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _bracketed(host: str) -> str:
    """An IPv6 address as a Host header writes it (`[::1]`); any other name lower-cased."""
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_host_names(bound: str, configured: Iterable[str]) -> frozenset[str] | None:
    """The Host names the API answers, without ports; None when any is answered (`*` configured, or bound
    to every address with none configured)."""
    names = {_bracketed(name) for name in configured if name.strip()}
    if "*" in names or (bound.strip() in _WILDCARDS and not names):
        return None
    if bound.strip() not in _WILDCARDS:
        names.add(_bracketed(bound))
    if _is_loopback(bound):
        names.update(_LOOPBACK_NAMES)
    return frozenset(names)


def _host_name(header: str) -> str:
    """The name of a Host header or an origin's authority, without its port."""
    header = header.strip().lower()
    if header.startswith("["):
        return header.partition("]")[0] + "]"
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def secure_headers(message: Message, scope: Scope) -> None:
    """A `before_send` hook: every response of the app (404s and errors too) gets the security headers."""
    if message["type"] == "http.response.start":
        headers = list(message.get("headers") or [])
        present = {bytes(name).lower() for name, _ in headers}
        message["headers"] = [*headers, *(h for h in SECURITY_HEADERS if h[0] not in present)]


class WebGuard:
    """ASGI middleware: the checks of the module's docstring, before the route runs."""

    __slots__ = ("_app", "_hosts")

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self._app = app
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP and (refusal := self._refusal(scope)) is not None:
            await _refuse(send, *refusal)
            return
        await self._app(scope, receive, send)

    def _refusal(self, scope: HTTPScope) -> tuple[int, str] | None:
        if len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") > MAX_HEAD_BYTES:
            return 414, f"the request line is longer than {MAX_HEAD_BYTES} bytes"
        if sum(len(name) + len(value) for name, value in scope["headers"]) > MAX_HEAD_BYTES:
            return 431, f"the request headers are larger than {MAX_HEAD_BYTES} bytes"
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        host = headers.get("host", "")
        if self._hosts is not None and host and _host_name(host) not in self._hosts:
            return 400, "this server does not answer for that Host; add the name to [api] allowed_hosts"
        origin = headers.get("origin")
        if origin is not None:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.strip().lower():
                return 403, "cross-origin requests are refused"
        if scope["method"] in _STATE_CHANGING and not _is_json(headers.get("content-type", "")):
            return 415, "the request body must be JSON (Content-Type: application/json)"
        return None


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps(
        {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": detail}
    ).encode()
    headers = [(b"content-type", b"application/problem+json"), (b"content-length", str(len(body)).encode())]
    start: HTTPResponseStartEvent = {"type": "http.response.start", "status": status, "headers": headers}
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(start)
    await send(end)
