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
"""

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
