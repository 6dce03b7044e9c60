"""How far the index is behind, within one scope (repositories and a path prefix): what an answer warns about.

`unembedded_in_scope` counts the sentences still in the embedding backlog, which only the lexical lane can
find. `changed_on_disk` compares each indexed document's size and mtime with its file as it is now (one
`stat` per document, no read): a file edited, truncated or removed since it was indexed counts, so with no
watcher running an answer can say its sources may be older than the files. A repository whose root is not
on this machine (an API replica) is not compared. `skipped_files` lists the files the indexer could not take
(`indexer.skips`), which keep their previous version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: `engine.caveats` is read by the CLI's printing without the driver
    from indexer.database import Connection

__all__ = ["MAX_COMPARED", "SkippedFile", "changed_on_disk", "skipped_files", "unembedded_in_scope"]

MAX_COMPARED = 50_000
"""The most documents `changed_on_disk` stats (about a quarter of a second)."""

_SCOPE = """
      (%(repositories)s::text[] IS NULL OR r.name = ANY(%(repositories)s::text[]))
  AND (%(path_prefix)s::text IS NULL OR starts_with(d.path, %(path_prefix)s::text))
"""

_BACKLOG_SQL = f"""
SELECT count(*) FROM embedding_backlog q
JOIN sentences s ON s.id = q.sentence_id
JOIN documents d ON d.id = s.document_id
JOIN repositories r ON r.id = d.repository_id
WHERE {_SCOPE}
"""

_DOCUMENTS_SQL = f"""
SELECT r.root, d.path, d.size_bytes, d.mtime_ns FROM documents d
JOIN repositories r ON r.id = d.repository_id
WHERE {_SCOPE}
ORDER BY r.root
LIMIT %(limit)s
"""


def _params(repositories: tuple[str, ...] | None, path_prefix: str | None) -> dict[str, object]:
    return {"repositories": list(repositories) if repositories else None, "path_prefix": path_prefix or None}


def unembedded_in_scope(
    conn: Connection, repositories: tuple[str, ...] | None = None, path_prefix: str | None = None
) -> int:
    """How many sentences in scope wait for (or failed) their embedding: the vector lane cannot find them.

    With no scope the backlog is counted alone (every backlog row's sentence, document and repository exist:
    the keys cascade), so an unscoped answer served during a large backlog pays no join per serve."""
    if not repositories and not path_prefix:
        row = conn.execute("SELECT count(*) FROM embedding_backlog").fetchone()
    else:
        row = conn.execute(_BACKLOG_SQL, _params(repositories, path_prefix)).fetchone()
    return int(row[0]) if row else 0


def changed_on_disk(
    conn: Connection, repositories: tuple[str, ...] | None = None, path_prefix: str | None = None
) -> int:
    """How many indexed documents in scope differ on disk from what was indexed (size or mtime), or are gone;
    documents of a repository whose root folder is not here are not counted."""
    params = {**_params(repositories, path_prefix), "limit": MAX_COMPARED}
    changed = 0
    roots: dict[str, bool] = {}
    for root, path, size, mtime_ns in conn.execute(_DOCUMENTS_SQL, params).fetchall():
        if not roots.setdefault(root, os.path.isdir(root)):
            continue
        try:
            stat = (Path(root) / path).stat()
        except OSError:
            changed += 1
            continue
        if stat.st_size != size or stat.st_mtime_ns != mtime_ns:
            changed += 1
    return changed


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file left at its previous version (or out of the index), and why."""

    repository: str
    path: str
    reason: str
    detail: str


def skipped_files(conn: Connection, repositories: list[str] | None, limit: int = 100) -> list[SkippedFile]:
    """The first `limit` skipped files of `repositories` (None: all), by repository and path."""
    rows = conn.execute(
        "SELECT r.name, k.path, k.reason, k.detail FROM skipped_files k"
        " JOIN repositories r ON r.id = k.repository_id"
        " WHERE %(repositories)s::text[] IS NULL OR r.name = ANY(%(repositories)s::text[])"
        " ORDER BY r.name, k.path LIMIT %(limit)s",
        {"repositories": repositories, "limit": limit},
    ).fetchall()
    return [SkippedFile(*row) for row in rows]
