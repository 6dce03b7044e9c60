"""What a verdict does to the answer: an accepted clause joins it, a refused one joins the trace, and a
clause its own sources entail but another source contradicts is settled by the conflict policy.

Under `BOTH` the two clauses are emitted, each with its own sources, and marked as conflicting with each
other; under `MOST_RECENT` only the clause whose source changed last is kept, and the other is recorded as
rejected at the `conflict` stage.
"""

from __future__ import annotations

from datetime import datetime

from engine.answers import Answer, AnswerClause, RejectedClause, RoundTrace, Stage, Verification
from engine.config import ConflictPolicy
from engine.planning import Finding, PlannerState
from engine.search import Hit
from engine.verdicts import Conflict, Proposal, Verdict

__all__ = ["apply_verdict"]


def apply_verdict(
    verdict: Verdict, state: PlannerState, result: Answer, trace: RoundTrace, policy: ConflictPolicy
) -> None:
    """Accept `verdict`'s clause, settle its conflict, or record why it was refused."""
    if verdict.accepted:
        _accept(verdict, state, result, trace)
    elif verdict.conflict is not None and verdict.supports:
        _resolve(verdict, verdict.conflict, state, result, trace, policy)
    else:
        _reject(RejectedClause(verdict.proposal.clause, verdict.reason, verdict.stage), state, trace)


def _reject(rejected: RejectedClause, state: PlannerState, trace: RoundTrace) -> None:
    trace.rejected.append(rejected)
    state.rejected.append(rejected)


def _resolve(
    verdict: Verdict,
    conflict: Conflict,
    state: PlannerState,
    result: Answer,
    trace: RoundTrace,
    policy: ConflictPolicy,
) -> None:
    """A clause its own sources entail but another source (or accepted clause) contradicts."""
    rival_index = conflict.clause_index
    rival = conflict.hit
    if rival is None and rival_index is not None:
        sources = result.clauses[rival_index].sources
        rival = sources[0] if sources else None
    mine = verdict.supports[0]
    most_recent = policy is ConflictPolicy.MOST_RECENT
    if most_recent and rival is not None and _changed_at(state, rival) >= _changed_at(state, mine):
        reason = f"{verdict.reason} by a more recent source"
        _reject(RejectedClause(verdict.proposal.clause, reason, Stage.CONFLICT), state, trace)
        if rival_index is None:
            _accept(_verbatim(rival, conflict), state, result, trace)
        result.notes.append(f"sources disagree; kept {rival.path}, the more recently changed")
        return
    index = _accept(verdict, state, result, trace)
    if most_recent:
        if rival_index is not None:
            result.clauses[rival_index] = result.clauses.pop(index)
        result.notes.append(f"sources disagree; kept {mine.path}, the more recently changed")
        return
    if rival_index is None and rival is not None:
        rival_index = _accept(_verbatim(rival, conflict), state, result, trace)
    if rival_index is not None:
        result.clauses[index].conflicts_with.append(rival_index)
        result.clauses[rival_index].conflicts_with.append(index)
        result.notes.append(f"clauses {rival_index} and {index} cite sources that disagree")


def _accept(verdict: Verdict, state: PlannerState, result: Answer, trace: RoundTrace) -> int:
    """Emit the clause and hand it to the planner as a finding; returns its index in the answer."""
    clause = verdict.proposal.clause
    result.clauses.append(
        AnswerClause(
            clause,
            verdict.supports,
            verdict.confidence,
            verdict.proposal.need,
            verdict.verification,
            round=state.round,
        )
    )
    trace.accepted.append(clause)
    sources = verdict.supports
    finding = Finding(
        clause, tuple(h.sentence_id for h in sources), tuple(h.path for h in sources), state.round
    )
    state.accepted.append(finding)
    return len(result.clauses) - 1


def _changed_at(state: PlannerState, hit: Hit) -> datetime:
    context = state.pool.contexts.get(hit.sentence_id)
    return context.changed_at if context is not None and context.changed_at is not None else datetime.min


def _verbatim(hit: Hit, conflict: Conflict) -> Verdict:
    """The contradicting sentence as a clause of its own: its own text entails it, word for word."""
    p = conflict.probability
    scores = Verification(1.0, 0.0, 1.0, 1.0, p, (4.0 - p) / 5.0)
    return Verdict(Proposal(hit.text), None, "verbatim", [hit], scores, scores.composite)
