"""The API's own settings: where it listens, its keys, its limits and when it reports not ready.

The API sits below the daemon, so it does not read the daemon's `Config`; `citeline api` / `citeline serve`
build an `ApiSettings` from it (host, port, the readiness threshold) and keys come from configuration or the
`CITELINE_API_KEYS` environment variable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from engine.inputs import MAX_K, MAX_QUERY_CHARS, MAX_QUESTION_CHARS

__all__ = [
    "DEFAULT_MAX_DOCUMENT_SENTENCES",
    "DEFAULT_MAX_K",
    "DEFAULT_MAX_QUERY_CHARS",
    "DEFAULT_MAX_QUESTION_CHARS",
    "KEYS_ENV",
    "KEY_PROPERTIES",
    "ApiKey",
    "ApiKeyError",
    "ApiSettings",
    "Limits",
    "keys_from_env",
    "parse_keys",
]

KEYS_ENV = "CITELINE_API_KEYS"
"""Comma-separated keys; `TOKEN` is unscoped, `TOKEN:repo1|repo2` sees those repositories only."""


class ApiKeyError(ValueError):
    """A key specification is malformed; the message says which entry (never the token itself)."""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A bearer token, the repositories it may read (None: all), and whether it may teach: accept sentences
    as answering a question for everyone (`teach`, the key's `teach` property)."""

    token: str
    repositories: tuple[str, ...] | None = None
    teach: bool = False

    def __repr__(self) -> str:  # tokens must not end up in logs or tracebacks
        return f"ApiKey(token='***', repositories={self.repositories!r}, teach={self.teach!r})"


DEFAULT_MAX_QUESTION_CHARS = MAX_QUESTION_CHARS
"""The CLI's limits too (`engine.inputs`): stated there once."""
DEFAULT_MAX_K = MAX_K
DEFAULT_MAX_QUERY_CHARS = MAX_QUERY_CHARS
DEFAULT_MAX_DOCUMENT_SENTENCES = 1000


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits: bad or oversized input is a 4xx before any work is done.

    The OpenAPI schema states the defaults (`api.contract`); limits set tighter here are enforced by the
    handlers on top of the schema's."""

    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS
    max_k: int = DEFAULT_MAX_K
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS
    max_body_bytes: int = 64 * 1024
    max_document_sentences: int = DEFAULT_MAX_DOCUMENT_SENTENCES


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """Everything `create_app` and `run_api` need besides the database and the engine."""

    host: str = "127.0.0.1"
    port: int = 8750
    keys: tuple[ApiKey, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    """Host names the API answers besides its bound address (and, bound to loopback, `localhost`,
    `127.0.0.1` and `[::1]`); `*` answers any (`api.web_guard`)."""
    protect_probes: bool = False
    """Whether `/healthz`, `/readyz` and `/metrics` need a key too (only when keys are configured)."""
    warn_backlog_age_seconds: float = 300.0
    """The oldest backlog age at which the page's freshness panel turns amber (red at the ready limit)."""
    ready_max_backlog_age_seconds: float = 1800.0
    database_timeout_seconds: float = 3.0
    """How long a request waits for a pooled connection before answering 503."""
    pool_size: int = 8
    limits: Limits = field(default_factory=Limits)


KEY_PROPERTIES = ("teach",)
"""The properties a key entry may name after its second ':' (`parse_keys`)."""


def parse_keys(entries: Iterable[str]) -> tuple[ApiKey, ...]:
    """Keys from `TOKEN[:REPOSITORIES[:PROPERTIES]]` entries (blank entries are ignored): `TOKEN` reads every
    repository, `TOKEN:repo1|repo2` only those; a third field names properties, `|`-separated, of which
    `teach` lets the key accept sentences for everyone: `TOKEN:repo1|repo2:teach`, or `TOKEN::teach` for
    every repository. Anything else is an `ApiKeyError` naming the entry by position, never the token."""
    keys: list[ApiKey] = []
    for position, raw in enumerate(entries, start=1):
        entry = raw.strip()
        if not entry:
            continue
        fields = entry.split(":")
        if len(fields) > 3:
            raise ApiKeyError(
                f"API key #{position}: expected TOKEN, TOKEN:REPOSITORIES or TOKEN:REPOSITORIES:PROPERTIES,"
                f" got {len(fields) - 1} ':'"
            )
        token = fields[0].strip()
        if len(token) < 16:
            raise ApiKeyError(f"API key #{position}: a token needs at least 16 characters")
        scope = fields[1] if len(fields) > 1 else ""
        repositories = tuple(sorted({r.strip() for r in scope.split("|") if r.strip()}))
        if len(fields) == 2 and not repositories:
            raise ApiKeyError(f"API key #{position}: ':' must be followed by repository names")
        properties = [p.strip() for p in fields[2].split("|")] if len(fields) == 3 else []
        unknown = sorted({p for p in properties if p not in KEY_PROPERTIES})
        if len(fields) == 3 and not any(properties):
            raise ApiKeyError(f"API key #{position}: the second ':' must be followed by a property (teach)")
        if unknown:
            raise ApiKeyError(
                f"API key #{position}: unknown key property {', '.join(map(repr, unknown))};"
                f" known: {', '.join(KEY_PROPERTIES)}"
            )
        keys.append(ApiKey(token, repositories or None if len(fields) > 1 else None, "teach" in properties))
    return tuple(keys)


def keys_from_env(env: Mapping[str, str] | None = None) -> tuple[ApiKey, ...]:
    """Keys from `CITELINE_API_KEYS` (comma-separated entries), or none."""
    env = os.environ if env is None else env
    return parse_keys(env.get(KEYS_ENV, "").split(","))
