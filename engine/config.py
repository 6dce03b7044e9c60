"""The answer engine's settings: retrieval sizes, loop bounds, the conflict policy, and the stage configs."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from engine.answers import Budget
from engine.memory import MemoryConfig
from engine.routing import RoutingConfig
from engine.verdicts import VerifyConfig

__all__ = ["MAX_ROUNDS", "ConflictPolicy", "EngineConfig"]

MAX_ROUNDS = 6

_ROUNDS = {Budget.LOW: 3, Budget.MID: 5, Budget.HIGH: MAX_ROUNDS}


class ConflictPolicy(enum.Enum):
    """What to do when two sources disagree about a clause."""

    BOTH = "both"
    """Emit both clauses, each with its own sources, marked as conflicting with each other."""
    MOST_RECENT = "most_recent"
    """Keep the clause whose source sentence changed most recently and drop the other."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Retrieval sizes, loop bounds and policies; budgets adjust rounds and verification from here."""

    first_k: int = 10
    hits_per_subquery: int = 5
    first_hold: int = 0
    """How many of a question's first retrieval (its search top `first_k`) its first round holds and rates,
    at least `hits_per_subquery` (0: that many); a comparison holds all of it. What is not held waits for a
    later round's subquery, which a one-hop question whose first round verified nothing may never run
    (`one_hop_patience`)."""
    max_evidence: int = 40
    max_rounds: int = MAX_ROUNDS
    conflict_policy: ConflictPolicy = ConflictPolicy.BOTH
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    """When a sentence the team accepted for an earlier question is offered again (`engine.memory`)."""
    store: bool = True
    section_units: int = 8
    """How many units of the best-rated sentence's section a first round holds and reads on their own
    (0: none); see `Rounds._read_section`."""
    one_hop_patience: int = 1
    """How many rounds a one-hop question may run while no clause of it is verified (0: as many as its
    budget allows); see `Rounds.loop`."""

    lookup_clauses: int = 1
    """How many verified clauses a one-hop lookup may answer with at once when its best candidates are rated
    within `lookup_margin` of each other (`engine.alternatives`); 1 bets on the best one."""
    lookup_margin: float = 0.1
    """How close to the best candidate's rating an alternative's must come (`close_alternatives`)."""

    spelling: bool = True
    """Read a question with its misspelt words replaced by the indexed words they were meant to be
    (`engine.search.spell_question`): search and the models then read "memory" where "memroy" was typed,
    and the answer says so (`Answer.read_as`, a note). False reads the question as typed (the lexical lane
    still corrects it)."""

    def rounds_for(self, budget: Budget) -> int:
        """The most rounds a question on `budget` may run: 3 on low, 5 on mid, `max_rounds` at most."""
        return min(self.max_rounds, _ROUNDS[budget])
