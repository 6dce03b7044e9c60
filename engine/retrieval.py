"""One retrieval function for the engine and the API: both lanes, fused, reranked, with provenance.

The lanes run concurrently on their own pooled connections (psycopg releases the GIL while PostgreSQL
works, and the query embedding runs meanwhile). Every hit carries the score of each stage it went through,
the lanes that found it, and whether it is embedded yet: a sentence written a moment ago is found by the
lexical lane before the embedder reaches it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from psycopg_pool import ConnectionPool

from engine.crossencoders import RelevanceModel
from engine.fusion import Fused, Lane, LaneResult, fuse
from engine.lexical_stages import LexicalStage, StagedSearch, staged_lexical_search
from engine.vector_lane import vector_search
from indexer.database import Connection, Database, configure_session
from indexer.embedder import EmbeddingModel

__all__ = ["Filters", "Hit", "RetrievalConfig", "Retriever", "SearchMode", "load_hits"]


class SearchMode(enum.Enum):
    """Which lanes a search uses."""

    HYBRID = "hybrid"
    """Both lanes fused, then reranked."""
    LEXICAL = "lexical"
    """BM25 with its typo and prefix stages only."""
    VECTOR = "vector"
    """Embedded sentences by cosine only."""


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Candidate counts and fusion settings; the defaults are the ones the SciFact benchmark measured."""

    lexical_candidates: int = 64
    vector_candidates: int = 64
    rerank_candidates: int = 0
    """How many fused hits the cross-encoder scores; 0 (the default) leaves fusion's order, 32 is the usual
    setting. Opt-in because on a CPU it costs far more latency than it gains on SciFact (README.md,
    Search)."""
    rerank_weight: float = 1.0
    """The reranker's order is fused again with fusion's (reciprocal ranks, `rrf_k`), this much weight to
    the reranker: a sentence-level cross-encoder alone lost to fusion on SciFact, together they edge ahead.
    A large weight (100) is plain reranking."""
    rrf_k: float = 10.0
    """Reciprocal rank fusion's constant; why 10 and not the usual 60 is in `engine.fusion`."""
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    ef_search: int = 400
    """HNSW candidate list: large enough that the vector lane finds what exact search finds on SciFact, at
    the same latency (the query embedding dominates; README.md, Search)."""
    rerank_with_heading: bool = True
    """Give the reranker "heading > path: sentence": a sentence alone often lacks its subject ("It ...")."""


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrict a search to repositories and a path prefix."""

    repositories: tuple[str, ...] | None = None
    path_prefix: str | None = None


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
        """The sentence after its heading path, what a cross-encoder reads: the heading often names the
        subject that the sentence only calls "it"."""
        heading = " > ".join(self.heading_path)
        return f"{heading}: {self.text}" if heading else self.text

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


def _hydrate(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[Hit, bytes]]:
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
    details = _hydrate(conn, ids)
    return [details[i][0] for i in ids if i in details]


class Retriever:
    """Hybrid retrieval over one citeline database; thread-safe, one instance per process."""

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
            details = _hydrate(conn, candidate_ids)
        identity = {sid: (hit.document_id, norm) for sid, (hit, norm) in details.items()}
        fused = [f for f in fuse(lanes, rrf_k=config.rrf_k, identity=identity) if f.sentence_id in details]
        hits = [self._hit(f, details[f.sentence_id][0], stage_of, mode) for f in fused]
        if mode is SearchMode.HYBRID and self._reranker is not None and hits and config.rerank_candidates > 0:
            hits = self._rerank(self._reranker, query, hits)
        return hits[:k]

    def _rerank(self, reranker: RelevanceModel, query: str, hits: list[Hit]) -> list[Hit]:
        """Score the head with the cross-encoder, then fuse its ranks with fusion's: the `final` score."""
        config = self._config
        head = hits[: config.rerank_candidates]
        passages = [h.headed_text if config.rerank_with_heading else h.text for h in head]
        for hit, score in zip(head, reranker.score(query, passages), strict=True):
            hit.scores["rerank"] = float(score)
        by_rerank = sorted(range(len(head)), key=lambda i: -head[i].scores["rerank"])
        for rerank_rank, index in enumerate(by_rerank, start=1):
            head[index].scores["final"] = config.rerank_weight / (config.rrf_k + rerank_rank) + 1 / (
                config.rrf_k + index + 1
            )
        head.sort(key=lambda h: -h.scores["final"])
        return head + hits[config.rerank_candidates :]

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
