"""A lookup's close alternatives: when the best-rated candidates of a one-hop question are nearly tied, the
extractive planner proposes up to a few of them, each verified and cited on its own, best first, instead of
betting the answer on one.

The relevance model rates the sentence that answers and the sentences around it alike more often than it
separates them (a premise and the instruction after it, a default and the flag that changes it). A clause
is still emitted only when its own sources entail it and bear on the question (`engine.verify`), so each
alternative passes the same floors as the first.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.planning import PlannerState
from engine.search import Hit

__all__ = ["close_alternatives", "closeness"]


def closeness(state: PlannerState, hit: Hit) -> float:
    """How well `hit` reads as answering the question: the higher of its rating under its heading path and
    its rating read on its own (`EvidencePool.rating`, `own_rating`)."""
    own = state.pool.own_rating(state.question, hit)
    return max(state.pool.rating(state.question, hit), own or 0.0)


def close_alternatives(
    state: PlannerState, ranked: Sequence[Hit], chosen: Sequence[Hit], most: int, margin: float
) -> list[Hit]:
    """Up to `most - len(chosen)` further candidates, in the planner's order, each rated within `margin` of
    the best-rated chosen candidate (`closeness`) and saying something else (not the same text as one
    already taken); nothing when `most` is no more than what was chosen or nothing was chosen."""
    if not chosen or most <= len(chosen):
        return []
    best = max(closeness(state, h) for h in chosen)
    taken = {h.sentence_id for h in chosen}
    texts = {h.text.strip().lower() for h in chosen}
    out: list[Hit] = []
    for hit in ranked:
        if len(chosen) + len(out) >= most:
            break
        text = hit.text.strip().lower()
        if hit.sentence_id in taken or text in texts or hit.kind == "code":
            continue
        if closeness(state, hit) >= best - margin:
            out.append(hit)
            taken.add(hit.sentence_id)
            texts.add(text)
    return out
