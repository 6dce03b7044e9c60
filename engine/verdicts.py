"""What verification reads and returns: a planned clause (`Proposal`), the thresholds (`VerifyConfig`), and
the outcome (`Verdict`, with the stage that refused it, and the `Conflict` when something contradicted it).

Planners write proposals and the controller reads verdicts; neither needs the verifier itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from engine.answers import Budget, ReferenceNeed, Stage, Verification
from engine.search import Hit

__all__ = ["Chooser", "Conflict", "Proposal", "Verdict", "VerifyConfig", "refusal"]


@dataclass(frozen=True, slots=True)
class VerifyConfig:
    """Thresholds and weights of the stages; `threshold` is the composite a clause needs (0.6 by default)."""

    threshold: float = 0.6
    entail_threshold: float = 0.5
    contradiction_threshold: float = 0.85
    coverage_threshold: float = 0.8
    weights: tuple[float, float, float, float, float] = (1.0, 1.0, 1.0, 1.0, 1.0)
    """Similarity, relevance, entailment, coverage, non-contradiction."""
    supports_per_clause: int = 4
    contradiction_candidates: int = 3
    related_cosine: float = 0.45
    """Only evidence at least this close to a clause is checked for contradicting it."""
    conflict_overlap: float = 0.6
    """...and only when it shares this share of the clause's key terms: NLI models trained on captions call
    two sentences about different subjects ("X is a 1998 film", "Y is a 2005 film") contradictory."""
    verbatim_shortcut: bool = True
    """A clause identical to its support is entailed without an NLI call, on every budget: identity is
    entailment, and the shipped NLI model calls some long sentences neutral to themselves."""
    stop_at_first_sufficient: bool = False
    """Keep only the first supports that meet the need (the low budget)."""
    min_relevance: float = 0.35
    """A clause whose best source the relevance model scores below this for the question is not emitted,
    however well its sources entail it: a true sentence that does not bear on the question is no answer.
    Without the model nothing gates here: a cosine is too weak a signal."""
    min_relevance_linked: float = 0.15
    """The relevance floor for a linked proposal. "As of 2010 the county population was 9,984" bears on "the
    lake is in a county of how many inhabitants?" only through the finding that puts the lake in the county,
    and the relevance model reads the question alone, so it scores such later hops low."""
    min_answer_check: float = 0.6
    """With an answer check (`engine.crossencoders.load_answer_check`), a clause whose best source it rates
    below this for the question (or the part the clause answers) is not emitted: the relevance model let a
    near miss through. Chosen on the tune repositories' questions in users' words for the shipped check
    (docs6w, which rates a reworded answer high and a question it does not answer low); a bridge's later hop
    (`min_relevance_linked`) is not checked, for the same reason as its lower floor."""
    max_sources: int = 1
    """Sources cited for a single-reference clause, strongest entailment first, on every budget: corroborating
    sources are where a small NLI model errs."""
    min_relevance_read: float = 0.35
    min_answer_check_read: float = 0.1
    """A unit a model reader chose (`Chooser.READER`) is refused for bearing too little on the question only
    when both models rate it low: the relevance model below `min_relevance_read` and the answer check below
    `min_answer_check_read` (without an answer check, the relevance floor alone). Entailment, coverage,
    contradiction and the composite judge it as any other clause."""
    min_relevance_declined: float = 0.35
    min_answer_check_declined: float = 0.1
    """The floors of a clause proposed in a round whose reader answered NONE (`Proposal.declined`): the
    relevance model's and the answer check's, each on its own, in place of `min_relevance` and
    `min_answer_check`. Higher floors make the reader's NONE count towards abstaining."""

    def floors(self, proposal: Proposal) -> tuple[float, float]:
        """The relevance floor and the answer check's floor that apply to `proposal`: a bridge's later hop
        has its own relevance floor; a reader's choice and a clause of a round the reader declined have
        theirs."""
        if proposal.declined:
            pair = (self.min_relevance_declined, self.min_answer_check_declined)
        elif proposal.chosen_by is Chooser.READER:
            pair = (self.min_relevance_read, self.min_answer_check_read)
        else:
            pair = (self.min_relevance, self.min_answer_check)
        return (self.min_relevance_linked, pair[1]) if proposal.linked else pair

    def for_budget(self, budget: Budget) -> VerifyConfig:
        """Low stops at the first sufficient support; high runs every stage on more candidates."""
        if budget is Budget.LOW:
            return replace(self, supports_per_clause=2, stop_at_first_sufficient=True)
        if budget is Budget.HIGH:
            return replace(self, supports_per_clause=8, stop_at_first_sufficient=False)
        return self


class Chooser(enum.Enum):
    """Who chose a proposed clause."""

    EXTRACTIVE = "extractive"
    READER = "reader"
    """A model reading the top-rated candidates named it (`engine.reader`)."""
    PLANNER = "llm planner"
    """A model planning in JSON wrote it (`engine.llm_planner`)."""


@dataclass(frozen=True, slots=True)
class Proposal:
    """A clause the planner wants to emit, how many references it needs, and the sources it had in mind."""

    clause: str
    need: ReferenceNeed = ReferenceNeed.SINGLE
    support_ids: tuple[int, ...] = ()
    linked: bool = False
    """Its document was reached through a finding that names it (a bridge's later hop), so the question
    alone does not say what makes it relevant, and `min_relevance_linked` applies."""
    asks: str = ""
    """The part of a two-part question this clause answers ("...and on which path will it receive them?"):
    its sources may bear on that part more than on the whole question."""
    chosen_by: Chooser = Chooser.EXTRACTIVE
    declined: bool = False
    """A model reader read this round's candidates and answered NONE (the extractive planner chose the clause
    anyway), or chose it while doubting (`LLMConfig.none_doubt`): the floors for a declined round apply
    (`VerifyConfig.min_relevance_declined`), each on its own."""


@dataclass(frozen=True, slots=True)
class Conflict:
    """What contradicted a clause: an evidence sentence, or an accepted clause (by its index)."""

    probability: float
    hit: Hit | None = None
    clause_index: int | None = None


@dataclass(slots=True)
class Verdict:
    """The outcome for one proposal; `supports` are the entailing sources when accepted."""

    proposal: Proposal
    stage: Stage | None
    """The stage that refused the clause; None when it passed every stage."""
    reason: str
    supports: list[Hit] = field(default_factory=list)
    verification: Verification = field(default_factory=Verification)
    confidence: float = 0.0
    conflict: Conflict | None = None
    candidate: Hit | None = None
    """For a refused clause: the source it came closest with (an answer's `nearest` shows it)."""
    measure: str | None = None
    """For a refused clause: the score that refused it (`entailment`, `coverage`, `contradiction`,
    `relevance`, `answer_check`, `composite`), with its value (`score`) and the threshold it missed."""
    score: float | None = None
    threshold: float | None = None

    @property
    def accepted(self) -> bool:
        """Whether the clause passed every stage and may be emitted."""
        return self.stage is None


def refusal(
    proposal: Proposal,
    stage: Stage,
    reason: str,
    candidate: Hit | None,
    score: float | None = None,
    threshold: float | None = None,
    measure: str | None = None,
) -> Verdict:
    """A refusal naming the source the clause came closest with, and the score that refused it (`measure`,
    by default the stage's own; none without a score) against its threshold."""
    named = measure or (stage.value if score is not None else None)
    return Verdict(
        proposal, stage, reason, candidate=candidate, measure=named, score=score, threshold=threshold
    )
