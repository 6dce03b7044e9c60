"""The sentences either side of search hits, so a hit can be read in context without a request per hit.

One query for all hits; the neighbours come from the hit's own document, so they are within whatever scope
the hits already were.
"""

from __future__ import annotations

from collections.abc import Collection

from indexer.database import Connection

__all__ = ["neighbour_texts"]

_SQL = """
SELECT h.id, p.text, n.text
FROM sentences h
LEFT JOIN sentences p ON p.document_id = h.document_id AND p.ordinal = h.ordinal - 1
LEFT JOIN sentences n ON n.document_id = h.document_id AND n.ordinal = h.ordinal + 1
WHERE h.id = ANY(%s)
"""


Around = tuple[str | None, str | None]


def neighbour_texts(conn: Connection, sentence_ids: Collection[int]) -> dict[int, Around]:
    """For each sentence id that exists: the text of the sentence before it and after it in its document
    (None at the document's start or end)."""
    if not sentence_ids:
        return {}
    rows = conn.execute(_SQL, (list(sentence_ids),)).fetchall()
    return {int(r[0]): (r[1], r[2]) for r in rows}
