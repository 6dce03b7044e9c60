"""`citeline search` and `ask` through a running server (`daemon.instance`): the same engine, already loaded.

The server's answer and hits come back in the API's shapes, which extend the engine's JSON shapes (`link`
on each source); the keys the API adds only as nulls are dropped, so a script reads what the command
prints on its own. A server that cannot be reached, fails (5xx) or wants a key this command does not
have (401, 403) is `UnreachableError`: the command then answers on its own. Input the server refuses
(another 4xx) is `RefusedError`, with the server's message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from daemon.instance import ServerRecord

__all__ = [
    "RefusedError",
    "UnreachableError",
    "call_api",
    "remote_answer",
    "remote_feedback",
    "remote_gaps",
    "remote_search",
]

_NULLABLE = (
    "fresh",
    "read_as",
    "state",
    "current_line_start",
    "current_line_end",
    "before",
    "after",
    "remembered",
    "chosen_by",
)
"""Keys the API's models carry as null where the engine's JSON leaves them out."""


class UnreachableError(RuntimeError):
    """The server did not answer, or failed: answer without it."""


class RefusedError(RuntimeError):
    """The server refused the request (4xx); the message is its `detail`."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


def call_api(
    record: ServerRecord, path: str, token: str | None, body: dict[str, Any] | None, timeout: float
) -> Any:
    """The JSON the server at `record` answers `path` with (a POST of `body` when given), with `token` as the
    bearer key: `RefusedError` with the server's `detail` for any 4xx, `UnreachableError` when it cannot be
    reached, fails or answers with something that is not JSON. `citeline mcp` calls it too."""
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    request = urllib.request.Request(record.url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if 400 <= exc.code < 500:
            try:
                detail = json.loads(exc.read()).get("detail") or exc.reason
            except (OSError, ValueError):  # an unreadable body: its reason phrase
                detail = exc.reason
            raise RefusedError(exc.code, str(detail)) from exc
        raise UnreachableError(f"HTTP {exc.code}") from exc
    except (OSError, ValueError) as exc:
        raise UnreachableError(str(exc)) from exc


def _call(
    record: ServerRecord, path: str, token: str | None, body: dict[str, Any] | None, timeout: float
) -> Any:
    try:
        return call_api(record, path, token, body, timeout)
    except RefusedError as exc:
        if exc.status in (401, 403):  # no key for it: answer without it
            raise UnreachableError(f"HTTP {exc.status}") from exc
        raise


def _pruned(value: Any) -> Any:
    """`value` without the null keys the API adds (`_NULLABLE`) and an empty `nearest`, at any depth."""
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        k: _pruned(v)
        for k, v in value.items()
        if not (k in _NULLABLE and v is None) and not (k == "nearest" and not v)
    }


def remote_answer(
    record: ServerRecord,
    token: str | None,
    question: str,
    budget: str,
    repositories: tuple[str, ...] | None,
    path_prefix: str | None,
    timeout: float = 600.0,
) -> dict[str, Any]:
    """`POST /v1/answers` on the server: the answer in the engine's JSON shape (with links)."""
    body: dict[str, Any] = {"question": question, "budget": budget}
    if repositories or path_prefix:
        body["filters"] = {"repositories": list(repositories or []) or None, "path_prefix": path_prefix}
    result: dict[str, Any] = _pruned(_call(record, "/v1/answers", token, body, timeout))
    return result


def remote_search(
    record: ServerRecord,
    token: str | None,
    query: str,
    k: int,
    lane: str,
    repositories: tuple[str, ...] | None,
    path_prefix: str | None,
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """`GET /v1/search` on the server: the hits in `Hit.to_dict`'s shape (with links)."""
    params: list[tuple[str, str]] = [("q", query), ("k", str(k)), ("lane", lane)]
    params += [("repo", name) for name in repositories or ()]
    if path_prefix:
        params.append(("path_prefix", path_prefix))
    body = _call(record, "/v1/search?" + urllib.parse.urlencode(params), token, None, timeout)
    hits: list[dict[str, Any]] = _pruned(body["hits"])
    return hits


def remote_feedback(
    record: ServerRecord, token: str | None, answer_id: str, body: dict[str, Any], timeout: float = 60.0
) -> dict[str, Any]:
    """`POST /v1/answers/{id}/feedback` on the server: the stored feedback record. Only a 401 (no key for
    it) falls back to the local process; a 403 is raised as `RefusedError`, so a key that may not teach never
    teaches through the command line's own database connection instead."""
    path = f"/v1/answers/{urllib.parse.quote(answer_id, safe='')}/feedback"
    try:
        result: dict[str, Any] = call_api(record, path, token, body, timeout)
    except RefusedError as exc:
        if exc.status == 401:  # no key for it: recorded without the server
            raise UnreachableError(f"HTTP {exc.status}") from exc
        raise  # a 403 is the server's answer (this key may not teach): no local write goes around it
    return result


def remote_gaps(
    record: ServerRecord, token: str | None, params: list[tuple[str, str]], timeout: float = 60.0
) -> list[dict[str, Any]]:
    """`GET /v1/gaps` on the server: the gap groups, most asked first."""
    body = _call(record, "/v1/gaps?" + urllib.parse.urlencode(params), token, None, timeout)
    gaps: list[dict[str, Any]] = body["gaps"]
    return gaps
