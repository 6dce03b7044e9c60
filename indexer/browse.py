"""Read-only queries the HTTP API needs beyond search and status: a sentence among its neighbours, a
document's sentences with their embedding state, which repositories a stored answer touches, the oldest
backlog item, and new ingest samples for the metrics.

Every query that returns indexed text takes `repositories`: None means every repository, a list restricts the
rows inside the SQL itself, so a key scoped to some repositories cannot read another one's rows whatever the
caller does with the result (an empty list matches nothing).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from indexer.database import Connection

__all__ = [
    "AnswerScope",
    "DocumentSentence",
    "DocumentView",
    "EmbeddingState",
    "IngestSample",
    "Neighbour",
    "OldestBacklog",
    "SentenceView",
    "answer_scope",
    "document_view",
    "ingest_samples_after",
    "oldest_backlog",
    "ping",
    "sentence_view",
]


class EmbeddingState(enum.Enum):
    """Where a sentence stands with the embedder."""

    EMBEDDED = "embedded"
    """It has a vector: both lanes find it."""
    PENDING = "pending"
    """It waits in the backlog: only the lexical lane finds it for now."""
    FAILED = "failed"
    """The embedder gave up on it after its attempts; it stays lexical-only until re-enqueued."""
    MISSING = "missing"
    """Neither embedded nor queued (a model change in progress); transient."""


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A sentence next to the one asked for."""

    id: int
    text: str
    line_start: int
    line_end: int
    kind: str = "sentence"
    """`sentence`, `heading`, `table_row` or `code` (a whole code block, its line breaks kept)."""


@dataclass(frozen=True, slots=True)
class SentenceView:
    """A sentence with its file, heading, lines, commit and neighbours (up to `radius` each side, ordinal
    order); the API serves it as it is, so its fields, in this order, are the JSON shape."""

    id: int
    text: str
    repository: str
    path: str
    document_id: int
    ordinal: int
    heading: str
    """The heading path joined with " > "."""
    heading_path: tuple[str, ...]
    line_start: int
    line_end: int
    git_commit: str | None
    embedded: bool
    before: tuple[Neighbour, ...]
    after: tuple[Neighbour, ...]
    kind: str = "sentence"
    """As a neighbour's."""


@dataclass(frozen=True, slots=True)
class DocumentSentence:
    """A document's sentence with its embedding state."""

    id: int
    ordinal: int
    kind: str
    text: str
    heading_path: tuple[str, ...]
    line_start: int
    line_end: int
    embedding: EmbeddingState


@dataclass(frozen=True, slots=True)
class DocumentView:
    """A document and one page of its sentences, from `offset`; served as it is, like `SentenceView`."""

    id: int
    repository: str
    path: str
    title: str | None
    git_commit: str | None
    indexed_at: datetime
    sentence_count: int
    offset: int
    sentences: tuple[DocumentSentence, ...]


@dataclass(frozen=True, slots=True)
class AnswerScope:
    """The repositories a stored answer was asked over (empty: all) and those its sources come from."""

    filter_repositories: tuple[str, ...]
    source_repositories: tuple[str, ...]

    def within(self, repositories: tuple[str, ...] | None) -> bool:
        """Whether a caller limited to `repositories` (None: all) may read the answer.

        An answer asked over every repository may cite any of them, even when today's sources happen to
        lie in one, so a scoped caller sees only answers asked within its scope and citing only it.
        """
        if repositories is None:
            return True
        allowed = set(repositories)
        return bool(self.filter_repositories) and allowed.issuperset(
            self.filter_repositories + self.source_repositories
        )


@dataclass(frozen=True, slots=True)
class OldestBacklog:
    """The oldest pending backlog item: its repository and age, or none pending."""

    repository: str | None
    age_seconds: float


@dataclass(frozen=True, slots=True)
class IngestSample:
    """One change-seen-to-committed latency sample."""

    id: int
    repository: str
    latency_seconds: float


_SCOPE = "(%(repos)s::text[] IS NULL OR r.name = ANY(%(repos)s::text[]))"

_SENTENCE_SQL = f"""
SELECT s.id, s.text, r.name, d.path, d.id, s.ordinal, s.heading_path, s.line_start, s.line_end, d.git_commit,
       EXISTS (SELECT 1 FROM sentence_embeddings e WHERE e.sentence_id = s.id), s.kind
FROM sentences s JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id
WHERE s.id = %(id)s AND {_SCOPE}
"""

_NEIGHBOURS_SQL = """
SELECT id, text, line_start, line_end, ordinal, kind FROM sentences
WHERE document_id = %s AND ordinal BETWEEN %s AND %s AND ordinal <> %s
ORDER BY ordinal
"""


