"""The feedback store: what the docs team said of answers, and the sentences it accepted for a question.

Each feedback row copies the answer's question and status, so pruning the answer store keeps it; each named
sentence is kept by id with its normalized hash at the time (`indexer.hashing.sentence_hash`). A pair
(question, sentence) the team accepted or rejected is an `accepted_answers` row; an accepted pair whose
sentence is gone or says something else now is stale (`mark_stale`), and is never served from memory.
Deleting a repository deletes its rows (`0015_feedback.sql`).

This module holds SQL only; which pairs a feedback records is the engine's to decide (`engine.feedback`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from indexer.database import Connection

__all__ = [
    "AcceptedPair",
    "FeedbackRecord",
    "FeedbackRow",
    "NewFeedback",
    "SentenceRef",
    "accepted_pairs",
    "feedback_rows",
    "mark_stale",
    "save_feedback",
    "sentence_refs",
]


@dataclass(frozen=True, slots=True)
class SentenceRef:
    """An indexed sentence as feedback keeps it: its id, normalized hash, text and where it is."""

    id: int
    hash: bytes
    text: str
    repository: str
    repository_id: int
    path: str
    heading: str


@dataclass(frozen=True, slots=True)
class NewFeedback:
    """One feedback to store: the answer it is on and what it said; `pairs` are the (sentence, helpful)
    pairs it records for the question (accepted when helpful, rejected otherwise)."""

    answer_id: str
    question: str
    answer_status: str
    helpful: bool
    sentences: Sequence[SentenceRef]
    comment: str | None = None
    repository_ids: Collection[int] = ()
    pairs: Sequence[SentenceRef] = ()
    closest_path: str | None = None
    closest_heading: str | None = None


@dataclass(frozen=True, slots=True)
class FeedbackRecord:
    """A stored feedback, in the order of the API's JSON shape (`as_dict`)."""

    id: int
    answer_id: str
    question: str
    helpful: bool
    sentence_ids: tuple[int, ...]
    comment: str | None
    repositories: tuple[str, ...]
    created_at: datetime
    accepted: tuple[int, ...] = ()
    """The sentences now accepted as answering the question (helpful feedback)."""
    rejected: tuple[int, ...] = ()
    """The sentences never to be served from memory for this question (feedback that was not helpful)."""
    nearest_ids: tuple[int, ...] = ()
    """Helpful feedback that accepted nothing: the answer's closest passages, the sentences to name instead
    (`engine.feedback`); empty otherwise."""
    teaching: bool = True
    """Whether the caller could accept or reject sentences for everyone; False: a key without the `teach`
    property, whose feedback only votes (nothing accepted or rejected)."""

    def as_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `POST /v1/answers/{id}/feedback` and `citeline feedback --json`."""
        return {
            "id": self.id,
            "answer_id": self.answer_id,
            "question": self.question,
            "helpful": self.helpful,
            "sentence_ids": list(self.sentence_ids),
            "comment": self.comment,
            "repositories": list(self.repositories),
            "created_at": self.created_at.isoformat(),
            "accepted": list(self.accepted),
            "rejected": list(self.rejected),
            "nearest_ids": list(self.nearest_ids),
            "teaching": self.teaching,
        }


_REFS_SQL = """
SELECT s.id, s.norm_hash, s.text, r.name, r.id, d.path, array_to_string(s.heading_path, ' > ')
FROM sentences s JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id
WHERE s.id = ANY(%s)
"""


def sentence_refs(conn: Connection, sentence_ids: Collection[int]) -> dict[int, SentenceRef]:
    """The live sentences among `sentence_ids`, by id (a missing id is absent)."""
    if not sentence_ids:
        return {}
    rows = conn.execute(_REFS_SQL, (list(sentence_ids),)).fetchall()
    return {r[0]: SentenceRef(r[0], bytes(r[1]), r[2], r[3], r[4], r[5], r[6] or "") for r in rows}


def repository_ids(conn: Connection, names: Collection[str]) -> list[int]:
    """The ids of the repositories named (unknown names are left out)."""
    rows = conn.execute("SELECT id FROM repositories WHERE name = ANY(%s)", (list(names),)).fetchall()
    return [int(r[0]) for r in rows]


_PAIR_SQL = """
INSERT INTO accepted_answers (feedback_id, answer_id, question, question_norm, helpful, sentence_id,
                              sentence_hash, sentence_text, path, heading, repository_id)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""


def save_feedback(conn: Connection, new: NewFeedback, question_norm: str) -> FeedbackRecord:
    """Store `new` and its pairs in one transaction; the stored record, with its repositories' names."""
    repos = sorted({*new.repository_ids, *(s.repository_id for s in new.sentences)})
    with conn.transaction():
        row = conn.execute(
            "INSERT INTO feedback (answer_id, question, answer_status, helpful, comment, repository_ids,"
            " closest_path, closest_heading) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " RETURNING id, created_at,"
            " ARRAY(SELECT name FROM repositories WHERE id = ANY(%s) ORDER BY name)",
            (
                new.answer_id,
                new.question,
                new.answer_status,
                new.helpful,
                new.comment,
                repos,
                new.closest_path,
                new.closest_heading,
                repos,
            ),
        ).fetchone()
        assert row is not None
        feedback_id = int(row[0])
        for ordinal, s in enumerate(new.sentences):
            conn.execute(
                "INSERT INTO feedback_sentences (feedback_id, ordinal, sentence_id, sentence_hash,"
                " repository_id) VALUES (%s, %s, %s, %s, %s)",
                (feedback_id, ordinal, s.id, s.hash, s.repository_id),
            )
        for s in new.pairs:
            conn.execute(
                _PAIR_SQL,
                (
                    feedback_id,
                    new.answer_id,
                    new.question,
                    question_norm,
                    new.helpful,
                    s.id,
                    s.hash,
                    s.text,
                    s.path,
                    s.heading,
                    s.repository_id,
                ),
            )
    paired = tuple(s.id for s in new.pairs)
    return FeedbackRecord(
        feedback_id,
        new.answer_id,
        new.question,
        new.helpful,
        tuple(s.id for s in new.sentences),
        new.comment,
        tuple(row[2]),
        row[1],
        accepted=paired if new.helpful else (),
        rejected=() if new.helpful else paired,
    )


