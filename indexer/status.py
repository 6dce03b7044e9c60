"""Index figures per repository: what `citeline status` prints and the API exposes."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from indexer.database import Connection

__all__ = ["RepositoryStatus", "repository_status"]


@dataclass(frozen=True, slots=True)
class RepositoryStatus:
    """One repository's documents, sentences and embedding backlog."""

    repository: str
    root: str
    documents: int
    sentences: int
    backlog_size: int
    backlog_oldest_age_seconds: float
    failed_embeddings: int
    last_change: str | None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


_STATUS_SQL = """
SELECT r.name, r.root,
       (SELECT count(*) FROM documents d WHERE d.repository_id = r.id),
       (SELECT count(*) FROM sentences s JOIN documents d ON d.id = s.document_id
        WHERE d.repository_id = r.id),
       coalesce(b.pending, 0), coalesce(extract(epoch FROM now() - b.oldest), 0), coalesce(b.failed, 0),
       (SELECT max(d.indexed_at) FROM documents d WHERE d.repository_id = r.id)
FROM repositories r
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE q.failed_at IS NULL) AS pending,
           min(q.enqueued_at) FILTER (WHERE q.failed_at IS NULL) AS oldest,
           count(*) FILTER (WHERE q.failed_at IS NOT NULL) AS failed
    FROM embedding_backlog q JOIN sentences s ON s.id = q.sentence_id JOIN documents d ON d.id = s.document_id
    WHERE d.repository_id = r.id
) b ON true
WHERE %(names)s::text[] IS NULL OR r.name = ANY(%(names)s::text[])
ORDER BY r.name
"""


def repository_status(conn: Connection, names: list[str] | None = None) -> list[RepositoryStatus]:
    """Figures for every repository (or the named ones)."""
    rows = conn.execute(_STATUS_SQL, {"names": names}).fetchall()
    return [
        RepositoryStatus(
            r[0], r[1], r[2], r[3], r[4], round(float(r[5]), 3), r[6], r[7].isoformat() if r[7] else None
        )
        for r in rows
    ]
