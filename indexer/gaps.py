"""The stored answers that answered nothing (`insufficient` or `fail`), as the gaps in the docs read them.

Scoping follows `indexer.history`: a caller limited to some repositories (`scope`) sees an answer only when
it was asked within them and cites only them. `only` narrows further to the repositories a caller asks for:
an answer asked within them, or one whose closest passage lies in one of them (an answer asked over every
repository has no other tie to a repository). The verified answers that close gaps (`ANSWERED`) are
scoped the same way, and `live_sentences` reads back the passages a gap shows, as they are now.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from indexer.database import Connection

__all__ = ["ANSWERED", "FAILED", "FailedQuestion", "LiveSentence", "live_sentences", "stored_questions"]


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
    nearest: tuple[dict[str, Any], ...] = field(default=())
    """The answer's near passages as stored (`engine.passages.NearPassage.to_dict`), best first."""
    cited: tuple[int, ...] = field(default=())
    """The sentences a verified answer cites (`ANSWERED`); empty for the others."""


_SQL = """
WITH scoped AS (
    SELECT a.id, a.question, a.status, a.created_at,
           coalesce(a.body #>> '{nearest,0,repository}', a.body #>> '{clauses,0,sources,0,repository}')
               AS repository,
           coalesce(a.body #>> '{nearest,0,path}', a.body #>> '{clauses,0,sources,0,path}') AS path,
           coalesce(a.body #>> '{nearest,0,heading}', a.body #>> '{clauses,0,sources,0,heading}') AS heading,
           CASE jsonb_typeof(a.body -> 'nearest') WHEN 'array' THEN a.body -> 'nearest' ELSE '[]'::jsonb END
               AS nearest,
           coalesce(ARRAY(SELECT (x #>> '{}')::bigint
                          FROM jsonb_path_query(a.body, 'strict $.clauses[*].sources[*].sentence_id') x
                          WHERE jsonb_typeof(x) = 'number'), '{}') AS cited_ids,
           coalesce(ARRAY(SELECT jsonb_array_elements_text(
               CASE jsonb_typeof(a.body #> '{filters,repositories}')
               WHEN 'array' THEN a.body #> '{filters,repositories}' ELSE '[]'::jsonb END)), '{}') AS asked,
           coalesce(ARRAY(SELECT DISTINCT x #>> '{}'
                          FROM jsonb_path_query(a.body, 'strict $.clauses[*].sources[*].repository') x),
                    '{}') AS cited
    FROM answers a
    WHERE a.status = ANY(%(statuses)s::text[])
      AND (%(since)s::timestamptz IS NULL OR a.created_at >= %(since)s)
)
SELECT id, question, status, created_at, repository, path, heading, nearest, cited_ids FROM scoped
WHERE (%(scope)s::text[] IS NULL
       OR (cardinality(asked) > 0 AND asked <@ %(scope)s::text[] AND cited <@ %(scope)s::text[]))
  AND (%(only)s::text[] IS NULL
       OR (cardinality(asked) > 0 AND asked <@ %(only)s::text[]) OR repository = ANY(%(only)s::text[]))
ORDER BY created_at DESC, id
LIMIT %(limit)s
"""


FAILED = ("insufficient", "fail")
"""The statuses of the answers that open gaps (`stored_questions`)."""
ANSWERED = ("answer",)
"""The status of the verified answers that close gaps (`stored_questions`)."""


def stored_questions(
    conn: Connection,
    statuses: tuple[str, ...],
    scope: Collection[str] | None,
    only: Collection[str] | None = None,
    *,
    since: datetime | None = None,
    limit: int = 5000,
) -> list[FailedQuestion]:
    """Up to `limit` stored answers with one of `statuses` (`FAILED`: `insufficient` or `fail`; `ANSWERED`:
    verified, each with the sentences it cites and, as its closest section, its first source's), newest
    first, readable within `scope` (None: all) and tied to `only` (None: any), asked at `since` or later."""
    params = {
        "statuses": list(statuses),
        "scope": None if scope is None else list(scope),
        "only": None if only is None else list(only),
        "since": since,
        "limit": limit,
    }
    return [
        FailedQuestion(
            str(r[0]),
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6] or None,
            tuple(n for n in r[7] if isinstance(n, dict)),
            tuple(int(i) for i in r[8]),
        )
        for r in conn.execute(_SQL, params).fetchall()
    ]


@dataclass(frozen=True, slots=True)
class LiveSentence:
    """An indexed sentence as it is now, and when its document last changed."""

    id: int
    text: str
    repository: str
    path: str
    heading: str
    line_start: int
    line_end: int
    document_id: int
    changed_at: datetime
    """When its document's content last changed (`documents.indexed_at`)."""


_LIVE_SQL = """
SELECT s.id, s.text, r.name, d.path, array_to_string(s.heading_path, ' > '), s.line_start, s.line_end, d.id,
       d.indexed_at
FROM sentences s JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id
WHERE s.id = ANY(%s)
"""


def live_sentences(conn: Connection, ids: Collection[int]) -> dict[int, LiveSentence]:
    """The sentences among `ids` that still exist, by id (an edited sentence is a new one: its old id is
    absent)."""
    if not ids:
        return {}
    rows = conn.execute(_LIVE_SQL, (sorted(set(ids)),)).fetchall()
    return {r[0]: LiveSentence(r[0], r[1], r[2], r[3], r[4] or "", r[5], r[6], r[7], r[8]) for r in rows}
