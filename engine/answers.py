"""The engine's answer types and their stable JSON shape (what `citeline ask --json` prints, the store keeps).

An answer is a list of clauses, each carrying the sources that entail it and the score of every verification
stage, plus the route taken and a trace of every round: a reader can check why each clause was accepted and
why every other candidate was not. `status` is never forced: with too little verified evidence the answer says
`insufficient`, and an engine error says `fail` with its reason.

The JSON shape (`Answer.to_dict()`; stable, scripts depend on it)::

    {"id": "uuid or null", "question": "...", "status": "answer|insufficient|fail", "reason": null,
     "route": "fast|reason", "budget": "low|mid|high", "filters": {"repositories": [], "path_prefix": null},
     "clauses": [{"clause": "...", "confidence": 0.93, "need": "none|single|multi", "round": 1,
                  "conflicts_with": [], "chosen_by": "team",
                  "remembered": {"question": "...", "answer_id": "uuid", "accepted_at": "iso time"},
                  "verification": {"similarity": 1.0, "relevance": 0.7, "entailment": 1.0, "coverage": 1.0,
                                   "contradiction": 0.0, "composite": 0.93, "answer_check": 0.8},
                  "sources": [{"sentence_id": 42, "document_id": 7, "repository": "docs", "path": "a.md",
                               "heading": "A > B", "line_start": 3, "line_end": 3, "text": "...",
                               "embedded": true, "git_commit": "abc123", "kind": "sentence"}]}],
     "notes": ["route reason: bridge phrasing", "..."],
     "trace": [{"round": 1, "queries": ["..."], "new_evidence": [42, 43], "accepted": ["..."],
                "rejected": [{"clause": "...", "reason": "...", "stage": "entailment"}],
                "failed_searches": [{"query": "...", "reason": "no new evidence"}], "planner_error": null,
                "planned_by": null, "timings_ms": {"retrieve": 12.0, "plan": 0.4, "verify": 30.1}}],
     "timings_ms": {"total": 60.2}, "cached": false}

`"chosen_by"` and `"remembered"` are on a clause only when it is a sentence the team accepted for an earlier
question (`engine.memory`). `"read_as"` is there only when the engine read a misspelt question as the index
spells it (`engine.search.spell_question`): the text it read, beside the question as asked. `"nearest"` is
there only on an answer with no verified clause: the 3 to 5 passages that came closest, each with why it was
refused (`engine.passages.NearPassage`); they are not verified and never count as an answer. A note that
begins with "warning: " says why the answer may be weak (`engine.caveats`).

A stored answer loaded by `engine.store.load_answer` has the same shape with `"fresh"` and a `"state"`
(`live`, `changed`, `deleted`) on every source (with `current_line_start`/`current_line_end` when it moved);
served again, it says `"cached": true`. `Answer.from_dict` reads the shape back: the answer store keeps and
returns this type, so the shape is spelled here only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from engine.kinds import Budget, ReferenceNeed, Route, SourceState, Stage, Status
from engine.passages import NearPassage, cited_hit, source_dict
from engine.search import Hit

__all__ = [
    "Answer",
    "AnswerClause",
    "Budget",
    "NearPassage",
    "ReferenceNeed",
    "RejectedClause",
    "RoundTrace",
    "Route",
    "SourceCheck",
    "SourceState",
    "Stage",
    "Status",
    "Verification",
    "source_dict",
]


@dataclass(slots=True)
class Verification:
    """The stage scores of a clause's accepted supports (means), and the composite they give."""

    similarity: float = 0.0
    relevance: float = 0.0
    entailment: float = 0.0
    coverage: float = 0.0
    contradiction: float = 0.0
    composite: float = 0.0
    answer_check: float | None = None
    """The answer check's best rating of the supports (`VerifyConfig.min_answer_check`); None when no check
    read them (no check loaded, or a bridge's later hop), and then left out of the JSON. Not part of the
    composite."""

    def to_dict(self) -> dict[str, float]:
        """Rounded scores for JSON, in field order; `answer_check` only where the check read the clause, so
        every value is a number."""
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: round(value, 4) for name, value in values if value is not None}


