"""The request class of the app: one place where a body that cannot be decoded becomes the client's error.

msgspec reports bytes that are not UTF-8 inside a JSON string as a `UnicodeDecodeError`, which Litestar's
decoder does not catch (it catches `msgspec.DecodeError` only), so such a body reached the catch-all handler
as a 500. Every route that reads a JSON body reads it through `Request.json`, so translating the error here
makes it a 400 problem+json on all of them, present and future.
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import SerializationException

__all__ = ["CitelineRequest"]


class CitelineRequest(Request[Any, Any, Any]):
    """A Litestar request whose JSON body, when it is not valid UTF-8, is a 400 naming the first bad byte."""

    async def json(self) -> Any:
        try:
            return await super().json()
        except UnicodeDecodeError as exc:  # Litestar answers SerializationException with a 400
            byte = exc.object[exc.start]
            raise SerializationException(
                f"the request body is not valid UTF-8 (byte {byte:#04x} at offset {exc.start})"
            ) from exc
