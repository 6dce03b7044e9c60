"""The embedding backlog's SQL: leases and their liveness, the recorded model and context policy, counts.

A lease is over when its time ran out or its worker is gone: each live worker holds a session advisory lock
(class `LOCK_CLASS`) on its number, which PostgreSQL releases when the worker's connection dies.
"""

from __future__ import annotations

from indexer.database import Connection

__all__ = [
    "CLAIM",
    "CONTEXT",
    "EXPIRE",
    "FAIL",
    "LOCK_CLASS",
    "RELEASE",
    "UPSERT",
    "ensure_model",
    "pending_items",
]

LOCK_CLASS = 1667855461  # the advisory-lock class of embedder workers ("cite"); see migration 0007


def ensure_model(conn: Connection, name: str, dimension: int, context: str = "") -> bool:
    """Record the model and context policy the vectors come from; returns True when either changed.

    Another model empties the vectors and re-enqueues every sentence; another context policy re-enqueues
    every sentence and keeps the vectors searchable until each is replaced (those whose embedded text is the
    same under the new policy are not encoded again). Runs in its own transaction under the model row's lock,
    which every vector write shares, so no vector of the old model can land after the change.
    """
    with conn.transaction():
        row = conn.execute("SELECT name, dimension, context FROM embedding_model FOR UPDATE").fetchone()
        assert row is not None, "migration 0002 creates the model row"
        if (row[0], row[1], row[2]) == (name, dimension, context):
            return False
        first = row[0] == ""
        if (row[0], row[1]) != (name, dimension):
            conn.execute("TRUNCATE sentence_embeddings")
        if row[1] != dimension:
            conn.execute("DROP INDEX sentence_embeddings_hnsw_idx")
            conn.execute(
                f"ALTER TABLE sentence_embeddings ALTER COLUMN embedding TYPE halfvec({int(dimension)})"
            )
            conn.execute(
                "CREATE INDEX sentence_embeddings_hnsw_idx ON sentence_embeddings"
                " USING hnsw (embedding halfvec_cosine_ops)"
            )
        conn.execute(
            "UPDATE embedding_model SET name = %s, dimension = %s, context = %s, changed_at = now()",
            (name, dimension, context),
        )
        if not first:
            conn.execute(
                "INSERT INTO embedding_backlog (sentence_id) SELECT id FROM sentences"
                " ON CONFLICT (sentence_id) DO UPDATE SET enqueued_at = now(), attempts = 0,"
                " last_error = NULL, failed_at = NULL, claimed_by = NULL, claimed_until = NULL,"
                " claimed_worker = NULL"
            )
            conn.execute("SELECT pg_notify('citeline_backlog', '')")
    return True


def pending_items(conn: Connection) -> tuple[int, int]:
    """Backlog items not failed, and how many of them a worker could claim right now (the others are leased
    to a live worker or wait out a retry delay)."""
    row = conn.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {OVER}) FROM embedding_backlog WHERE failed_at IS NULL"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


# Worker numbers whose connection is alive: each live worker holds an advisory lock on its number.
LIVE = f"""
SELECT objid::bigint::integer FROM pg_locks
WHERE locktype = 'advisory' AND classid = {LOCK_CLASS} AND objsubid = 2 AND granted
"""

# A lease is over when its time ran out or its worker is gone.
OVER = f"""(claimed_until IS NULL OR claimed_until < now()
        OR (claimed_by IS NOT NULL AND claimed_worker IS NOT NULL AND claimed_worker NOT IN ({LIVE})))"""

EXPIRE = f"""
UPDATE embedding_backlog SET failed_at = now(), claimed_by = NULL, claimed_until = NULL,
       claimed_worker = NULL,
       last_error = coalesce(last_error, 'worker lost its lease ' || attempts || ' times (killed mid-batch?)')
WHERE failed_at IS NULL AND claimed_by IS NOT NULL AND {OVER} AND attempts >= %s
"""

# An item whose lease was lost (its worker died or stalled with it) and whose next claim is its last
# (`attempts` = max_attempts - 1) is a suspect: it may be what kills its worker. The oldest suspect is claimed
# alone, so a lost lease fails only the item that held it and never the batch it happened to share.
SUSPECT = "claimed_by IS NOT NULL AND attempts >= %(last)s"

CLAIM = f"""
WITH s AS (
    SELECT sentence_id, true AS reclaimed FROM embedding_backlog
    WHERE failed_at IS NULL AND {OVER} AND {SUSPECT}
    ORDER BY enqueued_at LIMIT 1 FOR UPDATE SKIP LOCKED
), b AS (
    SELECT sentence_id, claimed_by IS NOT NULL AS reclaimed FROM embedding_backlog
    WHERE failed_at IS NULL AND {OVER} AND NOT ({SUSPECT}) AND NOT EXISTS (SELECT 1 FROM s)
    ORDER BY enqueued_at LIMIT %(n)s FOR UPDATE SKIP LOCKED
), c AS (SELECT * FROM s UNION ALL SELECT * FROM b)
UPDATE embedding_backlog q SET claimed_by = %(token)s, claimed_worker = %(worker)s, attempts = q.attempts + 1,
       claimed_until = now() + make_interval(secs => %(lease)s)
FROM c WHERE q.sentence_id = c.sentence_id
RETURNING q.sentence_id, c.reclaimed
"""

CONTEXT = """
SELECT s.id, s.text, s.heading_path, d.title, p.text, e.text_hash,
       citeline_context_key(d.title, s.heading_path, p.text)
FROM sentences s
JOIN documents d ON d.id = s.document_id
LEFT JOIN sentence_embeddings e ON e.sentence_id = s.id
LEFT JOIN LATERAL (
    SELECT x.text FROM sentences x WHERE x.document_id = s.document_id AND x.ordinal = s.ordinal - 1 LIMIT 1
) p ON true
WHERE s.id = ANY(%s)
"""

RELEASE = """
UPDATE embedding_backlog SET claimed_by = NULL, claimed_until = NULL, claimed_worker = NULL,
       attempts = greatest(attempts - 1, 0)
WHERE claimed_by = %s
"""

FAIL = """
UPDATE embedding_backlog q SET last_error = f.error, claimed_by = NULL, claimed_worker = NULL,
       claimed_until = now() + make_interval(secs => %(delay)s * q.attempts),
       failed_at = CASE WHEN q.attempts >= %(max)s THEN now() END
FROM unnest(%(ids)s::bigint[], %(errors)s::text[]) AS f(id, error)
WHERE q.sentence_id = f.id AND q.claimed_by = %(token)s
"""

UPSERT = """
INSERT INTO sentence_embeddings (sentence_id, embedding, text_hash, context_key) VALUES (%s, %s, %s, %s)
ON CONFLICT (sentence_id) DO UPDATE SET embedding = EXCLUDED.embedding, text_hash = EXCLUDED.text_hash,
    context_key = EXCLUDED.context_key, embedded_at = now()
"""
