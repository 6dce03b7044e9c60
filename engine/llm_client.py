"""One chat completion on an OpenAI-compatible endpoint, within a deadline, shaped by a JSON schema.

Guarantees:
- A call never waits past its deadline: each request's timeout is the time left, and a reply still arriving
  at the deadline is abandoned.
- The reply is constrained with `response_format` (`json_schema`, which llama.cpp's server, vLLM, Ollama and
  OpenAI accept). A server that refuses it (a 400 or 422 naming `response_format` or `json_schema`) is asked
  again without it, in the same call, and is never sent it again by this client.
- `max_tokens` caps every reply, so a small model cannot write until its context is full.
- Every failure of the endpoint (refused connection, timeout, an HTTP error, a reply with no text) is an
  `EndpointError`, a `PlannerError`: the caller's round goes on without the model.
- `ask` sends a plain-text request (no schema) and returns the reply with the first token's alternatives
  and their log-probabilities where the server gives them (`logprobs`); a server that gives none leaves
  them empty, never fails the call.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from engine.llm_role import LLMRole
from engine.planning import PlannerError

__all__ = ["ChatClient", "ChatReply", "EndpointError", "LLMConfig", "LLMRole", "probe_endpoint"]

_REFUSED = re.compile(r"response_format|json_schema", re.IGNORECASE)
PROBE_SECONDS = 2.0
"""How long `ChatClient.probe` waits for the endpoint's model list."""
PROBE_CACHE_SECONDS = 15.0
"""How long a probe's result is reused, so a readiness probe polled often does not poll the model server."""


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Where the endpoint is and what one answer may ask of it.

    `url` is the API base (".../v1"); the key is sent as a bearer token if set. `budget_seconds` is the time
    all the planner's calls for one answer share; `timeout_seconds` caps any one request within it;
    `max_tokens` caps each reply; `max_evidence` is how many evidence sentences the prompt lists.
    """

    url: str
    model: str
    api_key: str | None = None
    timeout_seconds: float = 60.0
    max_evidence: int = 30
    max_tokens: int = 384
    budget_seconds: float = 10.0
    role: LLMRole = LLMRole.READER
    """What the model does: read (the default) or plan (`LLMRole`)."""
    variants: bool = False
    """When an answer's first round verifies nothing, the model rewrites the question twice in the docs'
    likely terms and the rewrites are searched too (`engine.reader.LLMRewriter`)."""
    reader_candidates: int = 8
    """How many top-rated candidates the reader is shown."""
    none_doubt: float = 0.15
    """A reading whose reply began with NONE at least this probability (where the endpoint gives it) holds
    the units it chose to the declined floors, as if it had answered NONE (above 1: never). Chosen on tuning
data (docs/performance.md, the LLM as reader)."""


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A plain-text reply and, where the server gave them, the first token's alternatives with their
    log-probabilities (most likely first)."""

    text: str
    first_token: list[tuple[str, float]] = field(default_factory=list)


class EndpointError(PlannerError):
    """The endpoint did not give a reply in time (or at all); not the model's output being malformed."""


