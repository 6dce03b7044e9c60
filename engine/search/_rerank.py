"""Reranking the fused head with a relevance cross-encoder, its order fused again with fusion's.

Only the first `rerank_candidates` hits move, and only among themselves: each gets a `rerank` score (the
model's) and a `final` score (reciprocal ranks of the reranker's and fusion's orders, the reranker weighted
by `rerank_weight`); the hits below the head keep fusion's order and scores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.search._hits import Hit

if TYPE_CHECKING:  # annotations only: a lexical search loads no model code
    from engine.crossencoders import RelevanceModel
    from engine.search._contract import RetrievalConfig

__all__ = ["rerank"]


def rerank(reranker: RelevanceModel, query: str, hits: list[Hit], config: RetrievalConfig) -> list[Hit]:
    """`hits` (in fusion's order) with the head scored by `reranker` and sorted by its `final` score."""
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
