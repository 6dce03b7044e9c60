"""The docs corpus's pages as citeline reads them: parsed with its own Markdown parser and segmenter, each
citable unit found by its normalised text, and embedded the way the embedding queue embeds it.

The relevance mix (``training.docs_mix``), the embedder's data (``training.embedder_data``,
``training.embedder_written``) and the dense lane's misses (``training.docs_dense``) all read pages through
this module, so none of them imports another to read a page.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from indexer.embedding_context import ContextOptions, contextual_text
from indexer.markdown import TextUnit, UnitKind
from indexer.segment import markdown_units
from training.data import norm_key
from training.docs_text import same_key

__all__ = ["CITABLE", "DocsPage", "RepoIndex", "embedded_text", "page_units", "parse_page", "read_corpus"]

_OPTIONS = ContextOptions()

CITABLE = (UnitKind.SENTENCE, UnitKind.TABLE_ROW, UnitKind.CODE)
"""The unit kinds a passage can be: what the engine cites."""


@dataclass(frozen=True, slots=True)
class DocsPage:
    """One parsed page: its units and each unit's normalised text."""

    units: list[TextUnit]
    keys: list[str]

    def find(self, text: str, exact: bool = False) -> int | None:
        """The index of the citable unit whose text is ``text``; unless ``exact``, failing that, the first
        one that starts ``text`` or that ``text`` starts (see ``same_text``)."""
        key = norm_key(text)
        citable = [i for i, unit in enumerate(self.units) if unit.kind in CITABLE]
        found = next((i for i in citable if self.keys[i] == key and key), None)
        if found is not None or exact:
            return found
        return next((i for i in citable if same_key(self.keys[i], key)), None)


def parse_page(text: str) -> DocsPage:
    """A page's Markdown source as the indexer segments it."""
    units = markdown_units(text)
    return DocsPage(units, [norm_key(u.text) for u in units])


def read_corpus(corpus: Path, repository: str) -> dict[str, DocsPage]:
    """Every page of one repository's corpus file, parsed, by path."""
    file = corpus / (repository.replace("/", "__") + ".jsonl.gz")
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        return {obj["path"]: parse_page(obj["text"]) for obj in map(json.loads, fh)}


class RepoIndex:
    """Where each citable unit of a repository is, by the first characters of its normalised text."""

    def __init__(self, pages: dict[str, DocsPage]) -> None:
        self.pages = pages
        self._by_prefix: dict[str, list[tuple[str, int]]] = {}
        for path, page in pages.items():
            for i, (unit, key) in enumerate(zip(page.units, page.keys, strict=True)):
                if unit.kind in CITABLE and key:
                    self._by_prefix.setdefault(key[:12], []).append((path, i))

    def citable(self) -> Iterator[tuple[str, TextUnit]]:
        """Every citable unit of the repository with its page's path."""
        for path, page in self.pages.items():
            yield from ((path, unit) for unit in page.units if unit.kind in CITABLE)

    def locate(self, path: str, text: str) -> tuple[DocsPage, int] | None:
        """``text`` itself on its page, else anywhere in the repository; failing that, a unit that starts
        it or that it starts, on its page first."""
        page = self.pages.get(path)
        candidates = [p for p, _ in self._by_prefix.get(norm_key(text)[:12], []) if p != path]
        for exact in (True, False):
            if page is not None and (i := page.find(text, exact)) is not None:
                return page, i
            for other_path in dict.fromkeys(candidates):
                if (j := self.pages[other_path].find(text, exact)) is not None:
                    return self.pages[other_path], j
        return None


def embedded_text(page: DocsPage, index: int) -> str:
    """The unit at `index` as the embedding queue embeds it (heading path, dependent previous sentence)."""
    unit = page.units[index]
    previous = page.units[index - 1].text if index > 0 else None
    return contextual_text(unit.text, unit.heading_path, None, previous, _OPTIONS)


def page_units(page: DocsPage) -> list[int]:
    """The indexes of the page's citable units."""
    return [i for i, unit in enumerate(page.units) if unit.kind in CITABLE]
