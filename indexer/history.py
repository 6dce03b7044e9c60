"""The most recent stored answers a caller may read, newest first: what the page's history lists.

A question asked again (the same text under the same filters) is one entry: its latest answer, with how many
times it was asked, answered or refused, recomputed or served from the store (`StoredAnswerRow.times`), and
when it was first asked.

Scoping follows `indexer.browse.AnswerScope.within`, in SQL so that a limit counts only readable answers: a
caller limited to some repositories sees an answer only when it was asked within them and cites only them.
Whether each answer's sources still say what they said is the answer store's to tell (`engine.store`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from indexer.database import Connection

__all__ = ["StoredAnswerRow", "recent_answers"]


@dataclass(frozen=True, slots=True)
class StoredAnswerRow:
    """A stored answer's id, question, status and when it was stored."""

    id: str
    question: str
    status: str
    created_at: datetime
    times: int = 1
    """How many times this question was asked under these filters: every stored answer, and every time one
    was served again from the store (this one the latest)."""
    first_at: datetime | None = None
    """When the first of them was stored."""


_SQL = """
WITH scoped AS (
    SELECT a.id, a.question, a.status, a.created_at, a.served, a.body -> 'filters' AS filters,
           coalesce(ARRAY(SELECT jsonb_array_elements_text(
               CASE jsonb_typeof(a.body #> '{filters,repositories}')
               WHEN 'array' THEN a.body #> '{filters,repositories}' ELSE '[]'::jsonb END)), '{}') AS asked,
           coalesce(ARRAY(SELECT DISTINCT x #>> '{}'
                          FROM jsonb_path_query(a.body, 'strict $.clauses[*].sources[*].repository') x),
                    '{}') AS cited
    FROM answers a
), grouped AS (
    SELECT id, question, status, created_at,
           sum(served) OVER asked_again AS times,
           min(created_at) OVER asked_again AS first_at,
           row_number() OVER (asked_again ORDER BY created_at DESC, id) AS newest
    FROM scoped
    WHERE %(repos)s::text[] IS NULL
       OR (cardinality(asked) > 0 AND asked <@ %(repos)s::text[] AND cited <@ %(repos)s::text[])
    WINDOW asked_again AS (PARTITION BY question, filters)
)
SELECT id, question, status, created_at, times, first_at FROM grouped
WHERE newest = 1
ORDER BY created_at DESC, id
LIMIT %(limit)s
"""


def recent_answers(
    conn: Connection, repositories: Collection[str] | None, limit: int
) -> list[StoredAnswerRow]:
    """Up to `limit` questions' latest stored answers readable with `repositories` (None: all), newest
    first, each with how many times it was asked."""
    repos = None if repositories is None else list(repositories)
    rows = conn.execute(_SQL, {"repos": repos, "limit": limit}).fetchall()
    return [StoredAnswerRow(str(r[0]), r[1], r[2], r[3], int(r[4]), r[5]) for r in rows]
