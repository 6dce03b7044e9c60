"""The engine's answer types and their stable JSON shape (what `citeline ask --json` prints, the store keeps).

An answer is a list of clauses, each carrying the sources that entail it and the score of every verification
stage, plus the route taken and a trace of every round: a reader can check why each clause was accepted and
why every other candidate was not. `status` is never forced: with too little verified evidence the answer says
`insufficient`, and an engine error says `fail` with its reason.

The JSON shape (`Answer.to_dict()`; stable, scripts depend on it)::

    {"id": "uuid or null", "question": "...", "status": "answer|insufficient|fail", "reason": null,
     "route": "fast|reason", "budget": "low|mid|high", "filters": {"repositories": [], "path_prefix": null},
     "clauses": [{"clause": "...", "confidence": 0.93, "need": "none|single|multi", "round": 1,
                  "conflicts_with": [],
                  "verification": {"similarity": 1.0, "relevance": 0.7, "entailment": 1.0, "coverage": 1.0,
                                   "contradiction": 0.0, "composite": 0.93},
                  "sources": [{"sentence_id": 42, "document_id": 7, "repository": "docs", "path": "a.md",
                               "heading": "A > B", "line_start": 3, "line_end": 3, "text": "...",
                               "embedded": true, "git_commit": "abc123"}]}],
     "notes": ["route reason: bridge phrasing", "..."],
     "trace": [{"round": 1, "queries": ["..."], "new_evidence": [42, 43], "accepted": ["..."],
                "rejected": [{"clause": "...", "reason": "..."}], "failed_searches": [{"query": "...",
                "reason": "no new evidence"}], "planner_error": null,
                "timings_ms": {"retrieve": 12.0, "plan": 0.4, "verify": 30.1}}],
     "timings_ms": {"total": 60.2}, "cached": false}

A stored answer served again (or loaded by `indexer.answers.load_answer`) has the same shape with
`"cached": true`, `"fresh"`, and a `"state"` (`live`, `changed`, `deleted`) on every source.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from engine.search import Hit

__all__ = [
    "Answer",
    "AnswerClause",
    "Budget",
    "ReferenceNeed",
    "RejectedClause",
    "RoundTrace",
    "Route",
    "Status",
    "Verification",
    "source_dict",
]


class Status(enum.Enum):
    """The outcome of one question."""

    ANSWER = "answer"
    """At least one clause passed verification."""
    INSUFFICIENT = "insufficient"
    """The engine ran but no clause could be verified against the indexed sources."""
    FAIL = "fail"
    """The engine could not run (a model or the database failed); `reason` says why."""


class Route(enum.Enum):
    """Which path answered the question, chosen without an LLM."""

    FAST = "fast"
    """One retrieval and one verification pass: single-fact questions with a confident first retrieval."""
    REASON = "reason"
    """The IRCoT loop: plan a clause, retrieve for it, verify, repeat (multi-hop, comparison, unsure)."""


class Budget(enum.Enum):
    """How much work one question may cost."""

    LOW = "low"
    """Few rounds, and each clause stops at its first sufficient supports."""
    MID = "mid"
    """The default: more rounds, and every supporting candidate is scored."""
    HIGH = "high"
    """The most rounds and candidates, every stage on each; stale stored answers are re-verified."""


class ReferenceNeed(enum.Enum):
    """How many sources a planned clause needs to be accepted."""

    NONE = "none"
    """A connective clause adding no fact: every content word must already be in the accepted clauses."""
    SINGLE = "single"
    """One source sentence (with its neighbour as context) must entail the clause."""
    MULTI = "multi"
    """The clause joins facts: two or more sources, each needed, must entail it together."""


@dataclass(slots=True)
class Verification:
    """The stage scores of a clause's accepted supports (means), and the composite they give."""

    similarity: float = 0.0
    relevance: float = 0.0
    entailment: float = 0.0
    coverage: float = 0.0
    contradiction: float = 0.0
    composite: float = 0.0

    def to_dict(self) -> dict[str, float]:
        """Rounded scores for JSON."""
        return {
            "similarity": round(self.similarity, 4),
            "relevance": round(self.relevance, 4),
            "entailment": round(self.entailment, 4),
            "coverage": round(self.coverage, 4),
            "contradiction": round(self.contradiction, 4),
            "composite": round(self.composite, 4),
        }


@dataclass(slots=True)
class AnswerClause:
    """One verified clause with the sources that entail it."""

    clause: str
    sources: list[Hit]
    confidence: float
    need: ReferenceNeed
    verification: Verification
    conflicts_with: list[int] = field(default_factory=list)
    round: int = 1

    def to_dict(self) -> dict[str, Any]:
        """The documented clause shape."""
        return {
            "clause": self.clause,
            "sources": [source_dict(h) for h in self.sources],
            "confidence": round(self.confidence, 4),
            "need": self.need.value,
            "verification": self.verification.to_dict(),
            "conflicts_with": list(self.conflicts_with),
            "round": self.round,
        }


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
    }


@dataclass(frozen=True, slots=True)
class RejectedClause:
    """A candidate clause that was not emitted, and the stage that stopped it."""

    clause: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """JSON for the trace."""
        return {"clause": self.clause, "reason": self.reason}


@dataclass(slots=True)
class RoundTrace:
    """What one round did: its queries, the evidence they added, the verdicts, and where time went."""

    round: int
    queries: list[str] = field(default_factory=list)
    new_evidence: list[int] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    rejected: list[RejectedClause] = field(default_factory=list)
    failed_searches: list[dict[str, str]] = field(default_factory=list)
    planner_error: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON for the trace."""
        return {
            "round": self.round,
            "queries": list(self.queries),
            "new_evidence": list(self.new_evidence),
            "accepted": list(self.accepted),
            "rejected": [r.to_dict() for r in self.rejected],
            "failed_searches": list(self.failed_searches),
            "planner_error": self.planner_error,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


@dataclass(slots=True)
class Answer:
    """The engine's result for one question."""

    question: str
    status: Status
    route: Route
    budget: Budget
    clauses: list[AnswerClause] = field(default_factory=list)
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    trace: list[RoundTrace] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    stored: dict[str, Any] | None = None
    """The stored JSON when this answer was served from the store instead of computed."""

    @classmethod
    def from_stored(cls, body: dict[str, Any]) -> Answer:
        """A stored answer served again: `to_dict()` is its stored JSON with source states and `cached`."""
        return cls(
            body["question"],
            Status(body["status"]),
            Route(body["route"]),
            Budget(body["budget"]),
            reason=body.get("reason"),
            id=body.get("id"),
            stored=body,
        )

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `citeline ask --json`, as in this module's docstring."""
        if self.stored is not None:
            return {**self.stored, "cached": True}
        return {
            "id": self.id,
            "question": self.question,
            "status": self.status.value,
            "reason": self.reason,
            "route": self.route.value,
            "budget": self.budget.value,
            "filters": dict(self.filters),
            "clauses": [c.to_dict() for c in self.clauses],
            "notes": list(self.notes),
            "trace": [t.to_dict() for t in self.trace],
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "cached": False,
        }
