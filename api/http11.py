"""uvicorn's h11 protocol, answering an oversized request head with 414 or 431 instead of a reset connection.

h11 refuses a request line or header block longer than `h11_max_incomplete_event_size` (16 KiB by default),
and uvicorn then writes a 400 and closes the socket at once. With the rest of a large request still unread
in the kernel's buffer, closing sends a TCP reset, which destroys the response before the client reads it:
a 200 KB query string read as "connection reset". Here the answer says what was too long (414 for the
request line, 431 for the headers), the write side is shut so the client sees the response end, and what
the client still sends is read and dropped for up to `_LINGER_SECONDS` before the socket closes.
"""

from __future__ import annotations

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["BoundedH11Protocol"]

_LINGER_SECONDS = 2.0
_DEFAULT_LIMIT = 16 * 1024
_STATUS = {
    414: (b"URI Too Long", "the request line is too long"),
    431: (b"Request Header Fields Too Large", "the request headers are too large"),
}


class BoundedH11Protocol(H11Protocol):
    """`H11Protocol` with the oversized-head answer of the module's docstring; every other request as is."""

    _draining = False

    def data_received(self, data: bytes) -> None:
        if not self._draining:
            super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        buffered = self.conn.trailing_data[0]
        limit = self.config.h11_max_incomplete_event_size or _DEFAULT_LIMIT
        if len(buffered) <= limit:
            super().send_400_response(msg)
            return
        status = 414 if b"\n" not in buffered else 431
        reason, detail = _STATUS[status]
        body = detail.encode("ascii")
        head = (
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n" % (status, reason, len(body))
        )
        self.logger.warning("request refused: %s", detail)
        self.transport.write(head + body)
        self._draining = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_SECONDS, self.transport.close)
