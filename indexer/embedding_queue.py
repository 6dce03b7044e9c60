"""Draining the embedding backlog: claim a micro-batch, embed it with its context, write the vectors.

A batch is claimed in a short transaction (`FOR UPDATE SKIP LOCKED`, then a lease: `claimed_by`,
`claimed_until`), encoded with no transaction open, and written in a second transaction that inserts the
vectors and deletes the backlog rows together. Encoding outside a transaction matters: a backlog row locked
for the length of an encode would make every file write that deletes its sentence wait for the model, and
the lexical lane promises sub-second freshness. The lease gives the same guarantees as a held lock: any
number of workers never embed one item twice at once, and a worker killed mid-batch loses nothing, because
its lease runs out and the items are claimed again.

The write transaction locks the claimed sentences `FOR KEY SHARE SKIP LOCKED` before touching the backlog,
the same order a file write takes (sentences, then their backlog rows by cascade), so the two never
deadlock; a sentence deleted meanwhile is simply not found and dropped, and one whose context changed
meanwhile (its heading moved) is released to be embedded again rather than stored with a stale vector.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from pgvector import HalfVector
from pgvector.psycopg import register_vector

from indexer.database import Connection
from indexer.embedder import EmbeddingModel, Vectors

__all__ = [
    "BatchResult",
    "ContextOptions",
    "DrainReport",
    "EmbeddingWorker",
    "ModelMismatchError",
    "QueueOptions",
    "contextual_text",
    "ensure_model",
]


class ModelMismatchError(RuntimeError):
    """The database records another model than this worker's: its vectors would not be comparable."""


@dataclass(frozen=True, slots=True)
class ContextOptions:
    """What is embedded with a sentence; the stored sentence text is never changed."""

    heading: bool = True
    previous_sentence: bool = True
    max_previous_chars: int = 300


@dataclass(frozen=True, slots=True)
class QueueOptions:
    """How a worker claims and retries; a failed item waits `retry_delay_seconds` x attempts to be retried."""

    batch_size: int = 64
    lease_seconds: float = 300.0
    max_attempts: int = 3
    retry_delay_seconds: float = 10.0
    context: ContextOptions = field(default_factory=ContextOptions)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one claimed batch became; `claimed == 0` means the backlog had nothing claimable."""

    claimed: int
    embedded: int
    dropped: int
    failed: int
    released: int


@dataclass(slots=True)
class DrainReport:
    """Totals over the batches of one drain."""

    batches: int = 0
    embedded: int = 0
    dropped: int = 0
    failed: int = 0
    seconds: float = 0.0


def contextual_text(
    text: str, heading_path: Sequence[str], title: str | None, previous: str | None, options: ContextOptions
) -> str:
    """The text embedded for a sentence: heading path (or title), the previous sentence, the sentence."""
    parts = []
    if options.heading:
        heading = " > ".join(heading_path) or (title or "")
        if heading:
            parts.append(heading + ":")
    if options.previous_sentence and previous:
        parts.append(previous[: options.max_previous_chars])
    parts.append(text)
    return "\n".join(parts)


def ensure_model(conn: Connection, name: str, dimension: int) -> bool:
    """Record the model the vectors come from; a different one empties the vectors and re-enqueues all.

    Returns True when the model changed. Runs in its own transaction under the model row's lock, which
    every vector write shares, so no vector of the old model can land after the change.
    """
    with conn.transaction():
        row = conn.execute("SELECT name, dimension FROM embedding_model FOR UPDATE").fetchone()
        assert row is not None, "migration 0002 creates the model row"
        if (row[0], row[1]) == (name, dimension):
            return False
        first = row[0] == ""
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
            "UPDATE embedding_model SET name = %s, dimension = %s, changed_at = now()", (name, dimension)
        )
        if not first:
            conn.execute(
                "INSERT INTO embedding_backlog (sentence_id) SELECT id FROM sentences"
                " ON CONFLICT (sentence_id) DO UPDATE SET enqueued_at = now(), attempts = 0,"
                " last_error = NULL, failed_at = NULL, claimed_by = NULL, claimed_until = NULL"
            )
            conn.execute("SELECT pg_notify('citeline_backlog', '')")
    return True


_EXPIRE = """
UPDATE embedding_backlog SET failed_at = now(), claimed_by = NULL, claimed_until = NULL,
       last_error = coalesce(last_error, 'worker lost its lease ' || attempts || ' times (killed mid-batch?)')
