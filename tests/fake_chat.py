"""A FAKE OpenAI-compatible chat-completions server, for the replies a real server cannot be made to give.

It is not a model. The real planner path runs against llama.cpp's `llama-server` in `tests/test_real_llm.py`;
this fake is kept only for what no real server can be made to do on demand: answer 5xx, write garbage or
malformed plans, hang past a budget, or refuse `response_format` as some servers do.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, slots=True)
class Status:
    """Answer with this HTTP status and body."""

    code: int
    body: str = ""


@dataclass(frozen=True, slots=True)
class Completion:
    """Answer with this content and, as OpenAI's `logprobs` give them, the first token's alternatives."""

    content: str
    first_token: tuple[tuple[str, float], ...] = ()


HANG = "__hang__"
"""A scripted reply: accept the request and answer nothing until the server closes."""

Reply = str | int | Status | Completion


class FakeChatServer:
    """Answers POST /v1/chat/completions with the next scripted reply (a message content string, a
    `Completion` with log-probabilities, an int status to fail with, a `Status`, or `HANG`) and GET
    /v1/models with one model; records every request body and header, so tests can check what the planner
    sent and how it reacted."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._closing = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path != "/v1/models":
                    self._send(404, b"{}")
                    return
                self._send(200, json.dumps({"data": [{"id": "tiny-model"}]}).encode())

            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                outer.requests.append(json.loads(self.rfile.read(length)))
                outer.headers.append(dict(self.headers))
                reply = outer.replies.pop(0) if outer.replies else 500
                if self.path != "/v1/chat/completions":
                    self._send(404, b"{}")
                elif reply == HANG:
                    outer._closing.wait()
                elif isinstance(reply, int):
                    self._send(reply, b'{"error": "scripted failure"}')
                elif isinstance(reply, Status):
                    self._send(reply.code, reply.body.encode())
                elif isinstance(reply, Completion):
                    top = [{"token": t, "logprob": lp} for t, lp in reply.first_token]
                    logprobs = {"content": [{**top[0], "top_logprobs": top}]} if top else None
                    message = {"role": "assistant", "content": reply.content}
                    choice = {"message": message, "logprobs": logprobs}
                    self._send(200, json.dumps({"choices": [choice]}).encode())
                else:
                    message = {"role": "assistant", "content": reply}
                    self._send(200, json.dumps({"choices": [{"message": message}]}).encode())

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
