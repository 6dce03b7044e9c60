"""The one hit record, and the one query that loads hits.

The lanes rank sentence ids only; every hit's text and location are read here, once per search, by one
query over all the candidates of both lanes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the CLI reads the search contract without the database driver
    from indexer.database import Connection

__all__ = ["Hit", "headed_text", "load_hits"]


def headed_text(heading_path: Sequence[str], text: str) -> str:
    """A sentence after its heading path, what a cross-encoder reads: the heading often names the subject
    that the sentence only calls "it". One definition, so what citeline's models train on is what they
    rate."""
    heading = " > ".join(heading_path)
    return f"{heading}: {text}" if heading else text


@dataclass(slots=True)
class Hit:
    """A retrieved sentence with where it sits and how every stage scored it."""

    sentence_id: int
    text: str
    repository: str
    path: str
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    document_id: int
    ordinal: int
    git_commit: str | None
    embedded: bool
    lanes: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    lexical_stage: str | None = None
    kind: str = "sentence"
    """The unit's kind: `sentence`, `heading`, `table_row` or `code` (a whole code block)."""
    intro_sentence_id: int | None = None
    """A code unit's introducing sentence ("To reload, send this request:"), when it has one."""

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of a hit, shared by `citeline search --json` and `GET /v1/search`."""
        return {
            "sentence_id": self.sentence_id,
            "text": self.text,
            "repository": self.repository,
            "path": self.path,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "heading": " > ".join(self.heading_path),
            "heading_path": list(self.heading_path),
            "score": self.score,
            "scores": dict(self.scores),
            "document_id": self.document_id,
            "git_commit": self.git_commit,
            "embedded": self.embedded,
            "lanes": list(self.lanes),
            "lexical_stage": self.lexical_stage,
            "kind": self.kind,
            "intro_sentence_id": self.intro_sentence_id,
        }

    @property
    def headed_text(self) -> str:
        """The sentence after its heading path, what a cross-encoder reads (`headed_text`)."""
        return headed_text(self.heading_path, self.text)

    @property
    def score(self) -> float:
        """The last stage's score: reranked fusion, else fused, else the single lane's."""
        for name in ("final", "fused", "bm25", "vector"):
            if name in self.scores:
                return self.scores[name]
        return 0.0


_HYDRATE_SQL = """
SELECT s.id, s.text, r.name, d.path, s.line_start, s.line_end, s.heading_path, d.id, s.ordinal, d.git_commit,
       EXISTS (SELECT 1 FROM sentence_embeddings e WHERE e.sentence_id = s.id), s.norm_hash, s.kind,
       (SELECT i.id FROM sentences i WHERE i.document_id = s.document_id AND i.ordinal = s.intro_ordinal)
FROM sentences s JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id
WHERE s.id = ANY(%s)
"""


def hydrate(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[Hit, bytes]]:
    """Each still existing sentence of `ids` as an unscored hit, with its normalized-text hash (the fusion
    identity); one query, whatever the number of ids, and none for no ids."""
    if not ids:
        return {}
    rows = conn.execute(_HYDRATE_SQL, (list(ids),)).fetchall()
    return {
        r[0]: (
            Hit(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                tuple(r[6]),
                r[7],
                r[8],
                r[9],
                r[10],
                kind=r[12],
                intro_sentence_id=r[13],
            ),
            bytes(r[11]),
        )
        for r in rows
    }


def load_hits(conn: Connection, ids: Sequence[int]) -> list[Hit]:
    """The sentences `ids` as hits in that order, with no scores (no search found them); deleted ids are
    left out."""
    details = hydrate(conn, ids)
    return [details[i][0] for i in ids if i in details]