WHERE failed_at IS NULL AND claimed_until < now() AND attempts >= %s
"""

_CLAIM = """
WITH c AS (
    SELECT sentence_id FROM embedding_backlog
    WHERE failed_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
    ORDER BY enqueued_at LIMIT %(n)s FOR UPDATE SKIP LOCKED
)
UPDATE embedding_backlog q SET claimed_by = %(token)s, attempts = q.attempts + 1,
       claimed_until = now() + make_interval(secs => %(lease)s)
FROM c WHERE q.sentence_id = c.sentence_id
RETURNING q.sentence_id
"""

_CONTEXT = """
SELECT s.id, s.text, s.heading_path, d.title, p.text
FROM sentences s
JOIN documents d ON d.id = s.document_id
LEFT JOIN LATERAL (
    SELECT x.text FROM sentences x WHERE x.document_id = s.document_id AND x.ordinal = s.ordinal - 1 LIMIT 1
) p ON true
WHERE s.id = ANY(%s)
"""

_RELEASE = """
UPDATE embedding_backlog SET claimed_by = NULL, claimed_until = NULL, attempts = greatest(attempts - 1, 0)
WHERE claimed_by = %s
"""

_FAIL = """
UPDATE embedding_backlog q SET last_error = f.error, claimed_by = NULL,
       claimed_until = now() + make_interval(secs => %(delay)s * q.attempts),
       failed_at = CASE WHEN q.attempts >= %(max)s THEN now() END
