"""The answers the team accepted, looked up for a new question: the engine's `RememberedAnswers`, in SQL.

A pair (question, sentence) is offered only while its sentence still exists with the hash it had when it was
accepted; one whose sentence changed or is gone is marked stale here, the moment it is found, and never
offered again. Pairs are offered by how close their question is to the new one: the cosine of the two
questions' embeddings (pgvector, over every stored question of the same embedding model), or, without an
embedder, the Dice overlap of their content-word keys (`engine.feedback.question_key`, passed in). A pair the
team rejected for a close enough question (`helpful` false) comes back too, so the engine can hold that
sentence back for it.

Stored questions are embedded lazily, by the embedder the engine runs (`embedder`): the first lookup after
feedback embeds the new questions (a few at a time), and a new embedding model re-embeds them all.

The lookup by vector reads an HNSW index, so its cost barely grows with the number of accepted answers. The
column's dimension follows the embedder, so the index is a partial expression index per dimension
(`question_index`), made by the first lookup of a process that runs an embedder of that dimension. It is
approximate, as HNSW is; the lookup reads on past the rows its filters drop (`hnsw.iterative_scan`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt
import psycopg
import structlog

from indexer.database import Connection
from indexer.embedder import EmbeddingModel
from indexer.feedback import mark_stale

__all__ = ["AcceptedAnswers", "Remembered", "question_index"]

log = structlog.get_logger(__name__)

_EMBED_BATCH = 64
_INDEX_LOCK = 1667855463  # the advisory-lock class under which one process at a time makes an index
_EF_SEARCH = 100


@dataclass(frozen=True, slots=True)
class Remembered:
    """A pair the team judged, as close as `similarity` (0 to 1) to the new question; `helpful` False: the
    sentence was rejected for that question."""

    question: str
    answer_id: str
    accepted_at: datetime
    sentence_id: int
    similarity: float
    helpful: bool = True
    question_key: str = ""


def _literal(vector: npt.NDArray[np.float32] | Sequence[float]) -> str:
    return "[" + ",".join(f"{float(x):.6g}" for x in vector) + "]"


_SCOPE = """
  AND (%(repos)s::text[] IS NULL
       OR a.repository_id IN (SELECT id FROM repositories WHERE name = ANY(%(repos)s)))
  AND (%(prefix)s::text IS NULL OR starts_with(a.path, %(prefix)s))
"""


def _by_vector(dimension: int) -> str:
    """The lookup by vector in the words of `question_index(dimension)`, so the planner can read it."""
    typed = f"a.question_embedding::vector({int(dimension)})"
    return f"""
SELECT a.id, a.question, a.answer_id, a.accepted_at, a.sentence_id, a.helpful, a.question_norm,
       1 - ({typed} <=> %(vector)s::vector({int(dimension)})) AS similarity,
       EXISTS (SELECT 1 FROM sentences s WHERE s.id = a.sentence_id AND s.norm_hash = a.sentence_hash)
FROM accepted_answers a
WHERE vector_dims(a.question_embedding) = {int(dimension)}
  AND NOT a.stale AND a.embedding_model = %(model)s {_SCOPE}
ORDER BY {typed} <=> %(vector)s::vector({int(dimension)})
LIMIT %(limit)s
"""


def question_index(conn: Connection, dimension: int) -> str | None:
    """Make (if missing) the HNSW index over the stored questions' vectors of `dimension`; returns its name,
    or None, with a warning, where the database refuses (a role that may not create it): the lookup then
    scans, as correct and slower.

    One process at a time (a transaction-scoped advisory lock), so replicas starting together do not race on
    the name; the build holds off writes to `accepted_answers` while it runs (once per dimension, ever)."""
    name = f"accepted_answers_question_hnsw_{int(dimension)}"
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_INDEX_LOCK, int(dimension)))
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON accepted_answers"
                f" USING hnsw ((question_embedding::vector({int(dimension)})) vector_cosine_ops)"
                f" WHERE vector_dims(question_embedding) = {int(dimension)}"
            )
    except psycopg.DatabaseError as exc:
        log.warning("accepted questions' vector index not made; the lookup scans", index=name, error=str(exc))
        return None
    return name


_BY_WORDS = f"""
SELECT a.id, a.question, a.answer_id, a.accepted_at, a.sentence_id, a.helpful, a.question_norm,
       0.0,
       EXISTS (SELECT 1 FROM sentences s WHERE s.id = a.sentence_id AND s.norm_hash = a.sentence_hash)
