"""The passages closest to answering a question no clause could be verified for (`Answer.nearest`).

The rounds record every refused clause's closest source with the stage and score that refused it; when the
answer ends with no clause, those and every other sentence the rounds held for the question are ranked by
how well the relevance model reads them as answering it, and the best few are kept. A held sentence the
planner drew no clause from says so, with its rating against the relevance floor. Headings and questions
state nothing and are left out. The list is never an answer: the controller sets it only on an answer with
no verified clause.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.evidence import EvidencePool
from engine.passages import NearPassage
from engine.verdicts import Verdict

__all__ = ["NEAREST", "closest", "refused_passage"]

NEAREST = 5
"""The most passages an answer lists."""


def refused_passage(verdict: Verdict) -> NearPassage | None:
    """The source a refused clause came closest with, and why it was refused; None when it had none."""
    if verdict.accepted or verdict.candidate is None:
        return None
    return NearPassage(
        verdict.candidate, verdict.reason, verdict.stage, verdict.measure, verdict.score, verdict.threshold
    )


def closest(
    refused: Sequence[NearPassage],
    pool: EvidencePool,
    question: str,
    floor: float | None,
    limit: int = NEAREST,
) -> list[NearPassage]:
    """The `limit` passages best rated for `question` among the refused ones and the rest of the pool.

    `floor` is the relevance floor a rated sentence is measured against (None: no relevance model rated
    the pool, and passages keep the order the rounds retrieved them in). A sentence refused more than once
    keeps its first refusal."""
    order = {sentence_id: index for index, sentence_id in enumerate(pool.hits)}
    found: dict[int, NearPassage] = {}
    for passage in refused:
        found.setdefault(passage.hit.sentence_id, passage)
    for hit in pool.hits.values():
        if hit.sentence_id in found or pool.states_nothing(hit):
            continue
        if floor is None:
            found[hit.sentence_id] = NearPassage(hit, "no clause was drawn from it")
            continue
        rating = _rating(pool, question, hit.sentence_id)
        reason = "no clause was drawn from it"
        found[hit.sentence_id] = NearPassage(hit, reason, None, "relevance", rating, floor)
    rated = [
        NearPassage(
            p.hit,
            p.reason,
            p.stage,
            p.measure,
            p.score,
            p.threshold,
            _rating(pool, question, p.hit.sentence_id),
        )
        for p in found.values()
    ]
    rated.sort(key=lambda p: (-p.rating, p.stage is None, order.get(p.hit.sentence_id, len(order))))
    return rated[:limit]


def _rating(pool: EvidencePool, question: str, sentence_id: int) -> float:
    """The best of the sentence's ratings for the question: under its heading, and read on its own."""
    rated = pool.ratings.get(question, {}).get(sentence_id, 0.0)
    own = pool.own_ratings.get(question, {}).get(sentence_id, 0.0)
    return max(rated, own)