FROM unnest(%(ids)s::bigint[], %(errors)s::text[]) AS f(id, error)
WHERE q.sentence_id = f.id AND q.claimed_by = %(token)s
"""


class EmbeddingWorker:
    """One worker on one connection; run as many as you like, in one process or many."""

    __slots__ = ("conn", "model", "options")

    def __init__(self, conn: Connection, model: EmbeddingModel, options: QueueOptions | None = None) -> None:
        """Bind to `conn` (autocommit, so each batch's transactions really commit); record the model."""
        if not conn.autocommit:
            raise ValueError("an embedding worker needs an autocommit connection")
        self.conn = conn
        self.model = model
        self.options = options or QueueOptions()
        register_vector(conn)
        ensure_model(conn, model.name, model.dimension)

    def _contexts(self, ids: Sequence[int]) -> dict[int, str]:
        rows = self.conn.execute(_CONTEXT, (list(ids),)).fetchall()
        return {r[0]: contextual_text(r[1], r[2], r[3], r[4], self.options.context) for r in rows}

    def _claim(self, token: uuid.UUID) -> tuple[list[int], dict[int, str]]:
        with self.conn.transaction():
            self.conn.execute(_EXPIRE, (self.options.max_attempts,))
            rows = self.conn.execute(
                _CLAIM, {"n": self.options.batch_size, "token": token, "lease": self.options.lease_seconds}
            ).fetchall()
            ids = [int(r[0]) for r in rows]
            return ids, self._contexts(ids) if ids else {}

    def _encode(self, ids: list[int], texts: list[str]) -> tuple[dict[int, Vectors], dict[int, str]]:
        """Vectors by id, and errors by id; a failing batch is retried item by item to find the culprit."""
        try:
            vectors = self.model.encode(texts)
            return {i: vectors[n] for n, i in enumerate(ids)}, {}
        except Exception:  # any model failure: isolate it below
            if len(ids) == 1:
                raise
        done: dict[int, Vectors] = {}
        errors: dict[int, str] = {}
        for i, text in zip(ids, texts, strict=True):
            try:
                done[i] = self.model.encode([text])[0]
            except Exception as exc:  # recorded per sentence, then retried up to max_attempts
                errors[i] = f"{type(exc).__name__}: {exc}"[:2000]
        return done, errors

    def run_batch(self) -> BatchResult:
        """Claim, embed and write one micro-batch."""
        token = uuid.uuid4()
        ids, contexts = self._claim(token)
        if not ids:
            return BatchResult(0, 0, 0, 0, 0)
        present = [i for i in ids if i in contexts]
        try:
            vectors, errors = self._encode(present, [contexts[i] for i in present])
        except Exception as exc:  # a single-item batch that fails: record it like any per-item failure
            vectors, errors = {}, {present[0]: f"{type(exc).__name__}: {exc}"[:2000]}
        return self._write(token, len(ids), contexts, vectors, errors)

    def _write(
        self,
        token: uuid.UUID,
        claimed: int,
        contexts: dict[int, str],
        vectors: dict[int, Vectors],
        errors: dict[int, str],
    ) -> BatchResult:
        conn = self.conn
        with conn.transaction():
            row = conn.execute("SELECT name, dimension FROM embedding_model FOR SHARE").fetchone()
            if row is None or (row[0], row[1]) != (self.model.name, self.model.dimension):
                conn.execute(_RELEASE, (token,))
                mismatch = row
            else:
                mismatch = None
                locked = [
                    int(r[0])
                    for r in conn.execute(
                        "SELECT id FROM sentences WHERE id = ANY(%s) FOR KEY SHARE SKIP LOCKED",
                        (list(vectors),),
                    )
                ]
                current = self._contexts(locked) if locked else {}
                keep = [i for i in locked if current.get(i) == contexts[i]]
                owned = [
                    int(r[0])
                    for r in conn.execute(
                        "DELETE FROM embedding_backlog WHERE claimed_by = %s AND sentence_id = ANY(%s)"
                        " RETURNING sentence_id",
                        (token, keep),
                    )
                ]
                if owned:
                    with conn.cursor() as cur:
                        cur.executemany(
                            "INSERT INTO sentence_embeddings (sentence_id, embedding) VALUES (%s, %s)"
                            " ON CONFLICT (sentence_id) DO UPDATE"
                            " SET embedding = EXCLUDED.embedding, embedded_at = now()",
                            [(i, HalfVector(np.asarray(vectors[i], dtype=np.float16))) for i in owned],
                        )
                failed = 0
                if errors:
                    cur_fail = conn.execute(
                        _FAIL,
                        {
                            "ids": list(errors),
                            "errors": list(errors.values()),
                            "token": token,
                            "max": self.options.max_attempts,
                            "delay": self.options.retry_delay_seconds,
                        },
                    )
                    failed = cur_fail.rowcount
                released = conn.execute(_RELEASE, (token,)).rowcount
        if mismatch is not None:
            raise ModelMismatchError(
                f"the database records model {mismatch[0]!r} ({mismatch[1]} dimensions); this worker runs "
                f"{self.model.name!r} ({self.model.dimension}): restart it with the configured model"
            )
        dropped = claimed - len(owned) - failed - released
        return BatchResult(claimed, len(owned), dropped, failed, released)

    def drain(self, should_stop: Callable[[], bool] = lambda: False) -> DrainReport:
        """Embed batches until nothing is claimable or `should_stop()`; a batch under way always finishes."""
        report = DrainReport()
        started = time.perf_counter()
        while not should_stop():
            result = self.run_batch()
            if result.claimed == 0:
                break
            report.batches += 1
            report.embedded += result.embedded
            report.dropped += result.dropped
            report.failed += result.failed
        report.seconds = time.perf_counter() - started
        return report
