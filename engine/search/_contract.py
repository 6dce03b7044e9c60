"""What search offers its callers: the `Search` Protocol, its modes, filters and configuration."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from engine.search._hits import Hit

__all__ = ["Filters", "RetrievalConfig", "Search", "SearchMode"]


class SearchMode(enum.Enum):
    """Which lanes a search uses."""

    HYBRID = "hybrid"
    """Both lanes fused, then reranked."""
    LEXICAL = "lexical"
    """BM25 with its typo and prefix stages only."""
    VECTOR = "vector"
    """Embedded sentences by cosine only."""


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrict a search to repositories and a path prefix."""

    repositories: tuple[str, ...] | None = None
    path_prefix: str | None = None


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Candidate counts and fusion settings; the defaults are the ones the SciFact benchmark measured (the
    README gives the figures)."""

    lexical_candidates: int = 64
    vector_candidates: int = 64
    rerank_candidates: int = 0
    """How many fused hits the cross-encoder scores; 0 (the default) leaves fusion's order, 32 is the usual
    setting. Opt-in because on a CPU it costs about half a second a query and did not beat fusion alone."""
    rerank_weight: float = 1.0
    """The reranker's order is fused again with fusion's (reciprocal ranks, `rrf_k`), this much weight to
    the reranker: a sentence-level cross-encoder alone lost to fusion on SciFact, together they edge ahead.
    A large weight (100) is plain reranking."""
    rrf_k: float = 10.0
    """Reciprocal rank fusion's constant; why 10 and not the usual 60 is in `engine.search._fusion`."""
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    ef_search: int = 400
    """HNSW candidate list: 400 matched exact search on SciFact where 100 lost recall, at the same latency
    (the query embedding dominates)."""
    rerank_with_heading: bool = True
    """Give the reranker "heading > path: sentence": a sentence alone often lacks its subject ("It ...")."""


class Search(Protocol):
    """Ranked sentences for a query: what the answering engine and the API need from search."""

    def search(
        self, query: str, k: int = 10, *, mode: SearchMode = SearchMode.HYBRID, filters: Filters | None = None
    ) -> list[Hit]:
        """The top `k` hits for `query`, best first, each loaded once with its per-stage scores."""
        ...
