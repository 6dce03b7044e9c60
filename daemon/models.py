"""Building the configured models and the retriever, once per process.

Model loading is slow (seconds) and optional pieces may be absent (a reranker whose weights are not
installed): a missing reranker degrades search to fused ranking with a warning instead of failing it.
"""

from __future__ import annotations

import structlog

from daemon.config import Config
from engine.crossencoders import RelevanceModel, load_relevance
from engine.search import Retriever, SearchMode
from indexer.database import Database
from indexer.embedder import EmbeddingModel, load_embedding_model

__all__ = ["build_retriever", "load_embedder", "load_reranker"]

log = structlog.get_logger(__name__)


def load_embedder(config: Config) -> EmbeddingModel:
    """The configured embedder on its runtime (`[models] embedder`, `embedder_runtime`), offline."""
    return load_embedding_model(
        config.models.embedder, config.models.embedder_runtime, batch_tokens=config.embedding.batch_tokens
    )


def load_reranker(config: Config) -> RelevanceModel | None:
    """The configured (or shipped) relevance cross-encoder, or None when it cannot be loaded here."""
    try:
        return load_relevance(config.models.reranker or None)
    except (OSError, ValueError) as exc:
        log.warning("reranker unavailable; ranking by fusion only", error=str(exc))
        return None


def build_retriever(config: Config, database: Database, mode: SearchMode = SearchMode.HYBRID) -> Retriever:
    """A retriever with only the models `mode` needs: lexical search loads none, and the reranker is loaded
    only when `[retrieval] rerank_candidates` asks for reranking."""
    embedder = load_embedder(config) if mode is not SearchMode.LEXICAL else None
    reranks = mode is SearchMode.HYBRID and config.retrieval.rerank_candidates > 0
    reranker = load_reranker(config) if reranks else None
    return Retriever(database, embedder, reranker, config.retrieval)
