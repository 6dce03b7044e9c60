"""The stored answers that answered nothing (`insufficient` or `fail`), as the gaps in the docs read them.

Scoping follows `indexer.history`: a caller limited to some repositories (`scope`) sees an answer only when
it was asked within them and cites only them. `only` narrows further to the repositories a caller asks for:
an answer asked within them, or one whose closest passage lies in one of them (an answer asked over every
repository has no other tie to a repository).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from indexer.database import Connection

__all__ = ["FailedQuestion", "failed_questions"]


@dataclass(frozen=True, slots=True)
class FailedQuestion:
    """A stored answer that answered nothing: its question, status, when, and the closest passage found."""

    answer_id: str
    question: str
    status: str
    asked_at: datetime
    repository: str | None
    path: str | None
    heading: str | None


_SQL = """
WITH scoped AS (
    SELECT a.id, a.question, a.status, a.created_at,
           a.body #>> '{nearest,0,repository}' AS repository,
           a.body #>> '{nearest,0,path}' AS path,
           a.body #>> '{nearest,0,heading}' AS heading,
           coalesce(ARRAY(SELECT jsonb_array_elements_text(
               CASE jsonb_typeof(a.body #> '{filters,repositories}')
               WHEN 'array' THEN a.body #> '{filters,repositories}' ELSE '[]'::jsonb END)), '{}') AS asked,
           coalesce(ARRAY(SELECT DISTINCT x #>> '{}'
                          FROM jsonb_path_query(a.body, 'strict $.clauses[*].sources[*].repository') x),
                    '{}') AS cited
    FROM answers a
    WHERE a.status IN ('insufficient', 'fail')
      AND (%(since)s::timestamptz IS NULL OR a.created_at >= %(since)s)
)
SELECT id, question, status, created_at, repository, path, heading FROM scoped
WHERE (%(scope)s::text[] IS NULL
       OR (cardinality(asked) > 0 AND asked <@ %(scope)s::text[] AND cited <@ %(scope)s::text[]))
  AND (%(only)s::text[] IS NULL
       OR (cardinality(asked) > 0 AND asked <@ %(only)s::text[]) OR repository = ANY(%(only)s::text[]))
ORDER BY created_at DESC, id
LIMIT %(limit)s
"""


def failed_questions(
    conn: Connection,
    scope: Collection[str] | None,
    only: Collection[str] | None = None,
    *,
    since: datetime | None = None,
    limit: int = 5000,
) -> list[FailedQuestion]:
    """Up to `limit` stored answers with status `insufficient` or `fail`, newest first, readable within
    `scope` (None: all) and tied to `only` (None: any), asked at `since` or later."""
    params = {
        "scope": None if scope is None else list(scope),
        "only": None if only is None else list(only),
        "since": since,
        "limit": limit,
    }
    return [
        FailedQuestion(str(r[0]), r[1], r[2], r[3], r[4], r[5], r[6] or None)
        for r in conn.execute(_SQL, params).fetchall()
    ]
