"""What the API adds to the engine's hits and answers on the way out: each source's forge link and, when
asked, a hit's neighbouring sentences.

Both are read from the index (`indexer.links`, `indexer.hit_context`) and formatted by `indexer.forge`; a
repository without a link template gets `link: null`, never a guessed one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from api.models import SearchHitOut
from engine.search import Hit
from indexer.database import Connection
from indexer.forge import permalink
from indexer.hit_context import neighbour_texts
from indexer.links import link_templates

__all__ = ["linked_answer", "linked_hits"]


def linked_hits(conn: Connection, hits: Sequence[Hit], context: bool) -> list[SearchHitOut]:
    """The hits in the API's shape with their links, and their neighbours when `context` is set."""
    templates = link_templates(conn, {h.repository for h in hits})
    around = neighbour_texts(conn, [h.sentence_id for h in hits]) if context else {}
    out = []
    for h in hits:
        link = permalink(templates.get(h.repository), h.git_commit, h.path, h.line_start, h.line_end)
        before, after = around.get(h.sentence_id, (None, None))
        out.append(SearchHitOut(**h.to_dict(), link=link, before=before, after=after))
    return out


def linked_answer(conn: Connection, body: dict[str, Any]) -> dict[str, Any]:
    """`body` (an answer's JSON) with `link` set on every source and near passage: the file at the cited
    commit and lines, which is where the cited text was, whatever the file says now."""
    sources = [s for clause in body.get("clauses", []) for s in clause.get("sources", [])]
    sources += body.get("nearest", [])
    templates = link_templates(conn, {s["repository"] for s in sources if s.get("repository")})
    for s in sources:
        template = templates.get(s.get("repository") or "")
        s["link"] = permalink(template, s.get("git_commit"), s["path"], s["line_start"], s["line_end"])
    return body
