"""Filters checked against the index before any work: a filter that can match nothing is bad input.

Every front end narrows a search, an answer or a gaps listing through `checked_filters`: the API's routes
(`POST /v1/answers`, `GET /v1/search`, `GET /v1/gaps`, through `api.scope`) and the CLI's in-process
commands (`search`, `ask`, `gaps`, `export-feedback`); a CLI command that goes through a running server gets
the server's 400 and exits with status 2 with its message. A repository the filter names must be indexed
and readable by the caller; a path prefix must begin the path of some indexed document among the
repositories searched. Otherwise an `InputError` says so and names the indexed repositories the caller may
read, never another one: to a scoped caller a repository outside its scope reads as not indexed.
"""

from __future__ import annotations

from collections.abc import Collection

from engine.inputs import InputError
from engine.search import Filters
from indexer.database import Connection

__all__ = ["MAX_SHOWN", "checked_filters", "checked_repositories", "indexed_repositories"]

MAX_SHOWN = 8
"""How many top-level paths a path prefix's message shows as examples."""

_PREFIX_SQL = """
SELECT EXISTS (
    SELECT 1 FROM documents d JOIN repositories r ON r.id = d.repository_id
    WHERE (%(repos)s::text[] IS NULL OR r.name = ANY(%(repos)s::text[]))
      AND starts_with(d.path, %(prefix)s::text))
"""

_TOP_SQL = """
SELECT DISTINCT split_part(d.path, '/', 1) AS top
FROM documents d JOIN repositories r ON r.id = d.repository_id
WHERE %(repos)s::text[] IS NULL OR r.name = ANY(%(repos)s::text[])
ORDER BY top LIMIT %(limit)s
"""


def indexed_repositories(conn: Connection, readable: Collection[str] | None = None) -> list[str]:
    """The names of the indexed repositories among `readable` (None: all of them), sorted."""
    rows = conn.execute(
        "SELECT name FROM repositories WHERE %(names)s::text[] IS NULL OR name = ANY(%(names)s::text[])"
        " ORDER BY name",
        {"names": None if readable is None else list(readable)},
    ).fetchall()
    return [str(row[0]) for row in rows]


def _unknown_message(unknown: list[str], visible: list[str]) -> str:
    named = ", ".join(unknown)
    said = (
        f"repository {named} is not indexed" if len(unknown) == 1 else f"repositories {named} are not indexed"
    )
    if not visible:
        return f"{said}; no repository is indexed yet"
    return f"{said}; the indexed repositories are: {', '.join(visible)}"


def checked_repositories(
    conn: Connection, requested: Collection[str] | None, readable: Collection[str] | None = None
) -> tuple[str, ...] | None:
    """The repositories a query may touch: the `requested` ones (sorted, each once) when every one is
    indexed and within `readable` (None: every repository), else `readable` when none is requested; an
    `InputError` naming the indexed repositories within `readable` when a requested one is not one of them."""
    if not requested:
        return None if readable is None else tuple(readable)
    visible = indexed_repositories(conn, readable)
    unknown = sorted(set(requested) - set(visible))
    if unknown:
        raise InputError(_unknown_message(unknown, visible))
    return tuple(sorted(set(requested)))


def _prefix_message(conn: Connection, prefix: str, repositories: tuple[str, ...] | None) -> str:
    params = {"repos": None if repositories is None else list(repositories), "limit": MAX_SHOWN + 1}
    tops = [str(row[0]) for row in conn.execute(_TOP_SQL, params).fetchall()]
    where = f" in {', '.join(repositories)}" if repositories else ""
    said = f"path_prefix {prefix!r} matches no indexed document{where}"
    if not tops:
        return f"{said}; none is indexed yet"
    more = ", …" if len(tops) > MAX_SHOWN else ""
    return f"{said}; paths begin with: {', '.join(tops[:MAX_SHOWN])}{more}"


def checked_filters(conn: Connection, requested: Filters, readable: Collection[str] | None = None) -> Filters:
    """The filters a query runs under: `checked_repositories` of the requested ones, and the path prefix when
    it begins some indexed document's path among them; an `InputError` saying which filter matches nothing
    (and what would), naming nothing outside `readable`."""
    repositories = checked_repositories(conn, requested.repositories, readable)
    prefix = requested.path_prefix
    if prefix is not None:
        params = {"repos": None if repositories is None else list(repositories), "prefix": prefix}
        row = conn.execute(_PREFIX_SQL, params).fetchone()
        if not (row and row[0]):
            raise InputError(_prefix_message(conn, prefix, repositories))
    return Filters(repositories, prefix)
