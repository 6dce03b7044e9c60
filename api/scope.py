"""The filters a request runs under: checked as text, narrowed to the caller's key, checked against the index.

Every route that takes a repository or path filter (`POST /v1/answers`, `GET /v1/search`, `GET /v1/gaps`)
(and the service functions behind them that the MCP tools call too) narrows its filters through
`checked_scope` before any work, so each refuses the same input with the same message: a name outside
a scoped key's repositories is 403 (`api.auth.Access.restrict`), a repository that is not indexed or a path
prefix that begins no indexed document's path is 400 naming the indexed repositories the key may read
(`engine.filters`).
"""

from __future__ import annotations

from collections.abc import Sequence

from litestar.exceptions import ValidationException

from api.auth import Access
from api.context import Services
from engine.filters import checked_filters
from engine.inputs import InputError, optional_text
from engine.search import Filters

__all__ = ["checked_scope"]


def checked_scope(
    services: Services,
    access: Access,
    repositories: Sequence[str] | None,
    path_prefix: str | None = None,
    *,
    field: str = "repository",
) -> Filters:
    """The query's filters for a caller with `access`: the named repositories (else every one the key may
    read) and the path prefix, blank values being no filter; 400 for a value the contract or the index
    refuses, 403 for a repository outside the key's scope. `field` names the repository filter in messages."""
    max_chars = services.settings.limits.max_query_chars
    try:
        names = tuple(n for n in (optional_text(field, r, max_chars) for r in repositories or ()) if n)
        prefix = optional_text("path_prefix", path_prefix, max_chars)
        scope = access.restrict(names or None)
        if not names and prefix is None:  # nothing to check against the index
            return Filters(scope, None)
        with services.connection() as conn:
            return checked_filters(conn, Filters(names or None, prefix), access.repositories)
    except InputError as exc:
        raise ValidationException(str(exc)) from exc
