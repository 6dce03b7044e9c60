"""The vector lane: pgvector HNSW cosine search over the sentences the embedder has reached.

Filters (repository, path prefix) are applied inside the index scan with pgvector's iterative scans, so a
narrow filter still returns its full k instead of whatever survives the first ef_search candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from indexer.database import Connection

__all__ = ["VectorHit", "vector_search"]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A sentence id and its cosine similarity to the query."""

    sentence_id: int
    cosine: float


_VECTOR_SQL = """
SELECT e.sentence_id, 1 - (e.embedding <=> %(q)s::halfvec) AS cosine
FROM sentence_embeddings e
JOIN sentences s ON s.id = e.sentence_id
JOIN documents d ON d.id = s.document_id
JOIN repositories r ON r.id = d.repository_id
WHERE (%(repositories)s::text[] IS NULL OR r.name = ANY(%(repositories)s::text[]))
  AND (%(path_prefix)s::text IS NULL OR starts_with(d.path, %(path_prefix)s::text))
ORDER BY e.embedding <=> %(q)s::halfvec
LIMIT %(k)s
"""


def _literal(vector: npt.NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in vector.tolist()) + "]"


def vector_search(
    conn: Connection,
    query_vector: npt.NDArray[np.float32],
    k: int,
    *,
    ef_search: int = 400,
    repositories: Sequence[str] | None = None,
    path_prefix: str | None = None,
) -> list[VectorHit]:
    """Top `k` embedded sentences by cosine similarity to `query_vector`."""
    with conn.transaction():
        conn.execute(f"SET LOCAL hnsw.ef_search = {max(int(ef_search), k)}")
        if repositories is not None or path_prefix is not None:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(
            _VECTOR_SQL,
            {
                "q": _literal(query_vector),
                "k": k,
                "repositories": list(repositories) if repositories is not None else None,
                "path_prefix": path_prefix,
            },
        ).fetchall()
    hits = [VectorHit(int(r[0]), float(r[1])) for r in rows]
    # relaxed_order may return slightly out-of-order rows; the lane's contract is best first.
    return sorted(hits, key=lambda h: -h.cosine)
