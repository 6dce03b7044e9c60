"""What a planner reads and returns, behind one Protocol: the loop state, and the plan it proposes.

The controller owns the loop and the verification; a planner only reads the loop state (the question, the
evidence held, the findings accepted with their provenance, the clauses rejected and the searches that failed)
and proposes. That split keeps every guarantee in the controller: whatever a planner proposes, nothing is
emitted unverified, and no search is run twice.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from engine.answers import RejectedClause
from engine.routing import QuestionShape
from engine.search import Hit
from engine.verdicts import Proposal
from engine.words import stems

if TYPE_CHECKING:  # annotations only: `engine.llm_client` (its `PlannerError`) and so the configuration
    # are read without the evidence's models, numpy or the database driver
    from engine.evidence import EvidencePool

__all__ = [
    "OPEN_TERMS_SHARE",
    "FailedSearch",
    "Finding",
    "Plan",
    "Planner",
    "PlannerError",
    "PlannerState",
]


OPEN_TERMS_SHARE = 1 / 3
"""A one-hop answer whose findings leave this share of the question's terms unmentioned is not complete."""


class PlannerError(RuntimeError):
    """The planner could not produce a valid plan; the round is recorded as failed."""


@dataclass(frozen=True, slots=True)
class Finding:
    """An accepted clause with its provenance, as the planner sees it."""

    clause: str
    source_ids: tuple[int, ...]
    paths: tuple[str, ...]
    round: int


@dataclass(frozen=True, slots=True)
class FailedSearch:
    """A search that brought nothing usable, and why; planners must not propose it again."""

    query: str
    reason: str
    round: int


@dataclass(slots=True)
class PlannerState:
    """Everything a planner may read; the controller updates it between rounds."""

    question: str
    shape: QuestionShape
    pool: EvidencePool
    round: int = 1
    max_rounds: int = 6
    latest: list[Hit] = field(default_factory=list)
    accepted: list[Finding] = field(default_factory=list)
    rejected: list[RejectedClause] = field(default_factory=list)
    failed: list[FailedSearch] = field(default_factory=list)
    queries_run: list[str] = field(default_factory=list)
    parts: tuple[str, ...] = ()
    """The questions the question asks at once (`routing.question_parts`), when it asks more than one."""
    started: float = field(default_factory=time.monotonic)
    """When (`time.monotonic`) the answer began: a planner's time budget counts from here, not from its first
    call, so the search before that call is inside the budget."""
    planner_deadline: float | None = None
    """When (`time.monotonic`) a planner with a time budget stops asking its model for this answer; such a
    planner sets it on its first call of the answer."""

    def covered_documents(self) -> set[str]:
        """Paths the accepted findings cite."""
        return {p for f in self.accepted for p in f.paths}

    def coverage_met(self, planned: Sequence[Hit] = ()) -> bool:
        """The accepted findings (and `planned`) draw on as many documents as the question's shape asks for.

        A single-hop question whose findings leave a third or more of its terms unmentioned gets a second
        document: "what type of forum did a former Soviet statesman initiate" is not answered by the
        sentence that names the statesman, and one hop is only what its shape suggested.
        """
        covered = self.covered_documents() | {h.path for h in planned}
        if len(covered) < self.shape.hops:
            return False
        if len(covered) >= 2:
            return True
        asked = stems(self.question)
        known = stems(" ".join(h.headed_text for h in [*self.held(), *planned]))
        return not asked or len(asked - known) / len(asked) < OPEN_TERMS_SHARE

    def held(self) -> list[Hit]:
        """The evidence the accepted findings cite."""
        return [self.pool.hits[i] for f in self.accepted for i in f.source_ids if i in self.pool.hits]

    def is_new_query(self, query: str) -> bool:
        """Not run before and not a recorded failure (compared case- and space-insensitively)."""
        key = " ".join(query.lower().split())
        seen = {" ".join(q.lower().split()) for q in self.queries_run}
        seen |= {" ".join(f.query.lower().split()) for f in self.failed}
        return bool(key) and key not in seen


@dataclass(slots=True)
class Plan:
    """The clauses to verify this round, the searches for the next one (at most 3), and whether it is done."""

    proposals: list[Proposal] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    done: bool = False
    reading: dict[str, Any] | None = None
    """What a model reader said in planning it (`engine.reader.Reading.to_dict`), kept by the trace."""


class Planner(Protocol):
    """Proposes clauses and subqueries; `final` means no further search will be run, so none may be asked."""

    @property
    def name(self) -> str: ...

    def plan(self, state: PlannerState, *, final: bool) -> Plan: ...
