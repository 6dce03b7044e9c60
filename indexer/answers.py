"""Stored answers: the question, its clauses, and each cited sentence by id plus a copy of what it said.

An answer outlives the text it cites, so each source keeps the cited text, its normalized hash, the path and
lines, and the git commit (in the JSON body). Loading an answer marks every source against the index as it is
now: `live` (same sentence, same normalized text), `changed` (the row is there but its text or its document
differs) or `deleted` (the sentence is gone: the reference went NULL). An answer whose sources are all live is
fresh and may be served again without recomputing.

The engine sits above the indexer, so this module takes and returns the answer's JSON shape
(`engine.answers.Answer.to_dict()`), not the engine's types.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from indexer.database import Connection
from indexer.hashing import sentence_hash

__all__ = [
    "SourceState",
    "StoredAnswer",
    "StoredClause",
    "StoredSource",
    "find_answer",
    "load_answer",
    "save_answer",
]


class SourceState(enum.Enum):
    """How a cited sentence compares with the index now."""

    LIVE = "live"
    """The cited sentence exists with the same normalized text in the same document."""
    CHANGED = "changed"
    """The sentence row exists but its text hash or its document differs from what was cited."""
    DELETED = "deleted"
    """The sentence was deleted: its reference is NULL and only the stored copy remains."""


@dataclass(frozen=True, slots=True)
class StoredSource:
    """A cited sentence as stored, with its state now and, when it still exists, its current lines."""

    ordinal: int
    sentence_id: int | None
    document_id: int | None
    cited_text: str
    path: str
    line_start: int
    line_end: int
    state: SourceState
    current_lines: tuple[int, int] | None

    def to_dict(self) -> dict[str, Any]:
        """JSON: the state and, for a live source that moved, where it is now."""
        out: dict[str, Any] = {"state": self.state.value}
        if self.current_lines is not None and self.current_lines != (self.line_start, self.line_end):
            out["current_line_start"], out["current_line_end"] = self.current_lines
        return out


@dataclass(frozen=True, slots=True)
class StoredClause:
    """A stored clause and its sources in citation order."""

    ordinal: int
    clause: str
    confidence: float
    sources: tuple[StoredSource, ...]


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """A stored answer with every source checked against the current index."""

    id: str
    question: str
    status: str
    body: dict[str, Any]
    created_at: datetime
    clauses: tuple[StoredClause, ...] = field(default_factory=tuple)

    @property
    def fresh(self) -> bool:
        """Every cited sentence is live: the answer can be served again as is."""
        return all(s.state is SourceState.LIVE for c in self.clauses for s in c.sources)

    def to_dict(self) -> dict[str, Any]:
        """The stored answer JSON with its id and each source's `state` (and current lines when moved)."""
        body = {**self.body, "id": self.id}
        clauses = [dict(c) for c in body.get("clauses", [])]
        for stored in self.clauses:
            if stored.ordinal < len(clauses):
                sources = [dict(s) for s in clauses[stored.ordinal].get("sources", [])]
                for source in stored.sources:
                    if source.ordinal < len(sources):
                        sources[source.ordinal].update(source.to_dict())
                clauses[stored.ordinal]["sources"] = sources
        body["clauses"] = clauses
        body["fresh"] = self.fresh
        return body


_SOURCE_SQL = """
INSERT INTO answer_sources
    (clause_id, ordinal, sentence_id, document_id, cited_text, cited_hash, path, line_start, line_end)
VALUES (%s, %s, (SELECT id FROM sentences WHERE id = %s), (SELECT id FROM documents WHERE id = %s),
        %s, %s, %s, %s, %s)
"""


def save_answer(conn: Connection, answer: Mapping[str, Any]) -> str:
    """Store `answer` (the `Answer.to_dict()` shape) in one transaction; returns its new id.

    A source whose sentence was deleted in the meantime is stored with a NULL reference (it loads as
    `deleted`) rather than failing the whole answer.
    """
    answer_id = str(uuid.uuid4())
    body = {**answer, "id": answer_id}
    with conn.transaction():
        conn.execute(
            "INSERT INTO answers (id, question, status, body) VALUES (%s, %s, %s, %s)",
            (answer_id, answer["question"], answer["status"], Jsonb(body)),
        )
        for ordinal, clause in enumerate(answer.get("clauses", [])):
            row = conn.execute(
                "INSERT INTO answer_clauses (answer_id, ordinal, clause, confidence) VALUES (%s, %s, %s, %s)"
                " RETURNING id",
                (answer_id, ordinal, clause["clause"], float(clause["confidence"])),
            ).fetchone()
            assert row is not None
            for position, source in enumerate(clause.get("sources", [])):
                conn.execute(
                    _SOURCE_SQL,
                    (
                        row[0],
                        position,
                        source.get("sentence_id"),
                        source.get("document_id"),
                        source["text"],
                        sentence_hash(source["text"]),
                        source["path"],
                        source["line_start"],
                        source["line_end"],
                    ),
                )
    return answer_id


_LOAD_SOURCES_SQL = """
SELECT c.ordinal, c.clause, c.confidence, a.ordinal, a.sentence_id, a.document_id, a.cited_text, a.cited_hash,
       a.path, a.line_start, a.line_end, s.norm_hash, s.document_id, s.line_start, s.line_end
FROM answer_clauses c
LEFT JOIN answer_sources a ON a.clause_id = c.id
LEFT JOIN sentences s ON s.id = a.sentence_id
WHERE c.answer_id = %s
ORDER BY c.ordinal, a.ordinal
"""


def _state(
    sentence_id: int | None, cited: bytes, now: bytes | None, cited_doc: int | None, doc: int | None
) -> SourceState:
    if sentence_id is None or now is None:
        return SourceState.DELETED
    if bytes(now) != bytes(cited) or doc != cited_doc:
        return SourceState.CHANGED
    return SourceState.LIVE


def load_answer(conn: Connection, answer_id: str) -> StoredAnswer | None:
    """The stored answer with each source's state now, or None when there is no such answer."""
    try:
        key = str(uuid.UUID(str(answer_id)))
    except ValueError:
        return None
    head = conn.execute(
        "SELECT question, status, body, created_at FROM answers WHERE id = %s", (key,)
    ).fetchone()
    if head is None:
        return None
    clauses: dict[int, tuple[str, float, list[StoredSource]]] = {}
    for r in conn.execute(_LOAD_SOURCES_SQL, (key,)).fetchall():
        entry = clauses.setdefault(r[0], (r[1], float(r[2]), []))
        if r[3] is None:
            continue
        state = _state(r[4], r[7], r[11], r[5], r[12])
        lines = (int(r[13]), int(r[14])) if state is not SourceState.DELETED else None
        entry[2].append(StoredSource(r[3], r[4], r[5], r[6], r[8], r[9], r[10], state, lines))
    return StoredAnswer(
        key,
        head[0],
        head[1],
        dict(head[2]),
        head[3],
        tuple(StoredClause(o, c, conf, tuple(src)) for o, (c, conf, src) in sorted(clauses.items())),
    )


def find_answer(conn: Connection, question: str, filters: Mapping[str, Any]) -> str | None:
    """The latest stored `answer`-status answer to exactly this question under the same filters, if any.

    Insufficient answers are never served again: they cite nothing, so no edit could ever mark them stale.
    """
    row = conn.execute(
        "SELECT id FROM answers WHERE question = %s AND status = 'answer' AND body->'filters' = %s"
        " ORDER BY created_at DESC LIMIT 1",
        (question, Jsonb(dict(filters))),
    ).fetchone()
    return str(row[0]) if row is not None else None
