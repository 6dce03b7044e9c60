"""Draining the embedding backlog: claim a micro-batch, embed it with its context, write the vectors.

A batch is claimed in a short transaction (`FOR UPDATE SKIP LOCKED`, then a lease: `claimed_by`,
`claimed_until`), encoded with no transaction open, and written in a second transaction that inserts the
vectors and deletes the backlog rows together. Encoding outside a transaction matters: a backlog row locked
for the length of an encode would make every file write that deletes its sentence wait for the model, and
the lexical lane promises sub-second freshness. The lease gives the same guarantees as a held lock: any
number of workers never embed one item twice at once, and a worker killed mid-batch loses nothing, because
its lease runs out and the items are claimed again. A lost lease counts as an attempt of each item it held,
and `max_attempts` of them fail an item (one that kills every worker that encodes it must not stall the
queue); an item's last attempt after a lost lease is claimed alone, so only an item that lost a lease it
held by itself is failed, never the innocent rest of a batch whose worker was killed.

The write transaction locks the claimed sentences `FOR KEY SHARE SKIP LOCKED` before touching the backlog,
the same order a file write takes (sentences, then their backlog rows by cascade), so the two never
deadlock; a sentence deleted meanwhile is simply not found and dropped, and one whose context changed
meanwhile (its heading moved) is released to be embedded again rather than stored with a stale vector.

Each worker holds a session advisory lock on its own number and stamps its leases with it; PostgreSQL drops
the lock when the worker's connection dies, so the lease of a killed worker is taken over at once rather than
after `lease_seconds` (which still covers a worker that is alive but stuck). Every vector is stored with the
hash of the text it was encoded from and a key of its inputs (migration 0007): a sentence re-enqueued because
its neighbours or heading changed is encoded again only if its embedded text changed.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from pgvector import HalfVector
from pgvector.psycopg import register_vector

from indexer.database import Connection
from indexer.embedder import EmbeddingModel, TokenAware, Vectors
from indexer.embedding_context import (
    ContextOptions,
    PreviousSentence,
    context_signature,
    contextual_text,
    text_hash,
)
from indexer.embedding_sql import (
    CLAIM,
    CONTEXT,
    EXPIRE,
    FAIL,
    LOCK_CLASS,
    RELEASE,
    UPSERT,
    ensure_model,
    pending_items,
)
from indexer.options import QueueOptions

__all__ = [
    "BatchResult",
    "ContextOptions",
    "DrainReport",
    "EmbeddingWorker",
    "ModelMismatchError",
    "PreviousSentence",
    "QueueOptions",
    "contextual_text",
    "ensure_model",
    "pending_items",
]


class ModelMismatchError(RuntimeError):
    """The database records another model than this worker's: its vectors would not be comparable."""


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one claimed batch became; `claimed == 0` means the backlog had nothing claimable."""

    claimed: int
    embedded: int
    dropped: int
    failed: int
    released: int
    reclaimed: int = 0
    """Items taken over from a worker that is gone (its connection died)."""
    unchanged: int = 0
    """Re-enqueued items whose embedded text had not changed: written without encoding."""


@dataclass(slots=True)
class DrainReport:
    """Totals over the batches of one drain."""

    batches: int = 0
    embedded: int = 0
    dropped: int = 0
    failed: int = 0
    seconds: float = 0.0
    reclaimed: int = 0
    unchanged: int = 0
    waited_seconds: float = 0.0
    """Time spent waiting for items leased by other live workers (`citeline embed --drain`)."""

    def add(self, result: BatchResult) -> None:
        """Count one batch."""
        self.batches += 1
        self.embedded += result.embedded
        self.dropped += result.dropped
        self.failed += result.failed
        self.reclaimed += result.reclaimed
        self.unchanged += result.unchanged


@dataclass(frozen=True, slots=True)
class _Item:
    """A claimed sentence: the text to embed, the stored vector's text hash, the current inputs' key."""

    text: str
    stored_hash: bytes | None
    context_key: bytes


def _chars(text: str, max_tokens: int) -> str:
    return text[: max(0, max_tokens) * 4]


class EmbeddingWorker:
    """One worker on one connection; run as many as you like, in one process or many."""

    __slots__ = ("conn", "model", "number", "options")

    def __init__(self, conn: Connection, model: EmbeddingModel, options: QueueOptions | None = None) -> None:
        """Bind to `conn` (autocommit, so each batch's transactions really commit), take a worker number (an
        advisory lock held for the connection's life) and record the model and context policy."""
        if not conn.autocommit:
            raise ValueError("an embedding worker needs an autocommit connection")
        self.conn = conn
        self.model = model
        self.options = options or QueueOptions()
        register_vector(conn)
        self.number = 0
        while not self.number:
            number = random.randint(1, 2**31 - 1)
            row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_CLASS, number)).fetchone()
            self.number = number if row is not None and row[0] else 0
        ensure_model(conn, model.name, model.dimension, context_signature(self.options.context))

    def _items(self, ids: Sequence[int]) -> dict[int, _Item]:
        clip = self.model.clip if isinstance(self.model, TokenAware) else _chars
        rows = self.conn.execute(CONTEXT, (list(ids),)).fetchall()
        return {
            r[0]: _Item(contextual_text(r[1], r[2], r[3], r[4], self.options.context, clip), r[5], r[6])
            for r in rows
        }

    def _claim(self, token: uuid.UUID) -> tuple[list[int], int, dict[int, _Item]]:
        with self.conn.transaction():
            self.conn.execute(EXPIRE, (self.options.max_attempts,))
            rows = self.conn.execute(
                CLAIM,
                {
                    "n": self.options.batch_size,
                    "last": self.options.max_attempts - 1,
                    "token": token,
                    "worker": self.number,
                    "lease": self.options.lease_seconds,
                },
            ).fetchall()
            ids = [int(r[0]) for r in rows]
            return ids, sum(1 for r in rows if r[1]), self._items(ids) if ids else {}

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
        """Claim, embed and write one micro-batch; an item whose vector has its text is not encoded."""
        token = uuid.uuid4()
        ids, reclaimed, items = self._claim(token)
        if not ids:
            return BatchResult(0, 0, 0, 0, 0)
        unchanged = [i for i in ids if i in items and items[i].stored_hash == text_hash(items[i].text)]
        skip = set(unchanged)
        present = [i for i in ids if i in items and i not in skip]
        try:
            vectors, errors = self._encode(present, [items[i].text for i in present]) if present else ({}, {})
        except Exception as exc:  # a single-item batch that fails: record it like any per-item failure
            vectors, errors = {}, {present[0]: f"{type(exc).__name__}: {exc}"[:2000]}
        return replace(self._write(token, len(ids), items, vectors, errors, unchanged), reclaimed=reclaimed)

    def _write(
        self,
        token: uuid.UUID,
        claimed: int,
        items: dict[int, _Item],
        vectors: dict[int, Vectors],
        errors: dict[int, str],
        unchanged: list[int],
    ) -> BatchResult:
        conn = self.conn
        fresh: list[int] = []
        reused: list[int] = []
        with conn.transaction():
            row = conn.execute("SELECT name, dimension FROM embedding_model FOR SHARE").fetchone()
            if row is None or (row[0], row[1]) != (self.model.name, self.model.dimension):
                conn.execute(RELEASE, (token,))
                mismatch = row
            else:
                mismatch = None
                locked = [
                    int(r[0])
                    for r in conn.execute(
                        "SELECT id FROM sentences WHERE id = ANY(%s) FOR KEY SHARE SKIP LOCKED",
                        ([*vectors, *unchanged],),
                    )
                ]
                current = self._items(locked) if locked else {}
                keep = [i for i in locked if i in current and current[i].text == items[i].text]
                owned = [
                    int(r[0])
                    for r in conn.execute(
                        "DELETE FROM embedding_backlog WHERE claimed_by = %s AND sentence_id = ANY(%s)"
                        " RETURNING sentence_id",
                        (token, keep),
                    )
                ]
                fresh = [i for i in owned if i in vectors]
                reused = [i for i in owned if i not in vectors]  # unchanged text: only the key is new
                if fresh:
                    with conn.cursor() as cur:
                        cur.executemany(
                            UPSERT,
                            [
                                (
                                    i,
                                    HalfVector(np.asarray(vectors[i], dtype=np.float16)),
                                    text_hash(items[i].text),
                                    current[i].context_key,
                                )
                                for i in fresh
                            ],
                        )
                if reused:
                    conn.execute(
                        "UPDATE sentence_embeddings e SET context_key = k.key"
                        " FROM unnest(%s::bigint[], %s::bytea[]) AS k(id, key) WHERE e.sentence_id = k.id",
                        (reused, [current[i].context_key for i in reused]),
                    )
                failed = 0
                if errors:
                    cur_fail = conn.execute(
                        FAIL,
                        {
                            "ids": list(errors),
                            "errors": list(errors.values()),
                            "token": token,
                            "max": self.options.max_attempts,
                            "delay": self.options.retry_delay_seconds,
                        },
                    )
                    failed = cur_fail.rowcount
                released = conn.execute(RELEASE, (token,)).rowcount
        if mismatch is not None:
            raise ModelMismatchError(
                f"the database records model {mismatch[0]!r} ({mismatch[1]} dimensions); this worker runs "
                f"{self.model.name!r} ({self.model.dimension}): restart it with the configured model"
            )
        dropped = claimed - len(owned) - failed - released
        return BatchResult(claimed, len(fresh), dropped, failed, released, 0, len(reused))

    def drain(
        self,
        should_stop: Callable[[], bool] = lambda: False,
        on_batch: Callable[[BatchResult], None] | None = None,
    ) -> DrainReport:
        """Embed batches until nothing is claimable or `should_stop()`; a batch under way always finishes.
        `on_batch` sees every batch's result (progress display)."""
        report = DrainReport()
        started = time.perf_counter()
        while not should_stop():
            result = self.run_batch()
            if result.claimed == 0:
                break
            report.add(result)
            if on_batch is not None:
                on_batch(result)
        report.seconds = time.perf_counter() - started
        return report
