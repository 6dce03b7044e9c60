"""Search: both lanes' SQL, their fusion, reranking and the retriever, behind the `Search` Protocol.

It sits in `engine/` because it is read-side, query-time work that only the engine and the API call, and
reranking needs the engine's cross-encoder Protocol. `indexer/` writes the index it reads (`indexer.store`
writes each sentence's tsvector and the schema's triggers keep the term statistics, in the sentence's own
transaction) and never imports it.

Modules, private behind this one: `_hits` (the one hit record and the one query that loads hits), `_bm25`
(the lexical lane's SQL), `_stages` (its typo and prefix stages), `_spelling` (the question with
its typos corrected, as the models read it), `_vector` (the vector lane's SQL),
`_fusion` (reciprocal rank fusion), `_rerank` (the cross-encoder pass), `_retriever` (both lanes run
concurrently, fused, reranked) and `_contract` (`Search`, modes, filters, configuration). The lanes rank
sentence ids only; every hit a search returns is loaded once.

A name is imported from its module when it is first read (PEP 562), so that `from engine.search import
SearchMode` costs the contract alone: the CLI reads its modes and the configuration its `RetrievalConfig`
without loading the lanes, numpy or the database driver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.search._bm25 import (
        BM25Params,
        LexicalHit,
        bm25_search,
        bm25_search_terms,
        lexical_document_frequencies,
        query_lexemes,
        terms_with_prefix,
    )
    from engine.search._contract import Filters, RetrievalConfig, Search, SearchMode
    from engine.search._fusion import Fused, Lane, LaneResult, fuse
    from engine.search._hits import Hit, headed_text, load_hits
    from engine.search._rerank import rerank
    from engine.search._retriever import Retriever
    from engine.search._spelling import Spelling, model_words, spell_question
    from engine.search._stages import (
        LexicalStage,
        StagedHit,
        StagedSearch,
        edit_distance_one,
        merge_stages,
        staged_lexical_search,
    )
    from engine.search._vector import VectorHit, vector_search

__all__ = [
    "BM25Params",
    "Filters",
    "Fused",
    "Hit",
    "Lane",
    "LaneResult",
    "LexicalHit",
    "LexicalStage",
    "RetrievalConfig",
    "Retriever",
    "Search",
    "SearchMode",
    "Spelling",
    "StagedHit",
    "StagedSearch",
    "VectorHit",
    "bm25_search",
    "bm25_search_terms",
    "edit_distance_one",
    "fuse",
    "headed_text",
    "lexical_document_frequencies",
    "load_hits",
    "merge_stages",
    "model_words",
    "query_lexemes",
    "rerank",
    "spell_question",
    "staged_lexical_search",
    "terms_with_prefix",
    "vector_search",
]

_HOMES = {
    "BM25Params": "_bm25",
    "Filters": "_contract",
    "Fused": "_fusion",
    "Hit": "_hits",
    "Lane": "_fusion",
    "LaneResult": "_fusion",
    "LexicalHit": "_bm25",
    "LexicalStage": "_stages",
    "RetrievalConfig": "_contract",
    "Retriever": "_retriever",
    "Search": "_contract",
    "SearchMode": "_contract",
    "Spelling": "_spelling",
    "StagedHit": "_stages",
    "StagedSearch": "_stages",
    "VectorHit": "_vector",
    "bm25_search": "_bm25",
    "bm25_search_terms": "_bm25",
    "edit_distance_one": "_stages",
    "fuse": "_fusion",
    "headed_text": "_hits",
    "lexical_document_frequencies": "_bm25",
    "load_hits": "_hits",
    "merge_stages": "_stages",
    "model_words": "_spelling",
    "query_lexemes": "_bm25",
    "rerank": "_rerank",
    "spell_question": "_spelling",
    "staged_lexical_search": "_stages",
    "terms_with_prefix": "_bm25",
    "vector_search": "_vector",
}
"""Each name's module under `engine.search`."""


def __getattr__(name: str) -> Any:
    """The public name `name`, imported from its module on first use (and kept, so later reads are plain)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
