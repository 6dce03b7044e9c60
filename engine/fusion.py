"""Fusing the two lanes: weighted reciprocal rank fusion, de-duplicated by (document, sentence text).

RRF uses ranks, not scores, because BM25 scores and cosines live on unrelated scales; the constant damps the
head so one lane's first hit cannot drown the other lane's consensus. The default, 10, damps less than the
usual 60: at 60 a sentence ranked 60th in both lanes outscores one lane's first hit, and once the lexical lane
read headings its head was worth more (the measurements are in README.md, Search).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Lane", "LaneResult", "fuse"]


class Lane(enum.Enum):
    """Where a candidate came from."""

    LEXICAL = "lexical"
    """BM25 over full-text search: current the moment a file's transaction commits."""
    VECTOR = "vector"
    """HNSW cosine over embeddings: only sentences the embedder has reached."""


@dataclass(frozen=True, slots=True)
class LaneResult:
    """One lane's ranked sentence ids with the lane's own score for each."""

    lane: Lane
    ranked: Sequence[tuple[int, float]]
    weight: float = 1.0


@dataclass(slots=True)
class Fused:
    """A fused candidate: its RRF score and, per lane, the rank and score it had there."""

    sentence_id: int
    score: float = 0.0
    lane_ranks: dict[Lane, int] = field(default_factory=dict)
    lane_scores: dict[Lane, float] = field(default_factory=dict)


def fuse(
    results: Sequence[LaneResult],
    *,
    rrf_k: float = 10.0,
    identity: Mapping[int, tuple[int, bytes]] | None = None,
) -> list[Fused]:
    """Weighted RRF over the lanes; sentences with the same identity (document id, normalized hash) merge.

    `identity` maps sentence ids to (document id, normalized hash); without it sentence ids are the identity.
    The first sentence id seen for an identity represents it. Ties break by sentence id for stable output.
    """
    by_key: dict[object, Fused] = {}
    for result in results:
        seen_in_lane: set[object] = set()
        for rank, (sentence_id, lane_score) in enumerate(result.ranked, start=1):
            key: object = identity.get(sentence_id, sentence_id) if identity else sentence_id
            if key in seen_in_lane:
                continue  # a duplicate sentence inside one lane counts once, at its best rank
            seen_in_lane.add(key)
            fused = by_key.setdefault(key, Fused(sentence_id))
            fused.score += result.weight / (rrf_k + rank)
            fused.lane_ranks[result.lane] = rank
            fused.lane_scores[result.lane] = lane_score
    return sorted(by_key.values(), key=lambda f: (-f.score, f.sentence_id))
