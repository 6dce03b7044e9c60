"""Why a closest passage was not used: one structured reason (`ReasonKind` and the numbers that decided it),
and the plain words `citeline ask` and the page both print for it (`plain_reason`).

Each kind names what happened to the passage, and its words never contradict its numbers:

- `not_read`: no clause was drawn from it and no model reader was shown it; rated at or above the relevance
  floor (or not rated), with its `rank` among the listed passages by rating;
- `not_chosen`: a model reader was shown it and named other passages, or none; with its rank;
- `below_floor`: rated below the relevance floor for the question: the only kind called "not about your
  question";
- `near_miss`: the answer check read it as a near miss, below the answer check's floor;
- `not_entailed`: a clause drawn from it failed entailment;
- `not_verified`: a clause drawn from it failed another check (coverage, the composite);
- `contradicted`: other evidence, or a more recently changed source, says otherwise.

The page's copy of `plain_reason` is `api/static/reasons.js`; `tests/test_reasons.py` runs both on the same
passages and compares their words. This module imports nothing heavy: the CLI prints an answer with it
without loading a model or a database driver.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = ["ReasonKind", "ordinal", "plain_reason", "reason_kind"]


class ReasonKind(enum.Enum):
    """What happened to a closest passage (`NearPassage.kind`); each value is what the JSON carries as
    `reason_kind`, so a value never changes once shipped."""

    NOT_READ = "not_read"
    NOT_CHOSEN = "not_chosen"
    BELOW_FLOOR = "below_floor"
    NEAR_MISS = "near_miss"
    NOT_ENTAILED = "not_entailed"
    NOT_VERIFIED = "not_verified"
    CONTRADICTED = "contradicted"


_HEADS = {
    ReasonKind.NOT_READ: "not read",
    ReasonKind.NOT_CHOSEN: "read, not chosen by the reader",
    ReasonKind.BELOW_FLOOR: "rated as not about your question",
    ReasonKind.NEAR_MISS: "read as a near miss",
    ReasonKind.NOT_ENTAILED: "not entailed",
    ReasonKind.NOT_VERIFIED: "failed verification",
    ReasonKind.CONTRADICTED: "contradicted",
}
"""The words each kind begins with (`api/static/reasons.js` holds the same)."""

_RANKED = (ReasonKind.NOT_READ, ReasonKind.NOT_CHOSEN)
_FLOORS = ("relevance", "answer_check")


def reason_kind(
    stage: str | None,
    measure: str | None,
    score: float | None,
    threshold: float | None,
    *,
    shown: bool = False,
) -> ReasonKind:
    """The kind of a passage refused at `stage` by `measure` (its `score` against `threshold`), or, with no
    stage, of one no clause was drawn from: below the floor when its rating is under it, else not chosen when
    a reader was `shown` it, else not read."""
    if stage is None:
        if score is not None and threshold is not None and score < threshold:
            return ReasonKind.BELOW_FLOOR
        return ReasonKind.NOT_CHOSEN if shown else ReasonKind.NOT_READ
    if stage == "relevance":
        return ReasonKind.NEAR_MISS if measure == "answer_check" else ReasonKind.BELOW_FLOOR
    if stage == "entailment":
        return ReasonKind.NOT_ENTAILED
    if stage in ("contradiction", "conflict"):
        return ReasonKind.CONTRADICTED
    return ReasonKind.NOT_VERIFIED


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, ..."""
    if number % 100 in (11, 12, 13):
        return f"{number}th"
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _fixed(value: float) -> str:
    """`value` with two decimals, a tie rounded up, as JavaScript's `toFixed(2)` writes a non-negative
    number (Python's own format rounds an exact tie to even: 0.125 would read 0.12 here, 0.13 on the page)."""
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def plain_reason(near: Mapping[str, Any]) -> str:
    """Why the passage `near` (its JSON shape, `engine.passages.NearPassage.to_dict`) was not used, in plain
    words: what happened (its `reason_kind`, or the kind its stage and numbers give when a stored answer
    predates it), then its rank and its score against the value it had to reach, where it has them."""
    stage, measure = near.get("stage"), near.get("measure") or near.get("stage")
    score, threshold = near.get("score"), near.get("threshold")
    try:
        kind = ReasonKind(near.get("reason_kind"))
    except ValueError:
        kind = reason_kind(stage, measure, score, threshold)
    details = []
    rank = near.get("rank")
    if kind in _RANKED and isinstance(rank, int) and rank > 0:
        details.append(f"ranked {ordinal(rank)}")
    if score is not None and threshold is not None:
        name = "rated" if kind in _RANKED else (measure or "score").replace("_", " ")
        bound = "floor" if measure in _FLOORS else "limit" if measure == "contradiction" else "needed"
        details.append(f"{name} {_fixed(score)} ({bound} {_fixed(threshold)})")
    elif stage and near.get("reason"):
        details.append(str(near["reason"]))
    head = _HEADS[kind]
    return f"{head}: {', '.join(details)}" if details else head
