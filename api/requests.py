"""The request class of the app: one place where a body that cannot be decoded becomes the client's error.

msgspec reports bytes that are not UTF-8 inside a JSON string as a `UnicodeDecodeError`, which Litestar's
decoder does not catch (it catches `msgspec.DecodeError` only), so such a body reached the catch-all handler
as a 500. Every route that reads a JSON body reads it through `Request.json`, so translating the error here
makes it a 400 problem+json on all of them, present and future. The same goes for a body nested deeper than
`MAX_JSON_DEPTH` (a thousand `[` in a 2 KB body): it is refused before it is decoded, so no decoder or
converter recurses through it.
"""

from __future__ import annotations

import re
from typing import Any

from litestar import Request
from litestar.exceptions import SerializationException

__all__ = ["MAX_JSON_DEPTH", "TOO_DEEP", "CitelineRequest", "json_depth", "nests_too_deep"]

MAX_JSON_DEPTH = 32
"""The deepest nesting of arrays and objects a body may have; the API's bodies need 3."""
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(rb"[^\[\]{}]+")


def json_depth(body: bytes) -> int:
    """How deep arrays and objects nest in `body` (strings skipped): a bound, checked before decoding."""
    depth = deepest = 0
    for byte in _NOT_BRACKETS.sub(b"", _STRINGS.sub(b"", body)):
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


TOO_DEEP = f"the request body nests deeper than {MAX_JSON_DEPTH} levels"
"""The 400's message for a body `nests_too_deep` (the API's routes and `/mcp` say the same)."""


def nests_too_deep(body: bytes) -> bool:
    """Whether `body` nests deeper than `MAX_JSON_DEPTH`, counting brackets first so that an ordinary body
    costs one pass."""
    return body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH and json_depth(body) > MAX_JSON_DEPTH


class CitelineRequest(Request[Any, Any, Any]):
    """A Litestar request whose JSON body, when it is not valid UTF-8, is a 400 naming the first bad byte, and
    when it nests deeper than `MAX_JSON_DEPTH`, a 400 saying so."""

    async def json(self) -> Any:
        body = await self.body()
        if nests_too_deep(body):
            raise SerializationException(TOO_DEEP)
        try:
            return await super().json()
        except UnicodeDecodeError as exc:  # Litestar answers SerializationException with a 400
            byte = exc.object[exc.start]
            raise SerializationException(
                f"the request body is not valid UTF-8 (byte {byte:#04x} at offset {exc.start})"
            ) from exc