class ChatClient:
    """Chat completions on one endpoint; remembers whether the server takes `response_format`."""

    __slots__ = ("_client", "_config", "_lock", "_probed", "_schema_refused")

    def __init__(self, config: LLMConfig, client: httpx.Client | None = None) -> None:
        self._config = config
        self._client = client or httpx.Client()
        self._schema_refused = False
        self._lock = threading.Lock()
        self._probed: tuple[float, str | None] | None = None

    @property
    def schema_refused(self) -> bool:
        """The server refused `response_format`; requests carry the schema in the prompt only."""
        return self._schema_refused

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._config.api_key}"} if self._config.api_key else {}

    def complete(self, messages: list[dict[str, str]], schema: dict[str, Any], deadline: float) -> str:
        """The reply's text, asked for under `schema` where the server takes it; by `deadline` (monotonic)."""
        body: dict[str, Any] = {
            "model": self._config.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self._config.max_tokens,
        }
        if not self._schema_refused:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "plan", "schema": schema},
            }
        status, payload = self._post(body, deadline)
        text = payload.decode(errors="replace")
        if status in (400, 422) and "response_format" in body and _REFUSED.search(text):
            self._schema_refused = True
            del body["response_format"]
            status, payload = self._post(body, deadline)
            text = payload.decode(errors="replace")
        if status >= 400:
            raise EndpointError(f"chat completion failed: HTTP {status}: {text[:200]}")
        try:
            content = json.loads(payload)["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise EndpointError(f"chat completion failed: unreadable reply ({exc!r})") from exc
        if not isinstance(content, str):
            raise EndpointError("chat completion returned no text")
        return content

    def ask(
        self, messages: list[dict[str, str]], deadline: float, *, max_tokens: int, alternatives: int = 0
    ) -> ChatReply:
        """A plain-text reply of at most `max_tokens` by `deadline` (monotonic); with `alternatives`, the
        first token's most likely alternatives are asked for too (OpenAI's `logprobs`/`top_logprobs`)."""
        body: dict[str, Any] = {
            "model": self._config.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": max_tokens,
        }
        if alternatives:
            body |= {"logprobs": True, "top_logprobs": alternatives}
        status, payload = self._post(body, deadline)
        if status >= 400:
            text = payload.decode(errors="replace")
            raise EndpointError(f"chat completion failed: HTTP {status}: {text[:200]}")
        try:
            choice = json.loads(payload)["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise EndpointError(f"chat completion failed: unreadable reply ({exc!r})") from exc
        if not isinstance(content, str):
            raise EndpointError("chat completion returned no text")
        return ChatReply(content, _first_token(choice.get("logprobs")))

    def _post(self, body: dict[str, Any], deadline: float) -> tuple[int, bytes]:
        """POST the body; the whole exchange ends by `deadline` or raises `EndpointError`."""
        remaining = min(deadline - time.monotonic(), self._config.timeout_seconds)
        if remaining <= 0:
            raise EndpointError("chat completion failed: no time left in the planner's budget")
        url = self._config.url.rstrip("/") + "/chat/completions"
        try:
            with self._client.stream(
                "POST", url, json=body, headers=self._headers(), timeout=httpx.Timeout(remaining)
            ) as response:
                chunks = []
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise EndpointError("chat completion failed: timed out within the planner's budget")
                return response.status_code, b"".join(chunks)
        except httpx.TimeoutException as exc:
            raise EndpointError(
                f"chat completion failed: timed out within the planner's budget ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            raise EndpointError(f"chat completion failed: {type(exc).__name__}: {exc}") from exc

    def probe(self) -> str | None:
        """None when the endpoint lists its models, else why not; a result is reused for a little while."""
        with self._lock:
            if self._probed is not None and time.monotonic() - self._probed[0] < PROBE_CACHE_SECONDS:
                return self._probed[1]
        problem = probe_endpoint(self._config, self._client)
        with self._lock:
            self._probed = (time.monotonic(), problem)
        return problem


def _first_token(logprobs: Any) -> list[tuple[str, float]]:
    """The first token's alternatives from an OpenAI `logprobs` object; empty when it has none."""
    try:
        first = logprobs["content"][0]
        pairs = [(str(t["token"]), float(t["logprob"])) for t in first.get("top_logprobs") or [first]]
    except (KeyError, IndexError, TypeError, ValueError):
        return []
    return sorted(pairs, key=lambda pair: -pair[1])


def probe_endpoint(config: LLMConfig, client: httpx.Client | None = None) -> str | None:
    """GET the endpoint's `/models`: None when it answers 200, else the reason (one line)."""
    url = config.url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        if client is None:
            response = httpx.get(url, headers=headers, timeout=PROBE_SECONDS)
        else:
            response = client.get(url, headers=headers, timeout=PROBE_SECONDS)
    except httpx.HTTPError as exc:
        return f"{url} unreachable: {type(exc).__name__}: {exc}"
    if response.status_code != 200:
        return f"{url} answered HTTP {response.status_code}"
    return None
