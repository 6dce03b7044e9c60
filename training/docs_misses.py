"""Near misses from other pages: what citeline finds for a question when the page that answers it is gone.

The mined near misses of a docs_faq row come from its own page (other sections) and from other questions'
answers. When a user asks what the docs do not answer, the engine meets neither: it meets the passages of
other pages that share the question's words most. ``OtherPages`` ranks a repository's citable units by
BM25 over their stemmed words, read under their heading paths as the engine reads them, and gives a row's
best-ranked units outside its own page as negatives. Each unit counts a stem once: a docs sentence rarely
repeats one, and its length is its number of distinct stems.

Another page can still answer (a how-to beside the FAQ entry). A unit whose heading path holds most of the
question's words is taken for such an answer and skipped: the negatives teach "near, but not this", and a
heading that restates the question is the one sign of an answer that holds across repositories.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from engine.search import headed_text
from engine.words import stems
from indexer.markdown import TextUnit

__all__ = ["ANSWERING_HEADING", "OTHER_PAGE_MISSES", "OtherPages"]

OTHER_PAGE_MISSES = 3
"""Negatives from other pages kept per row."""
ANSWERING_HEADING = 0.6
"""A unit whose heading path holds this share of the question's stems may answer it: never a negative."""
_K1, _B = 1.2, 0.75


class OtherPages:
    """BM25 over the citable units of one repository (each with its page's path), read under their heading
    paths."""

    def __init__(self, units: Iterable[tuple[str, TextUnit]]) -> None:
        self._units: list[tuple[str, TextUnit, frozenset[str]]] = []  # path, unit, heading stems
        self._lengths: list[int] = []  # distinct stems per unit
        postings: dict[str, list[int]] = {}
        for path, unit in units:
            if not unit.text.strip():
                continue
            terms = frozenset(stems(headed_text(unit.heading_path, unit.text)))
            n = len(self._units)
            self._units.append((path, unit, frozenset(stems(" ".join(unit.heading_path)))))
            self._lengths.append(len(terms))
            for term in terms:
                postings.setdefault(term, []).append(n)
        self._postings = postings
        self._mean = sum(self._lengths) / max(1, len(self._lengths))

    def misses(self, question: str, path: str, limit: int = OTHER_PAGE_MISSES) -> list[TextUnit]:
        """The `limit` units outside `path` that rank highest for `question` (read under their headings) and
        whose heading does not restate it; best first."""
        wanted = stems(question)
        if not wanted:
            return []
        scores: dict[int, float] = {}
        total = len(self._units)
        for term in wanted:
            hits = self._postings.get(term, [])
            idf = math.log(1 + (total - len(hits) + 0.5) / (len(hits) + 0.5))
            for n in hits:  # a term counts once per unit
                norm = 1 + _K1 * (1 - _B + _B * self._lengths[n] / self._mean)
                scores[n] = scores.get(n, 0.0) + idf * (_K1 + 1) / norm
        out: list[TextUnit] = []
        for n in sorted(scores, key=lambda i: (-scores[i], i)):
            unit_path, unit, heading = self._units[n]
            if unit_path == path or len(wanted & heading) >= ANSWERING_HEADING * len(wanted):
                continue
            if unit not in out:
                out.append(unit)
            if len(out) >= limit:
                break
        return out