FROM accepted_answers a
WHERE NOT a.stale AND string_to_array(a.question_norm, ' ') && %(words)s::text[] {_SCOPE}
ORDER BY a.accepted_at DESC, a.id
LIMIT 500
"""


def _dice(a: set[str], b: set[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


class AcceptedAnswers:
    """`engine.memory.RememberedAnswers` over the `accepted_answers` table."""

    __slots__ = ("_connect", "_embedder", "_indexed", "_other_models_done")

    def __init__(
        self, connect: Callable[[], AbstractContextManager[Connection]], embedder: EmbeddingModel | None
    ) -> None:
        self._connect = connect
        self._embedder = embedder
        self._indexed = False
        self._other_models_done = False
        """Whether this process has re-embedded the questions another model embedded (once is enough: every
        process of a deployment runs the same model); after that, only new questions (NULL) are looked for,
        through a partial index."""

    def remembered(
        self,
        question_key: str,
        vector: Sequence[float] | None,
        repositories: Sequence[str] | None,
        path_prefix: str | None,
        limit: int,
    ) -> list[Remembered]:
        """Up to `limit` live pairs closest to the new question (its `question_key` and embedding `vector`),
        within `repositories` (None: all) under `path_prefix`, closest first; stale ones are marked so."""
        scope = {"repos": None if repositories is None else list(repositories), "prefix": path_prefix}
        with self._connect() as conn:
            if vector is not None and self._embedder is not None:
                dimension = self._embedder.dimension
                if not self._indexed:
                    question_index(conn, dimension)
                    self._indexed = True
                self._embed_missing(conn)
                params = {**scope, "vector": _literal(vector), "model": self._embedder.name, "limit": limit}
                with conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {max(_EF_SEARCH, int(limit))}")
                    conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")  # past filtered-out rows
                    found = conn.execute(_by_vector(dimension), params).fetchall()
                # relaxed_order may return rows slightly out of order: closest first, ties by id
                rows = sorted(found, key=lambda r: (-float(r[7]), int(r[0])))
            else:
                words = question_key.split()
                found = conn.execute(_BY_WORDS, {**scope, "words": words}).fetchall()
                rows = [(*r[:7], _dice(set(words), set(r[6].split())), r[8]) for r in found]
                rows = sorted(rows, key=lambda r: -r[7])[:limit]
            gone = [int(r[0]) for r in rows if not r[8]]
            if gone:
                mark_stale(conn, gone)
        return [
            Remembered(r[1], str(r[2]), r[3], int(r[4]), max(0.0, min(1.0, float(r[7]))), bool(r[5]), r[6])
            for r in rows
            if r[8]
        ]

    def _embed_missing(self, conn: Connection) -> None:
        """Embed the stored questions not yet embedded by this model, a batch per lookup."""
        assert self._embedder is not None
        name = self._embedder.name
        if self._other_models_done:
            sql = "SELECT DISTINCT question FROM accepted_answers WHERE question_embedding IS NULL LIMIT %s"
            rows = conn.execute(sql, (_EMBED_BATCH,)).fetchall()
        else:
            rows = conn.execute(
                "SELECT DISTINCT question FROM accepted_answers"
                " WHERE NOT stale AND embedding_model IS DISTINCT FROM %s LIMIT %s",
                (name, _EMBED_BATCH),
            ).fetchall()
            self._other_models_done = len(rows) < _EMBED_BATCH
        if not rows:
            return
        questions = [r[0] for r in rows]
        vectors = self._embedder.encode(questions)
        with conn.transaction():
            for question, vec in zip(questions, vectors, strict=True):
                conn.execute(
                    "UPDATE accepted_answers SET question_embedding = %s::vector, embedding_model = %s"
                    " WHERE question = %s AND embedding_model IS DISTINCT FROM %s",
                    (_literal(vec), name, question, name),
                )