_STALE_SQL = """
UPDATE accepted_answers a SET stale = true
WHERE NOT a.stale AND a.helpful AND (%(ids)s::bigint[] IS NULL OR a.id = ANY(%(ids)s))
  AND NOT EXISTS (SELECT 1 FROM sentences s WHERE s.id = a.sentence_id AND s.norm_hash = a.sentence_hash)
"""


def mark_stale(conn: Connection, ids: Collection[int] | None = None) -> int:
    """Mark stale every accepted pair (of `ids`, None: all) whose sentence is gone or changed; how many.

    A stale pair stays stale: an edit back to the old words is a new decision for the team to make."""
    cursor = conn.execute(_STALE_SQL, {"ids": None if ids is None else list(ids)})
    return cursor.rowcount


@dataclass(frozen=True, slots=True)
class AcceptedPair:
    """A question and a sentence the team accepted or rejected for it, as export and gaps read them."""

    id: int
    question: str
    helpful: bool
    sentence_id: int
    sentence_text: str
    repository: str
    path: str
    heading: str
    answer_id: str
    accepted_at: datetime
    stale: bool

    def export_dict(self) -> dict[str, Any]:
        """One line of `citeline export-feedback` (stable; `training.feedback` reads it): the question, the
        sentence's text when it was accepted or rejected, where it was, and the verdict."""
        return {
            "question": self.question,
            "sentence": self.sentence_text,
            "repository": self.repository,
            "path": self.path,
            "heading": self.heading,
            "helpful": self.helpful,
            "time": self.accepted_at.isoformat(),
            "sentence_id": self.sentence_id,
            "answer_id": self.answer_id,
            "stale": self.stale,
        }


_PAIRS_SQL = """
SELECT a.id, a.question, a.helpful, a.sentence_id, a.sentence_text, r.name, a.path, a.heading, a.answer_id,
       a.accepted_at, a.stale
FROM accepted_answers a JOIN repositories r ON r.id = a.repository_id
WHERE (%(repos)s::text[] IS NULL OR r.name = ANY(%(repos)s))
  AND (%(since)s::timestamptz IS NULL OR a.accepted_at >= %(since)s)
  AND (NOT %(stale_only)s OR (a.stale AND a.helpful))
ORDER BY a.accepted_at, a.id
LIMIT %(limit)s
"""


def accepted_pairs(
    conn: Connection,
    repositories: Collection[str] | None = None,
    *,
    since: datetime | None = None,
    stale_only: bool = False,
    limit: int = 100_000,
) -> list[AcceptedPair]:
    """The accepted and rejected pairs of `repositories` (None: all), oldest first; `stale_only`: only the
    accepted pairs gone stale."""
    params = {
        "repos": None if repositories is None else list(repositories),
        "since": since,
        "stale_only": stale_only,
        "limit": limit,
    }
    return [
        AcceptedPair(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], str(r[8]), r[9], r[10])
        for r in conn.execute(_PAIRS_SQL, params).fetchall()
    ]


@dataclass(frozen=True, slots=True)
class FeedbackRow:
    """A stored feedback as the gaps read it: its question, verdict, when, and its closest section."""

    id: int
    answer_id: str
    question: str
    helpful: bool
    comment: str | None
    created_at: datetime
    repositories: tuple[str, ...] = field(default=())
    closest_path: str | None = None
    closest_heading: str | None = None


_FEEDBACK_SQL = """
SELECT f.id, f.answer_id, f.question, f.helpful, f.comment, f.created_at,
       ARRAY(SELECT name FROM repositories WHERE id = ANY(f.repository_ids) ORDER BY name) AS names,
       f.closest_path, f.closest_heading
FROM feedback f
WHERE (%(since)s::timestamptz IS NULL OR f.created_at >= %(since)s)
  AND (%(helpful)s::boolean IS NULL OR f.helpful = %(helpful)s)
  AND (%(repos)s::text[] IS NULL OR (cardinality(f.repository_ids) > 0 AND
       ARRAY(SELECT name FROM repositories WHERE id = ANY(f.repository_ids)) <@ %(repos)s::text[]))
ORDER BY f.created_at DESC, f.id DESC
LIMIT %(limit)s
"""


def feedback_rows(
    conn: Connection,
    repositories: Collection[str] | None = None,
    *,
    since: datetime | None = None,
    helpful: bool | None = None,
    limit: int = 100_000,
) -> list[FeedbackRow]:
    """Stored feedback, newest first; with `repositories`, only feedback involving some repository and
    only those (feedback on an answer over every repository is not a scoped key's to read)."""
    params = {
        "repos": None if repositories is None else list(repositories),
        "since": since,
        "helpful": helpful,
        "limit": limit,
    }
    return [
        FeedbackRow(r[0], str(r[1]), r[2], r[3], r[4], r[5], tuple(r[6]), r[7], r[8])
        for r in conn.execute(_FEEDBACK_SQL, params).fetchall()
    ]
