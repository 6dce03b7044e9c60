"""Where a sentence sits in its document: its neighbours, its section's lead, when it changed, its vector;
and which neighbour it cannot be read without.

Fetched once per sentence for a question (`fetch_contexts`) and shared by every round and clause.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from engine.answers import AnswerClause
from engine.search import Hit, load_hits
from indexer.database import Connection

__all__ = ["SentenceContext", "cite_companions", "fetch_contexts", "leans_on"]

_CONTEXT_SQL = """
SELECT s.id, p.text, s.created_at, s.kind, e.embedding::vector::real[], lead.id,
       CASE WHEN p.kind <> 'heading' THEN p.id END, n.id, n.text
FROM sentences s
LEFT JOIN sentences p ON p.document_id = s.document_id AND p.ordinal = s.ordinal - 1
LEFT JOIN sentences n ON n.document_id = s.document_id AND n.ordinal = s.ordinal + 1 AND n.kind <> 'heading'
LEFT JOIN sentence_embeddings e ON e.sentence_id = s.id
LEFT JOIN LATERAL (
    SELECT l.id FROM sentences l
    WHERE l.document_id = s.document_id AND l.heading_path = s.heading_path AND l.kind <> 'heading'
    ORDER BY l.ordinal LIMIT 1
) lead ON lead.id <> s.id
WHERE s.id = ANY(%s)
"""


@dataclass(frozen=True, slots=True)
class SentenceContext:
    """A sentence's previous sentence in its document (if any), when its text was written, its kind, the
    first sentence under the same heading (None when that is the sentence itself), and the ids of the units
    just before and after it (None at a heading or the document's edge)."""

    previous: str | None
    changed_at: datetime | None
    kind: str = "sentence"
    vector: npt.NDArray[np.float32] | None = None
    lead: int | None = None
    previous_id: int | None = None
    next_id: int | None = None
    following: str | None = None
    """The text of the unit after it in its section (None at a heading or the document's edge)."""


def fetch_contexts(conn: Connection, ids: Sequence[int]) -> dict[int, SentenceContext]:
    """Contexts of the sentences that still exist; deleted ids are simply absent."""
    if not ids:
        return {}
    rows = conn.execute(_CONTEXT_SQL, (list(ids),)).fetchall()
    return {
        int(r[0]): SentenceContext(
            r[1],
            r[2],
            str(r[3]),
            None if r[4] is None else _unit(r[4]),
            _id(r[5]),
            _id(r[6]),
            _id(r[7]),
            None if r[8] is None else str(r[8]),
        )
        for r in rows
    }


def _id(value: object) -> int | None:
    return None if value is None else int(str(value))


_POINTS_BACK = frozenset({"this", "these", "those", "that", "such", "here"})
"""Opening words by which a sentence leans on the statement before it ("This is also disabled by default.").
A personal pronoun ("It was founded in 1901.") is left out: it names the section's subject, which the
heading path cited with every source already gives, and the sentence before is then seldom part of the
answer."""


def leans_on(hit: Hit, context: SentenceContext | None) -> int | None:
    """The id of the neighbour `hit` cannot be read without, if any: the unit after a sentence that ends
    with a colon (it introduces a list or a code block), the sentence before a code block or before a
    sentence that opens with a pointing word. A neighbour across a heading is never taken: a section starts
    afresh."""
    if context is None:
        return None
    if context.kind == "code":
        return context.previous_id  # a code block is read with the sentence that introduces it
    if hit.text.rstrip().endswith(":"):
        return context.next_id
    first = hit.text.lstrip().split(" ", 1)[0].strip(",.;:").lower()
    return context.previous_id if first in _POINTS_BACK else None


def _unit(values: list[float]) -> npt.NDArray[np.float32]:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def cite_companions(
    conn: Connection, contexts: Mapping[int, SentenceContext], clauses: list[AnswerClause]
) -> None:
    """A source that cannot be read alone is cited with the neighbour it leans on, right after it, each with
    its own line range: "To reload the configuration, send this request:" with the request that follows,
    "This is also disabled by default." with the sentence that says what "this" is."""
    wanted = {
        source.sentence_id: companion
        for clause in clauses
        for source in clause.sources
        if (companion := leans_on(source, contexts.get(source.sentence_id))) is not None
    }
    if not wanted:
        return
    found = {hit.sentence_id: hit for hit in load_hits(conn, list(set(wanted.values())))}
    for clause in clauses:
        cited = {s.sentence_id for s in clause.sources}
        sources: list[Hit] = []
        for source in clause.sources:
            sources.append(source)
            neighbour = found.get(wanted.get(source.sentence_id, -1))
            if neighbour is not None and neighbour.sentence_id not in cited:
                sources.append(neighbour)
                cited.add(neighbour.sentence_id)
        clause.sources = sources
