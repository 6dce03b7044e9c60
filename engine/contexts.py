"""Where a sentence sits in its document: its neighbours, its section's lead, when it changed, its vector;
and which neighbour it cannot be read without.

Fetched once per sentence for a question (`fetch_contexts`) and shared by every round and clause.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from engine.answers import AnswerClause
from engine.search import Hit, load_hits
from indexer.database import Connection
from indexer.embedding_context import is_dependent, is_fragment

__all__ = [
    "INTRODUCED_MOST",
    "SentenceContext",
    "asks",
    "cite_companions",
    "fetch_contexts",
    "introduces",
    "leans_on",
    "previous_text",
]

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


_ASKS = re.compile(r"\?[\s*_]*$")


def asks(hit: Hit) -> bool:
    """Whether a sentence asks ("Can I add a designated timestamp to an existing table?"): in a FAQ it is
    the reader's question, and states nothing."""
    return hit.kind == "sentence" and _ASKS.search(hit.text) is not None


_LEAD_IN = re.compile(r"(?:\bas follows|\blike (?:this|so)|\bthe following)[.!]?$", re.IGNORECASE)
"""A sentence that ends by pointing at what follows without a colon: "Configure it as follows."."""

INTRODUCED_MOST = 8
"""The most units a lead-in is cited with: a code block, or a list's items and a paragraph's sentences."""


def introduces(text: str) -> bool:
    """Whether a sentence introduces what follows it: it ends with a colon, or with "as follows", "like
    this", "like so" or "the following"."""
    stripped = text.rstrip()
    return stripped.endswith(":") or _LEAD_IN.search(stripped) is not None


def leans_on(hit: Hit, context: SentenceContext | None) -> int | None:
    """The id of the neighbour `hit` cannot be read without, if any: the unit after a sentence that
    introduces what follows (`introduces`: a list or a code block); the unit before a code block, before a
    sentence that depends on it (`indexer.embedding_context.is_dependent`, the notion the embedding queue
    reads: "It just works!", "Then we need to examine it.", "These are still served over HTTPS.") and
    before a fragment (`is_fragment`). A neighbour across a heading is never taken: a section starts
    afresh."""
    if context is None:
        return None
    if context.kind == "code":
        return context.previous_id  # a code block is read with the sentence that introduces it
    if introduces(hit.text):
        return context.next_id
    if is_dependent(hit.text, context.previous) or is_fragment(hit.text):
        return context.previous_id
    return None


def previous_text(hit: Hit, context: SentenceContext | None) -> str | None:
    """The text of the unit before `hit` when `hit` is read with it (`leans_on`), else None."""
    if context is None or context.previous_id is None or leans_on(hit, context) != context.previous_id:
        return None
    return context.previous


def _unit(values: list[float]) -> npt.NDArray[np.float32]:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


_INTRODUCED_SQL = """
SELECT s.id, n.id, n.kind, n.line_start, n.line_end
FROM sentences s
JOIN sentences n ON n.document_id = s.document_id AND n.ordinal > s.ordinal AND n.ordinal <= s.ordinal + %s
WHERE s.id = ANY(%s)
ORDER BY s.id, n.ordinal
"""


def _introduced(conn: Connection, ids: Sequence[int]) -> dict[int, list[int]]:
    """What each lead-in of `ids` introduces: the unit right after it and, unless that is a code block, the
    units of the same kind that follow it with no blank line between (a tight list's items, the rest of a
    paragraph), at most `INTRODUCED_MOST`; never across a heading."""
    following: dict[int, list[tuple[int, str, int, int]]] = {}
    for row in conn.execute(_INTRODUCED_SQL, (INTRODUCED_MOST, list(ids))).fetchall():
        following.setdefault(int(row[0]), []).append((int(row[1]), str(row[2]), int(row[3]), int(row[4])))
    runs: dict[int, list[int]] = {}
    for lead, units in following.items():
        run: list[int] = []
        first_kind, last_line = "", 0
        for unit_id, kind, line_start, line_end in units:
            if kind == "heading" or (run and (first_kind == "code" or kind != first_kind)):
                break
            if run and line_start > last_line + 1:  # a blank line: another block
                break
            first_kind = first_kind or kind
            run.append(unit_id)
            last_line = line_end
        runs[lead] = run
    return {lead: units for lead, units in runs.items() if units}


def cite_companions(
    conn: Connection, contexts: Mapping[int, SentenceContext], clauses: list[AnswerClause]
) -> None:
    """A source that cannot be read alone is cited with what it leans on, right after it, each with its own
    line range: "To reload the configuration, send this request:" with the request that follows (a lead-in
    with every item of the tight list it introduces), "This is also disabled by default." with the sentence
    that says what "this" is. A question line is never cited (`asks`): it states nothing, and a FAQ's
    answer is read under it (`EvidencePool.read_under`)."""
    wanted: dict[int, list[int]] = {
        source.sentence_id: [companion]
        for clause in clauses
        for source in clause.sources
        if (companion := leans_on(source, contexts.get(source.sentence_id))) is not None
    }
    if not wanted:
        return
    leads = [i for i, companions in wanted.items() if companions[0] == _next_id(contexts, i)]
    if leads:
        wanted.update(_introduced(conn, leads))
    needed = list({i for companions in wanted.values() for i in companions})
    found = {hit.sentence_id: hit for hit in load_hits(conn, needed)}
    for clause in clauses:
        cited = {s.sentence_id for s in clause.sources}
        sources: list[Hit] = []
        for source in clause.sources:
            sources.append(source)
            for companion in wanted.get(source.sentence_id, []):
                neighbour = found.get(companion)
                if neighbour is not None and neighbour.sentence_id not in cited and not asks(neighbour):
                    sources.append(neighbour)
                    cited.add(neighbour.sentence_id)
        clause.sources = sources


def _next_id(contexts: Mapping[int, SentenceContext], sentence_id: int) -> int | None:
    context = contexts.get(sentence_id)
    return None if context is None or context.kind == "code" else context.next_id
