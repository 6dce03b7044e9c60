"""The answer store: an answer, its clauses, and each cited sentence by id plus a copy of what it said.

An answer outlives the text it cites, so each source keeps the cited text, its normalized hash, the path and
lines, and the git commit (in the JSON body). Loading an answer marks every source against the index as it is
now: `live` (same sentence, same normalized text), `changed` (its text or its document differs, or the
sentence is gone from a document still indexed: its file was edited) or `deleted` (the sentence and its
document are gone: both references went NULL). An answer whose sources are all live is fresh; it is served
again without recomputing only while the index generation it was computed at (`indexer.generation`) is still
the current one, since an edit elsewhere may have added a better answer.

The store reads and writes the engine's own `Answer` (its JSON shape is declared once, in `engine.answers`);
it sits in the engine because the indexer below it must not know the engine's types, and it uses only the
indexer's connection and hashing.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from psycopg.types.json import Jsonb

from engine.answers import Answer, SourceCheck, SourceState
from indexer.database import Connection
from indexer.hashing import sentence_hash

__all__ = ["count_serving", "find_answer", "load_answer", "save_answer"]

_SOURCE_SQL = """
INSERT INTO answer_sources
    (clause_id, ordinal, sentence_id, document_id, cited_text, cited_hash, path, line_start, line_end)
VALUES (%s, %s, (SELECT id FROM sentences WHERE id = %s), (SELECT id FROM documents WHERE id = %s),
        %s, %s, %s, %s, %s)
"""


def save_answer(conn: Connection, answer: Answer) -> str:
    """Store `answer` in one transaction; returns its new id (`answer` itself is left as it is).

    A source whose sentence was deleted in the meantime is stored with a NULL reference (it loads as
    `deleted`) rather than failing the whole answer.
    """
    answer_id = str(uuid.uuid4())
    body = {**answer.to_dict(), "id": answer_id}
    with conn.transaction():
        conn.execute(
            "INSERT INTO answers (id, question, status, body, generation) VALUES (%s, %s, %s, %s, %s)",
            (answer_id, answer.question, answer.status.value, Jsonb(body), answer.generation),
        )
        for ordinal, clause in enumerate(answer.clauses):
            row = conn.execute(
                "INSERT INTO answer_clauses (answer_id, ordinal, clause, confidence) VALUES (%s, %s, %s, %s)"
                " RETURNING id",
                (answer_id, ordinal, clause.clause, float(round(clause.confidence, 4))),
            ).fetchone()
            assert row is not None
            for position, source in enumerate(clause.sources):
                conn.execute(
                    _SOURCE_SQL,
                    (
                        row[0],
                        position,
                        source.sentence_id,
                        source.document_id,
                        source.text,
                        sentence_hash(source.text),
                        source.path,
                        source.line_start,
                        source.line_end,
                    ),
                )
    return answer_id


_LOAD_SOURCES_SQL = """
SELECT c.ordinal, a.ordinal, a.sentence_id, a.document_id, a.cited_hash, a.line_start, a.line_end,
       s.norm_hash, s.document_id, s.line_start, s.line_end
FROM answer_clauses c
LEFT JOIN answer_sources a ON a.clause_id = c.id
LEFT JOIN sentences s ON s.id = a.sentence_id
WHERE c.answer_id = %s
ORDER BY c.ordinal, a.ordinal
"""


def _state(
    sentence_id: int | None, cited: bytes, now: bytes | None, cited_doc: int | None, doc: int | None
) -> SourceState:
    if sentence_id is None or now is None:  # the sentence is gone: its file was edited, or is gone too
        return SourceState.CHANGED if cited_doc is not None else SourceState.DELETED
    if bytes(now) != bytes(cited) or doc != cited_doc:
        return SourceState.CHANGED
    return SourceState.LIVE


def load_answer(conn: Connection, answer_id: str) -> Answer | None:
    """The stored answer with each source checked against the index now (`AnswerClause.checks`), `fresh`
    and its `generation` set, or None when there is no such answer."""
    try:
        key = str(uuid.UUID(str(answer_id)))
    except ValueError:
        return None
    head = conn.execute("SELECT body, generation FROM answers WHERE id = %s", (key,)).fetchone()
    if head is None:
        return None
    answer = Answer.from_dict({**head[0], "id": key})
    answer.generation = head[1]
    checks: dict[int, list[SourceCheck]] = {}
    for r in conn.execute(_LOAD_SOURCES_SQL, (key,)).fetchall():
        found = checks.setdefault(r[0], [])
        if r[1] is None:
            continue
        state = _state(r[2], r[4], r[7], r[3], r[8])
        lines = (int(r[9]), int(r[10])) if r[9] is not None else None
        found.append(SourceCheck(state, (r[5], r[6]), lines, r[3]))
    for ordinal, clause in enumerate(answer.clauses):
        clause.checks = checks.get(ordinal, [])
    answer.fresh = all(c.state is SourceState.LIVE for found in checks.values() for c in found)
    return answer


def count_serving(conn: Connection, answer_id: str) -> None:
    """Count one more asking answered by the stored answer `answer_id` (served again from the store), so that
    the history counts every asking, not only those that stored a new answer.

    The count commits without waiting for its WAL flush (`synchronous_commit` off for this transaction
    only): a crash may lose the last few counts, never an answer, and concurrent askings of one popular
    question hold its row's lock for microseconds instead of a disk flush each."""
    with conn.transaction():
        conn.execute("SET LOCAL synchronous_commit TO OFF")
        conn.execute("UPDATE answers SET served = served + 1 WHERE id = %s", (answer_id,))


def find_answer(conn: Connection, question: str, filters: Mapping[str, Any]) -> str | None:
    """The latest stored `answer`-status answer to exactly this question under the same filters, if any.

    Insufficient answers are never served again: they cite nothing, so no edit could ever mark them stale.
    Nor is an answer stored before the latest feedback (`engine.feedback`): what the team accepted or
    rejected since may change it.
    """
    row = conn.execute(
        "SELECT id FROM answers WHERE question = %s AND status = 'answer' AND body->'filters' = %s"
        " AND created_at > coalesce((SELECT max(created_at) FROM feedback), '-infinity')"
        " ORDER BY created_at DESC LIMIT 1",
        (question, Jsonb(dict(filters))),
    ).fetchone()
    return str(row[0]) if row is not None else None
