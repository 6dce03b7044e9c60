"""Which kind of gap a group of askings is, and the passage that shows it (`engine.gaps`).

Every asking that read passages (an `insufficient` answer) keeps its near passages with the relevance model's
rating of each and the relevance floor it was measured against (the `threshold` its passages measured on
`relevance` carry, else `GapConfig.floor`). A gap's best-rated passage is the one rated highest over all its
askings (the latest asking's on a tie), never simply the first search hit; it names the gap's closest section.
The kinds, in the order gaps are listed:

- `not_in_docs` ("not in the docs"): its askings were rated and no passage came near the floor: the best
  rating is below `floor - near_margin` (or search found nothing at all). The docs lack the answer.
- `near_miss`: the best rating is within `near_margin` below the floor: the docs may say it in other words.
- `missed`: a passage was rated as answering (at or above the floor) yet the answer was refused, or the team
  accepted a passage for the question (`Passage.accepted`) and it was asked and refused after, or that
  passage has since changed (`stale`). The docs have the answer; citeline did not give it.
- `unrated`: no rating stands: the askings failed, were feedback on a given answer, or ran without a
  relevance model, or the best-rated passage has since changed or gone. Read its answers, or ask again.

Passages are read back from the index as they are now (`indexer.gaps.live_sentences`), so the line shown is
today's. A rated passage whose sentence has gone (edited or deleted) no longer counts: the kind is decided on
the passages still there. `page_changed` says that the best-rated passage's page changed (or the passage went)
after the gap was last asked: its ratings were of the old page, so the question should be asked again, and
that asking re-checks it (it closes the gap when it is answered, and its fresh ratings decide the kind).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from indexer.gaps import LiveSentence

__all__ = ["KINDS", "KIND_LABELS", "Passage", "Verdict", "classify", "kind_rank", "near_passages"]

KINDS = ("not_in_docs", "near_miss", "missed", "unrated")
"""The kinds of gap, in the order they are listed."""
KIND_LABELS = {
    "not_in_docs": "not in the docs",
    "near_miss": "near miss",
    "missed": "missed",
    "unrated": "unrated",
}


def kind_rank(kind: str) -> int:
    """Where `kind` sorts among `KINDS` (an unknown kind last)."""
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage a gap shows: where it is, what it says, its rating for the question against the floor (both
    None when not rated), and whether the team accepted it for the question."""

    sentence_id: int | None
    repository: str | None
    path: str | None
    heading: str
    line_start: int | None
    line_end: int | None
    text: str
    rating: float | None = None
    floor: float | None = None
    accepted: bool = False
    stale: bool = False
    """An accepted passage whose sentence has changed or gone since (`indexer.feedback.mark_stale`)."""

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of a gap's `passage`."""
        return {
            "sentence_id": self.sentence_id,
            "repository": self.repository,
            "path": self.path,
            "heading": self.heading,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "text": self.text,
            "rating": self.rating,
            "floor": self.floor,
            "accepted": self.accepted,
            "stale": self.stale,
        }

    def live(self, now: Mapping[int, LiveSentence]) -> Passage | None:
        """This passage where it is now, or None when its sentence has gone or says something else."""
        if self.sentence_id is None or self.stale:
            return self
        found = now.get(self.sentence_id)
        if found is None or found.text != self.text:
            return None
        return replace(
            self,
            repository=found.repository,
            path=found.path,
            heading=found.heading,
            line_start=found.line_start,
            line_end=found.line_end,
        )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def near_passages(nearest: Iterable[Mapping[str, Any]], floor: float) -> tuple[tuple[Passage, ...], bool]:
    """An asking's stored near passages (`NearPassage.to_dict`) as gap passages, and whether they were rated.

    They were rated when any was measured against the relevance floor or has a rating above 0 (without a
    relevance model every rating is 0 and none is measured on `relevance`); an asking whose search found
    nothing counts as rated, with nothing near. The floor is the one its passages were measured against."""
    items = [n for n in nearest if isinstance(n.get("sentence_id"), int)]
    measured = [
        n for n in items if n.get("measure") == "relevance" and _number(n.get("threshold")) is not None
    ]
    undrawn = [n for n in measured if not n.get("stage")]  # measured on the floor itself, not a stage's own
    if undrawn or measured:
        floor = _number((undrawn or measured)[0]["threshold"]) or floor
    rated = not items or bool(measured) or any((_number(n.get("rating")) or 0.0) > 0 for n in items)
    passages = tuple(
        Passage(
            n["sentence_id"],
            n.get("repository"),
            n.get("path"),
            n.get("heading") or "",
            n.get("line_start"),
            n.get("line_end"),
            str(n.get("text") or ""),
            (_number(n.get("rating")) or 0.0) if rated else None,
            floor if rated else None,
        )
        for n in items
    )
    return passages, rated


@dataclass(frozen=True, slots=True)
class Verdict:
    """A gap's kind, the passage that shows it, and whether its closest page changed since it was asked."""

    kind: str
    passage: Passage | None
    page_changed: bool = False


def classify(
    rated: Sequence[tuple[Passage, datetime]],
    accepted: Sequence[Passage],
    any_rated: bool,
    last_asked: datetime,
    near_margin: float,
    now: Mapping[int, LiveSentence] | None = None,
) -> Verdict:
    """The kind of a gap whose askings read `rated` (each passage with when it was read; unrated ones with
    rating None), for which the team accepted `accepted`; `any_rated`: whether any asking was rated. With
    `now` (the live sentences), passages are read as they are now, as the module says; without, as stored."""
    ranked = [p for p, _ in sorted(((p, at) for p, at in rated if p.rating is not None), key=_best_first)]
    plain = [p for p, at in sorted(rated, key=lambda p_at: -p_at[1].timestamp()) if p.rating is None]
    best_then = ranked[0] if ranked else None
    gone = False
    if now is not None:
        ranked = [q for p in ranked if (q := p.live(now)) is not None]
        plain = [q for p in plain if (q := p.live(now)) is not None]
        accepted = [q for p in accepted if (q := p.live(now)) is not None]
        gone = best_then is not None and (not ranked or ranked[0].sentence_id != best_then.sentence_id)
    changed = gone or (best_then is not None and now is not None and _changed(best_then, now, last_asked))
    best = ranked[0] if ranked else None
    if gone:  # the rating that decided the kind was of a passage no longer there: ask again to tell
        if accepted:
            return Verdict("missed", accepted[0], True)
        return Verdict("unrated", best or (plain[0] if plain else None), True)
    if best is not None and best.floor is not None and best.rating is not None and best.rating >= best.floor:
        return Verdict("missed", best, changed)
    if accepted:
        return Verdict("missed", accepted[0], changed)
    if best is not None and best.floor is not None and best.rating is not None:
        kind = "near_miss" if best.rating >= best.floor - near_margin else "not_in_docs"
        return Verdict(kind, best, changed)
    if any_rated and best_then is None:  # search found nothing to rate
        return Verdict("not_in_docs", None, changed)
    return Verdict("unrated", plain[0] if plain else None, changed)


def _best_first(item: tuple[Passage, datetime]) -> tuple[float, float]:
    passage, at = item
    return (-(passage.rating or 0.0), -at.timestamp())


def _changed(passage: Passage, now: Mapping[int, LiveSentence], last_asked: datetime) -> bool:
    found = now.get(passage.sentence_id) if passage.sentence_id is not None else None
    return found is None or found.changed_at > last_asked
