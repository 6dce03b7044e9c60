"""Near misses that the vector lane finds: what the relevance model must refuse for a reworded question.

The mined near misses of a docs_faq row share the question's words (other sections of its page, other
answers of the repository), and ``training.docs_misses`` adds other pages by BM25. A question in a user's own
words shares few words with anything, so what the engine puts beside its answer comes from the vector lane:
units whose meaning is near the question's. ``DenseMisses`` embeds every citable unit of one repository as
the embedding queue embeds it (``training.docs_pages.embedded_text``) and gives, for a query as asked, the
units nearest it by cosine outside the answer's own section, best first.

Another section can answer as well (a guide beside the reference). A unit whose text is the answer's own is
skipped; the rest are taken as the miner's near misses are: "near, but not this".
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from indexer.embedder import EmbeddingModel, load_embedding_model
from indexer.markdown import TextUnit
from training.data import norm_key
from training.docs_pages import RepoIndex, embedded_text, page_units

__all__ = ["DENSE_MISSES", "DenseLane", "DenseMisses", "dense_lane"]

DENSE_MISSES = 3
"""Negatives from the vector lane kept per row."""


class DenseMisses:
    """The citable units of one repository, embedded once by ``model``, searched by cosine."""

    def __init__(self, index: RepoIndex, model: EmbeddingModel) -> None:
        self._model = model
        self._units: list[tuple[str, TextUnit]] = []
        texts: list[str] = []
        for path, page in index.pages.items():
            for i in page_units(page):
                self._units.append((path, page.units[i]))
                texts.append(embedded_text(page, i))
        self._matrix = np.asarray(model.encode(texts), dtype=np.float32) if texts else np.zeros((0, 1))

    def misses(
        self, query: str, path: str, section: Sequence[str], answer: str, limit: int = DENSE_MISSES
    ) -> list[TextUnit]:
        """The `limit` units nearest `query` that are neither in `section` of `path` (the answer's section)
        nor the answer's text elsewhere; best first."""
        if not self._units:
            return []
        vector = np.asarray(self._model.encode([query])[0], dtype=np.float32)
        order = np.argsort(-(self._matrix @ vector), kind="stable")
        answer_key = norm_key(answer)
        out: list[TextUnit] = []
        for n in order:
            unit_path, unit = self._units[int(n)]
            in_section = unit_path == path and tuple(unit.heading_path[: len(section)]) == tuple(section)
            if in_section or norm_key(unit.text) == answer_key:
                continue
            out.append(unit)
            if len(out) == limit:
                break
        return out


class DenseLane:
    """One embedder's ``DenseMisses`` per repository, each built the first time a row of it asks: embedding
    a repository takes minutes on a CPU, so only repositories with a row asked in a user's words pay it, and
    once per process (the pairs file and the topic headings' file share them)."""

    def __init__(self, model: EmbeddingModel) -> None:
        self._model = model
        self._repositories: dict[str, DenseMisses] = {}

    def of(self, repository: str, index: RepoIndex) -> DenseMisses:
        """The repository's units, embedded once; `index` must be the repository's."""
        if repository not in self._repositories:
            self._repositories[repository] = DenseMisses(index, self._model)
        return self._repositories[repository]


@cache
def dense_lane(embedder: str) -> DenseLane:
    """The process's lane for an embedder spec (as ``[models] embedder`` takes it), loaded once."""
    return DenseLane(load_embedding_model(embedder))
