"""The retriever, the `Search` the engine and the API use: both lanes, fused, reranked, with provenance.

The lanes run concurrently on their own pooled connections (psycopg releases the GIL while PostgreSQL
works, and the query embedding runs meanwhile) and rank sentence ids only; the candidates of both lanes are
then loaded in one query, each once. Every hit carries the score of each stage it went through, the lanes
that found it, and whether it is embedded yet: a sentence written a moment ago is found by the lexical lane
before the embedder reaches it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from psycopg_pool import ConnectionPool

from engine.search._contract import Filters, RetrievalConfig, SearchMode
from engine.search._fusion import Fused, Lane, LaneResult, fuse
from engine.search._hits import Hit, hydrate
from engine.search._rerank import rerank
from engine.search._stages import LexicalStage, StagedSearch, staged_lexical_search
from indexer.database import Connection, Database, configure_session

if TYPE_CHECKING:  # annotations only: a lexical search loads no model code and no numpy
    from engine.crossencoders import RelevanceModel
    from indexer.embedder import EmbeddingModel

__all__ = ["Retriever"]


class Retriever:
    """Hybrid retrieval over one citeline database (a `Search`); thread-safe, one instance per process."""

    __slots__ = ("_config", "_embedder", "_executor", "_pool", "_reranker")

    def __init__(
        self,
        database: Database,
        embedder: EmbeddingModel | None,
        reranker: RelevanceModel | None = None,
        config: RetrievalConfig | None = None,
        *,
        max_connections: int = 8,
    ) -> None:
        self._config = config or RetrievalConfig()
        self._embedder = embedder
        self._reranker = reranker
        self._pool = ConnectionPool(
            database.url,
            min_size=2,
            max_size=max_connections,
            kwargs={"autocommit": True},
            configure=configure_session,
            open=True,
        )
        self._executor = ThreadPoolExecutor(max_workers=max_connections, thread_name_prefix="citeline-lane")

    @property
    def pool(self) -> ConnectionPool[Connection]:
        """The retriever's connection pool, which the answer engine may share; it closes with `close`."""
        return self._pool

    def close(self) -> None:
        """Release the pooled connections and lane threads."""
        self._executor.shutdown(wait=True)
        self._pool.close()

    def _lexical(self, query: str, filters: Filters) -> StagedSearch:
        with self._pool.connection() as conn:
            return staged_lexical_search(
                conn,
                query,
                self._config.lexical_candidates,
                repositories=filters.repositories,
                path_prefix=filters.path_prefix,
            )

    def _vector(self, query: str, filters: Filters) -> list[tuple[int, float]]:
        if self._embedder is None:
            return []
        from engine.search._vector import vector_search  # numpy: only a search that embeds needs it

        vector = self._embedder.encode([query])[0]
        with self._pool.connection() as conn:
            hits = vector_search(
                conn,
                vector,
                self._config.vector_candidates,
                ef_search=self._config.ef_search,
                repositories=filters.repositories,
                path_prefix=filters.path_prefix,
            )
        return [(h.sentence_id, h.cosine) for h in hits]

    def search(
        self, query: str, k: int = 10, *, mode: SearchMode = SearchMode.HYBRID, filters: Filters | None = None
    ) -> list[Hit]:
        """The top `k` sentences for `query`."""
        filters = filters or Filters()
        config = self._config
        lexical_future = (
            self._executor.submit(self._lexical, query, filters) if mode is not SearchMode.VECTOR else None
        )
        vector_ranked = self._vector(query, filters) if mode is not SearchMode.LEXICAL else []
        lexical = lexical_future.result() if lexical_future is not None else StagedSearch()
        lanes = [
            LaneResult(
                Lane.LEXICAL, [(s.hit.sentence_id, s.hit.score) for s in lexical.hits], config.lexical_weight
            ),
            LaneResult(Lane.VECTOR, vector_ranked, config.vector_weight),
        ]
        stage_of: dict[int, LexicalStage] = {s.hit.sentence_id: s.stage for s in lexical.hits}
        candidate_ids = list(dict.fromkeys([i for lane in lanes for i, _ in lane.ranked]))
        with self._pool.connection() as conn:
            details = hydrate(conn, candidate_ids)
        identity = {sid: (hit.document_id, norm) for sid, (hit, norm) in details.items()}
        fused = [f for f in fuse(lanes, rrf_k=config.rrf_k, identity=identity) if f.sentence_id in details]
        hits = [self._hit(f, details[f.sentence_id][0], stage_of, mode) for f in fused]
        if mode is SearchMode.HYBRID and self._reranker is not None and hits and config.rerank_candidates > 0:
            hits = rerank(self._reranker, query, hits, config)
        return hits[:k]

    @staticmethod
    def _hit(fused: Fused, hit: Hit, stage_of: dict[int, LexicalStage], mode: SearchMode) -> Hit:
        if Lane.LEXICAL in fused.lane_scores:
            hit.lanes.append(Lane.LEXICAL.value)
            hit.scores["bm25"] = fused.lane_scores[Lane.LEXICAL]
            stage = stage_of.get(fused.sentence_id)
            hit.lexical_stage = stage.value if stage else None
        if Lane.VECTOR in fused.lane_scores:
            hit.lanes.append(Lane.VECTOR.value)
            hit.scores["vector"] = fused.lane_scores[Lane.VECTOR]
        if mode is SearchMode.HYBRID:
            hit.scores["fused"] = fused.score
        return hit