@dataclass(frozen=True, slots=True)
class SourceCheck:
    """A stored answer's cited source against the index now (`engine.store.load_answer`)."""

    state: SourceState
    cited_lines: tuple[int, int]
    current_lines: tuple[int, int] | None = None
    """Where the sentence is now; None once it is deleted."""
    document_id: int | None = None
    """The stored reference to the cited document: None once that document is deleted."""

    def to_dict(self) -> dict[str, Any]:
        """JSON: the state and, for a source that moved, where it is now."""
        out: dict[str, Any] = {"state": self.state.value}
        if self.current_lines is not None and self.current_lines != self.cited_lines:
            out["current_line_start"], out["current_line_end"] = self.current_lines
        return out


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
    checks: list[SourceCheck] = field(default_factory=list)
    """For a stored answer: each source (in order) against the index now; empty for a computed one."""
    remembered: dict[str, Any] | None = None
    """For a sentence the team accepted for an earlier question (`engine.memory`): that question, its
    answer's id and when it was accepted; None otherwise, and then left out of the JSON."""
    chosen_by: str | None = None
    """`team` for a clause proposed from what the team accepted; None (left out of the JSON) otherwise: the
    round's trace says which planner chose it."""

    def to_dict(self) -> dict[str, Any]:
        """The documented clause shape."""
        sources = [source_dict(h) for h in self.sources]
        for source, check in zip(sources, self.checks, strict=False):
            source.update(check.to_dict())
        out = {
            "clause": self.clause,
            "sources": sources,
            "confidence": round(self.confidence, 4),
            "need": self.need.value,
            "verification": self.verification.to_dict(),
            "conflicts_with": list(self.conflicts_with),
            "round": self.round,
        }
        if self.remembered is not None:
            out["remembered"] = dict(self.remembered)
        if self.chosen_by is not None:
            out["chosen_by"] = self.chosen_by
        return out

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> AnswerClause:
        """The clause `to_dict` wrote (its sources' states aside: the store checks them anew)."""
        return cls(
            body["clause"],
            [cited_hit(s) for s in body.get("sources", [])],
            float(body["confidence"]),
            ReferenceNeed(body.get("need", "single")),
            Verification(**body.get("verification", {})),
            list(body.get("conflicts_with", [])),
            body.get("round", 1),
            remembered=body.get("remembered"),
            chosen_by=body.get("chosen_by"),
        )


@dataclass(frozen=True, slots=True)
class RejectedClause:
    """A candidate clause that was not emitted, why, and the stage that stopped it."""

    clause: str
    reason: str
    stage: Stage | None = None
    """None only for a clause read back from a store written before stages were kept in the trace."""

    def to_dict(self) -> dict[str, str]:
        """JSON for the trace; `stage` only when known."""
        body = {"clause": self.clause, "reason": self.reason}
        if self.stage is not None:
            body["stage"] = self.stage.value
        return body


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
    planned_by: str | None = None
    """The planner that planned this round in place of the configured one, which failed it
    (`planner_error`)."""
    chosen_by: dict[str, str] = field(default_factory=dict)
    """Who chose each clause this round accepted, by clause: `extractive`, `reader` or `llm planner`."""
    reading: dict[str, Any] | None = None
    """What a model reader said this round (`engine.reader.Reading.to_dict`), when one read."""

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
            "planned_by": self.planned_by,
            "chosen_by": dict(self.chosen_by),
            "reading": self.reading,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> RoundTrace:
        """The round `to_dict` wrote."""
        return cls(
            body["round"],
            list(body.get("queries", [])),
            list(body.get("new_evidence", [])),
            list(body.get("accepted", [])),
            [
                RejectedClause(r["clause"], r["reason"], Stage(r["stage"]) if "stage" in r else None)
                for r in body.get("rejected", [])
            ],
            list(body.get("failed_searches", [])),
            body.get("planner_error"),
            dict(body.get("timings_ms", {})),
            body.get("planned_by"),
            dict(body.get("chosen_by", {})),
            body.get("reading"),
        )


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
    cached: bool = False
    """Served again from the answer store instead of computed."""
    fresh: bool | None = None
    """For an answer loaded from the store: whether every cited source is live; None for a computed one."""
    read_as: str | None = None
    """The question as search and the models read it, when that differs from the question asked (its
    misspelt words replaced); None when it was read as asked."""
    nearest: list[NearPassage] = field(default_factory=list)
    """With no verified clause: the passages that came closest, best first (`engine.nearest`); never an
    answer, and empty whenever the answer holds a clause."""
    generation: int | None = None
    """The index generation (`indexer.generation`) its computation began at, kept by the store beside the
    JSON, not in it; None when it is not known (an answer stored before generations were kept)."""

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `citeline ask --json`, as in this module's docstring."""
        out = {
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
            "cached": self.cached,
        }
        if self.fresh is not None:
            out["fresh"] = self.fresh
        if self.read_as is not None:
            out["read_as"] = self.read_as
        if self.nearest and not self.clauses:
            out["nearest"] = [n.to_dict() for n in self.nearest]
        return out

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> Answer:
        """The answer `to_dict` wrote, as the store keeps it (its sources' states aside)."""
        return cls(
            body["question"],
            Status(body["status"]),
            Route(body["route"]),
            Budget(body["budget"]),
            [AnswerClause.from_dict(c) for c in body.get("clauses", [])],
            body.get("reason"),
            list(body.get("notes", [])),
            [RoundTrace.from_dict(t) for t in body.get("trace", [])],
            dict(body.get("timings_ms", {})),
            dict(body.get("filters", {})),
            body.get("id"),
            body.get("cached", False),
            read_as=body.get("read_as"),
            nearest=[NearPassage.from_dict(n) for n in body.get("nearest", [])],
        )