def sentence_view(
    conn: Connection, sentence_id: int, repositories: tuple[str, ...] | None, radius: int = 2
) -> SentenceView | None:
    """The sentence with up to `radius` neighbours each side, or None if absent or out of scope."""
    row = conn.execute(_SENTENCE_SQL, {"id": sentence_id, "repos": _array(repositories)}).fetchone()
    if row is None:
        return None
    (
        id_,
        text,
        repository_name,
        path,
        document_id,
        ordinal,
        heading_path,
        start,
        end,
        commit,
        embedded,
        kind,
    ) = row
    around = conn.execute(
        _NEIGHBOURS_SQL, (document_id, ordinal - radius, ordinal + radius, ordinal)
    ).fetchall()
    heading = " > ".join(heading_path)
    return SentenceView(
        id_,
        text,
        repository_name,
        path,
        document_id,
        ordinal,
        heading,
        tuple(heading_path),
        start,
        end,
        commit,
        embedded,
        tuple(Neighbour(n[0], n[1], n[2], n[3], n[5]) for n in around if n[4] < ordinal),
        tuple(Neighbour(n[0], n[1], n[2], n[3], n[5]) for n in around if n[4] > ordinal),
        kind,
    )


_DOCUMENT_SQL = f"""
SELECT d.id, r.name, d.path, d.title, d.git_commit, d.indexed_at, d.sentence_count
FROM documents d JOIN repositories r ON r.id = d.repository_id
WHERE r.name = %(name)s AND d.path = %(path)s AND {_SCOPE}
"""

_DOCUMENT_SENTENCES_SQL = """
SELECT s.id, s.ordinal, s.kind, s.text, s.heading_path, s.line_start, s.line_end,
       e.sentence_id IS NOT NULL, q.sentence_id IS NOT NULL, q.failed_at IS NOT NULL
FROM sentences s
LEFT JOIN sentence_embeddings e ON e.sentence_id = s.id
LEFT JOIN embedding_backlog q ON q.sentence_id = s.id
WHERE s.document_id = %s
ORDER BY s.ordinal
OFFSET %s LIMIT %s
"""


def _embedding_state(embedded: bool, queued: bool, failed: bool) -> EmbeddingState:
    if embedded:
        return EmbeddingState.EMBEDDED
    if failed:
        return EmbeddingState.FAILED
    return EmbeddingState.PENDING if queued else EmbeddingState.MISSING


def document_view(
    conn: Connection,
    repository: str,
    path: str,
    repositories: tuple[str, ...] | None,
    *,
    offset: int = 0,
    limit: int = 500,
) -> DocumentView | None:
    """One page of a document's sentences in order, or None if absent or out of scope."""
    head = conn.execute(
        _DOCUMENT_SQL, {"name": repository, "path": path, "repos": _array(repositories)}
    ).fetchone()
    if head is None:
        return None
    rows = conn.execute(_DOCUMENT_SENTENCES_SQL, (head[0], offset, limit)).fetchall()
    document_id, name, doc_path, title, commit, indexed_at, sentence_count = head
    sentences = tuple(
        DocumentSentence(r[0], r[1], r[2], r[3], tuple(r[4]), r[5], r[6], _embedding_state(r[7], r[8], r[9]))
        for r in rows
    )
    return DocumentView(
        document_id, name, doc_path, title, commit, indexed_at, sentence_count, offset, sentences
    )


_ANSWER_SCOPE_SQL = """
SELECT coalesce(ARRAY(SELECT jsonb_array_elements_text(
           CASE jsonb_typeof(a.body #> '{filters,repositories}')
           WHEN 'array' THEN a.body #> '{filters,repositories}' ELSE '[]'::jsonb END)), '{}'),
       coalesce(ARRAY(SELECT DISTINCT x #>> '{}'
                      FROM jsonb_path_query(a.body, 'strict $.clauses[*].sources[*].repository') x), '{}')
FROM answers a WHERE a.id = %s
"""


def answer_scope(conn: Connection, answer_id: str) -> AnswerScope | None:
    """Which repositories a stored answer involves, or None when there is no such answer."""
    row = conn.execute(_ANSWER_SCOPE_SQL, (answer_id,)).fetchone()
    if row is None:
        return None
    return AnswerScope(tuple(row[0]), tuple(row[1]))


_OLDEST_SQL = """
SELECT r.name, extract(epoch FROM now() - q.enqueued_at)
FROM embedding_backlog q JOIN sentences s ON s.id = q.sentence_id JOIN documents d ON d.id = s.document_id
     JOIN repositories r ON r.id = d.repository_id
WHERE q.failed_at IS NULL
ORDER BY q.enqueued_at
LIMIT 1
"""


def oldest_backlog(conn: Connection) -> OldestBacklog:
    """The oldest pending item over all repositories; cheap (the pending index) so probes can call it."""
    row = conn.execute(_OLDEST_SQL).fetchone()
    if row is None:
        return OldestBacklog(None, 0.0)
    return OldestBacklog(row[0], max(0.0, float(row[1])))


def ingest_samples_after(conn: Connection, last_id: int, limit: int = 10_000) -> list[IngestSample]:
    """Ingest samples written after `last_id`, oldest first, so a collector can observe each exactly once."""
    rows = conn.execute(
        "SELECT i.id, r.name, i.latency_seconds FROM ingest_samples i"
        " JOIN repositories r ON r.id = i.repository_id WHERE i.id > %s ORDER BY i.id LIMIT %s",
        (last_id, limit),
    ).fetchall()
    return [IngestSample(r[0], r[1], float(r[2])) for r in rows]


def ping(conn: Connection) -> None:
    """Round-trip to the server: raises when it does not answer."""
    conn.execute("SELECT 1").fetchone()


def _array(repositories: tuple[str, ...] | None) -> list[Any] | None:
    return None if repositories is None else list(repositories)
