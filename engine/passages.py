"""Sentences as an answer's JSON carries them: a cited source, and a near passage (`nearest`) that came close
to answering but was refused.

A near passage is what an `insufficient` answer shows instead of nothing: a sentence the engine read for the
question, with where it is and why no clause from it was emitted (the stage that refused it, and the score it
got against that stage's threshold). It is never an answer: it is not verified, never counted as a clause,
and an answer with any verified clause carries none. Its JSON shape (`NearPassage.to_dict`)::

    {"sentence_id": 42, "document_id": 7, "repository": "docs", "path": "a.md", "heading": "A > B",
     "line_start": 3, "line_end": 3, "text": "...", "embedded": true, "git_commit": "abc123",
     "kind": "sentence", "stage": "relevance", "measure": "answer_check", "score": 0.09, "threshold": 0.1,
     "reason": "the answer check reads its sources as a near miss (0.09)", "rating": 0.41, "context": null,
     "reason_kind": "near_miss", "rank": null}

`stage` is the verification stage that refused a clause drawn from it (`engine.kinds.Stage`), or null when
the planner proposed none from it; `measure` names the score (`entailment`, `coverage`, `contradiction`,
`relevance`, `answer_check`, `composite`) and `threshold` the value it had to reach (for `contradiction`,
stay below); both null when no score applies. `rating` is how well the relevance model reads it as
answering the question (0 to 1; the retrieval's order when no model rated it), which orders the list.
`context` is the unit it cannot be read without, the one before it in its section ("It just works!" after
what "it" is), as a source is (`source_dict`), or null when it stands alone. `reason_kind` says what
happened to it in one word (`engine.reasons.ReasonKind`: `not_read`, `not_chosen`, `below_floor`,
`near_miss`, `not_entailed`, `not_verified`, `contradicted`), which `engine.reasons.plain_reason` puts in
plain words; `rank` is, for one no clause was drawn from and rated at or above the floor, its place among
the listed passages by rating (1 for the best rated), else null.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.kinds import Stage
from engine.reasons import ReasonKind, reason_kind
from engine.search import Hit

__all__ = ["NEAREST", "NearPassage", "cited_hit", "source_dict"]

NEAREST = 5
"""The near passages an answer lists at least, where it has them, and the CLI and the page show unfolded
(`engine.nearest` lists the question's whole first retrieval, which may be more)."""


def source_dict(hit: Hit) -> dict[str, Any]:
    """A cited sentence as JSON: enough to open the file at the line and to check freshness later."""
    return {
        "sentence_id": hit.sentence_id,
        "document_id": hit.document_id,
        "repository": hit.repository,
        "path": hit.path,
        "heading": " > ".join(hit.heading_path),
        "line_start": hit.line_start,
        "line_end": hit.line_end,
        "text": hit.text,
        "embedded": hit.embedded,
        "git_commit": hit.git_commit,
        "kind": hit.kind,
    }


def cited_hit(source: Mapping[str, Any]) -> Hit:
    """A sentence read back from `source_dict`: what it said and where; no search scores."""
    heading = source.get("heading") or ""
    return Hit(
        source["sentence_id"],
        source["text"],
        source["repository"],
        source["path"],
        source["line_start"],
        source["line_end"],
        tuple(heading.split(" > ")) if heading else (),
        source["document_id"],
        0,
        source.get("git_commit"),
        source.get("embedded", False),
        kind=source.get("kind") or "sentence",
    )


@dataclass(frozen=True, slots=True)
class NearPassage:
    """A sentence that came close to answering, and why no clause from it was emitted."""

    hit: Hit
    reason: str
    stage: Stage | None = None
    """The stage that refused a clause drawn from it; None when no clause from it was proposed."""
    measure: str | None = None
    score: float | None = None
    threshold: float | None = None
    rating: float = 0.0
    """How well it reads as answering the question (the relevance model's rating, 0 to 1)."""
    context: Hit | None = None
    """The unit before it that it depends on (`engine.contexts.leans_on`), shown with it; None if none."""
    kind: ReasonKind | None = None
    """What happened to it (`engine.reasons`); None: the kind its stage and numbers give (`reason_kind`)."""
    rank: int | None = None
    """For one no clause was drawn from, rated at or above the floor: its place among the listed passages
    by rating (1 for the best rated); None otherwise."""

    @property
    def reason_kind(self) -> ReasonKind:
        """`kind`, or the kind its stage and numbers give."""
        if self.kind is not None:
            return self.kind
        stage = None if self.stage is None else self.stage.value
        return reason_kind(stage, self.measure, self.score, self.threshold)

    def to_dict(self) -> dict[str, Any]:
        """The documented shape: the sentence as a source is, and the refusal."""
        return {
            **source_dict(self.hit),
            "stage": None if self.stage is None else self.stage.value,
            "measure": self.measure,
            "score": None if self.score is None else round(self.score, 4),
            "threshold": self.threshold,
            "reason": self.reason,
            "rating": round(self.rating, 4),
            "context": None if self.context is None else source_dict(self.context),
            "reason_kind": self.reason_kind.value,
            "rank": self.rank,
        }

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> NearPassage:
        """The passage `to_dict` wrote (one stored before `reason_kind` gets the kind its stage and numbers
        give)."""
        stage = body.get("stage")
        try:
            kind: ReasonKind | None = ReasonKind(body.get("reason_kind"))
        except ValueError:
            kind = None
        rank = body.get("rank")
        return cls(
            cited_hit(body),
            body.get("reason", ""),
            Stage(stage) if stage else None,
            body.get("measure"),
            body.get("score"),
            body.get("threshold"),
            float(body.get("rating", 0.0)),
            cited_hit(context) if (context := body.get("context")) else None,
            kind,
            rank if isinstance(rank, int) else None,
        )
