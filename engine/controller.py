"""The answer engine: routing, the FastPath, the IRCoT loop (ReasonPath), conflicts, and the answer store.

The loop interleaves retrieval with planning: retrieve for the current queries (both lanes, de-duplicated
against the evidence held, capped per subquery and in total), let the planner propose a clause and the next
subquery, verify, and repeat until the planner is done, coverage is met, or six rounds have run. A subquery
that fails or brings nothing new is broadened once and then recorded as a failed search, which the planner
sees; it never sinks the round. When verification refuses every pick of a round, the planner is asked again
what to search, so the next subquery does not follow a refused lead. Verification is the controller's, so no
planner can emit an unverified clause.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from psycopg_pool import ConnectionPool

from engine.answers import (
    Answer,
    AnswerClause,
    Budget,
    ReferenceNeed,
    RejectedClause,
    RoundTrace,
    Route,
    Status,
    Verification,
)
from engine.crossencoders import EntailmentModel, RelevanceModel
from engine.evidence import EvidencePool, cite_companions, fetch_contexts
from engine.planners import ExtractivePlanner, FailedSearch, Finding, Planner, PlannerError, PlannerState
from engine.routing import RoutingConfig, content_terms, question_parts, route
from engine.search import Filters, Hit, Search
from engine.verify import Conflict, Proposal, Verdict, Verifier, VerifyConfig
from indexer.answers import SourceState, find_answer, load_answer, save_answer
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel

__all__ = ["MAX_ROUNDS", "AnswerEngine", "ConflictPolicy", "EngineConfig", "answer"]

MAX_ROUNDS = 6


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
    max_evidence: int = 40
    max_rounds: int = MAX_ROUNDS
    conflict_policy: ConflictPolicy = ConflictPolicy.BOTH
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    store: bool = True


_ROUNDS = {Budget.LOW: 3, Budget.MID: 5, Budget.HIGH: MAX_ROUNDS}


@contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = timings.get(key, 0.0) + 1000 * (time.perf_counter() - started)


class AnswerEngine:
    """Answers questions over one citeline database; models are injected, one instance per process."""

    __slots__ = (
        "_config",
        "_database",
        "_embedder",
        "_entailment",
        "_planner",
        "_pool",
        "_relevance",
        "_retriever",
    )

    def __init__(
        self,
        database: Database,
        retriever: Search,
        embedder: EmbeddingModel | None,
        *,
        entailment: EntailmentModel | None,
        relevance: RelevanceModel | None = None,
        planner: Planner | None = None,
        config: EngineConfig | None = None,
        pool: ConnectionPool[Connection] | None = None,
    ) -> None:
        """`pool` (the retriever's, shared) serves the engine's own queries; without it each opens a
        connection of its own on `database`."""
        self._database = database
        self._pool = pool
        self._retriever = retriever
        self._embedder = embedder
        self._entailment = entailment
        self._relevance = relevance
        self._planner: Planner = planner or ExtractivePlanner()
        self._config = config or EngineConfig()

    def _connect(self) -> AbstractContextManager[Connection]:
        return self._database.connect() if self._pool is None else self._pool.connection()

    def answer(
        self,
        question: str,
        budget: Budget = Budget.MID,
        filters: Filters | None = None,
        *,
        use_store: bool = True,
    ) -> Answer:
        """Answer `question`; a stored answer whose cited sentences are all unchanged is served as is."""
        started = time.perf_counter()
        filters = filters or Filters()
        key = {"repositories": list(filters.repositories or []), "path_prefix": filters.path_prefix}
        store = self._config.store and use_store
        notes: list[str] = []
        if store:
            with self._connect() as conn:
                stored_id = find_answer(conn, question, key)
                stored = load_answer(conn, stored_id) if stored_id else None
            if stored is not None and stored.fresh:
                return Answer.from_stored(stored.to_dict())
            if stored is not None:
                stale = sum(1 for c in stored.clauses for s in c.sources if s.state is not SourceState.LIVE)
                notes.append(f"stored answer {stored.id} had {stale} changed or deleted source(s)")
                if budget is Budget.HIGH:
                    reverified = self._reverify(stored.to_dict(), filters, notes)
                    if reverified is not None:
                        return self._finish(reverified, store, started)
                notes.append("recomputed")
        if budget is Budget.HIGH and self._entailment is None:
            result = Answer(
                question, Status.FAIL, Route.FAST, budget, reason="the high budget needs the entailment model"
            )
        else:
            try:
                result = self._compute(question, budget, filters)
            except Exception as exc:  # a model or the database failed: say so, never guess
                result = Answer(
                    question, Status.FAIL, Route.FAST, budget, reason=f"{type(exc).__name__}: {exc}"
                )
        result.filters = key
        result.notes = notes + result.notes
        return self._finish(result, store and result.status is not Status.FAIL, started)

    def _finish(self, result: Answer, store: bool, started: float) -> Answer:
        result.timings_ms["total"] = 1000 * (time.perf_counter() - started)
        if store:
            with self._connect() as conn:
                result.id = save_answer(conn, result.to_dict())
        return result

    def _reverify(self, body: dict[str, Any], filters: Filters, notes: list[str]) -> Answer | None:
        """High budget: verify each stored clause again against the index as it is now; None if any fails."""
        if self._entailment is None or not body.get("clauses"):
            return None
        config = self._config
        proposals = [Proposal(c["clause"], ReferenceNeed(c.get("need", "single"))) for c in body["clauses"]]
        pool = EvidencePool(self._embedder, config.max_evidence)
        found = [self._search(p.clause, config.hits_per_subquery, filters) for p in proposals]
        with self._connect() as conn:
            pool.contexts.update(fetch_contexts(conn, [h.sentence_id for hits in found for h in hits]))
        for hits in found:
            pool.add(hits, 1, config.hits_per_subquery)
        verifier = Verifier(self._entailment, self._relevance, config.verify.for_budget(Budget.HIGH))
        verdicts = verifier.verify(body["question"], proposals, pool)
        if not all(v.accepted for v in verdicts):
            return None
        result = Answer(
            body["question"], Status.ANSWER, Route(body["route"]), Budget.HIGH, filters=body["filters"]
        )
        result.clauses = [
            AnswerClause(v.proposal.clause, v.supports, v.confidence, v.proposal.need, v.verification)
            for v in verdicts
        ]
        result.notes = [*notes, "re-verified every clause against the current sources"]
        return result

    def _search(self, query: str, k: int, filters: Filters) -> list[Hit]:
        return self._retriever.search(query, k, filters=filters)

    def _compute(self, question: str, budget: Budget, filters: Filters) -> Answer:
        config = self._config
        verifier = Verifier(self._entailment, self._relevance, config.verify.for_budget(budget))
        pool = EvidencePool(self._embedder, config.max_evidence)
        started = time.perf_counter()
        first = self._search(question, config.first_k, filters)
        ms = 1000 * (time.perf_counter() - started)
        decision = route(question, first, config.routing)
        result = Answer(question, Status.INSUFFICIENT, decision.route, budget)
        result.notes.append(f"route {decision.route.value}: " + "; ".join(decision.reasons))
        result.notes.append(f"planner {self._planner.name}")
        state = PlannerState(
            question, decision.shape, pool, max_rounds=min(config.max_rounds, _ROUNDS[budget])
        )
        state.parts = question_parts(question)
        if decision.route is Route.FAST:
            state.shape = replace(state.shape, comparison=False, bridge=False)
            self._round(state, verifier, result, [question], first, final=True, retrieve_ms=ms)
        else:
            self._loop(state, verifier, result, first, filters, ms)
        if result.clauses:
            result.status = Status.ANSWER
        else:
            result.reason = "no clause could be verified against the indexed sources"
        return result

    def _loop(
        self,
        state: PlannerState,
        verifier: Verifier,
        result: Answer,
        first: list[Hit],
        filters: Filters,
        ms: float,
    ) -> None:
        queries, hits = [state.question], first
        for number in range(1, state.max_rounds + 1):
            state.round = number
            final = number == state.max_rounds
            going_on, next_queries = self._round(
                state, verifier, result, queries, hits, final=final, retrieve_ms=ms
            )
            if not going_on or final:
                return
            started = time.perf_counter()
            queries, hits = next_queries, self._gather(state, next_queries, filters)
            ms = 1000 * (time.perf_counter() - started)

    def _gather(self, state: PlannerState, queries: list[str], filters: Filters) -> list[Hit]:
        """Run each subquery (broadened once when it finds nothing new); failures are recorded, not raised."""
        found: list[Hit] = []
        cap = self._config.hits_per_subquery
        for query in queries[:3]:
            attempts = [query, " ".join(content_terms(query)[:6])]
            for attempt in dict.fromkeys(a for a in attempts if a):
                state.queries_run.append(attempt)
                try:
                    hits = self._search(attempt, cap * 3, filters)
                except Exception as exc:  # one failing subquery does not sink the round
                    state.failed.append(FailedSearch(attempt, f"search failed: {exc}", state.round + 1))
                    continue
                held = set(state.pool.hits) | {h.sentence_id for h in found}
                if any(h.sentence_id not in held for h in hits):
                    found += [h for h in hits if h.sentence_id not in {f.sentence_id for f in found}]
                    break
                state.failed.append(FailedSearch(attempt, "no new evidence", state.round + 1))
        return found

    def _round(
        self,
        state: PlannerState,
        verifier: Verifier,
        result: Answer,
        queries: list[str],
        hits: list[Hit],
        *,
        final: bool,
        retrieve_ms: float,
    ) -> tuple[bool, list[str]]:
        """One round: hold the new evidence, plan, verify; returns whether to go on and the next queries."""
        trace = RoundTrace(state.round, list(queries), timings_ms={"retrieve": retrieve_ms})
        if state.round == 1:
            state.queries_run.extend(queries)
        with self._connect() as conn:
            unseen = [h.sentence_id for h in hits if h.sentence_id not in state.pool.contexts]
            state.pool.contexts.update(fetch_contexts(conn, unseen))
        limit = self._config.hits_per_subquery * max(1, len(queries))
        if state.round == 1 and state.shape.comparison:
            # A comparison's own retrieval most often holds both its documents: all of it is kept.
            limit = self._config.first_k
        new = state.pool.add(hits, state.round, limit)
        trace.new_evidence = [h.sentence_id for h in new]
        # The planner reads this round's ranking, including evidence an earlier round already held.
        state.latest = [h for h in hits if h.sentence_id in state.pool.hits]
        if self._relevance is not None:
            with _timed(trace.timings_ms, "rate"):
                parts = () if state.accepted else state.parts  # a part is answered by a first hop
                for query in dict.fromkeys([state.question, *parts]):
                    state.pool.rate(query, self._relevance, state.latest)
        plan = None
        with _timed(trace.timings_ms, "plan"):
            try:
                plan = self._planner.plan(state, final=final)
            except PlannerError as exc:
                trace.planner_error = str(exc)
        if plan is not None:
            with _timed(trace.timings_ms, "verify"):
                accepted = [c.clause for c in result.clauses]
                verdicts = verifier.verify(state.question, plan.proposals, state.pool, accepted)
            for verdict in verdicts:
                self._apply(verdict, state, result, trace)
            cited = [src for c in result.clauses if c.round == state.round for src in c.sources]
            if cited:  # their sections' leads join the evidence, each listed after its citation
                with self._connect() as conn:
                    cite_companions(conn, state.pool, [c for c in result.clauses if c.round == state.round])
                    trace.new_evidence = state.pool.hold_leads(conn, cited, state.round, trace.new_evidence)
            if plan.proposals and not trace.accepted and not plan.done:
                # Every pick was refused: its subquery would follow a lead the answer does not hold, so
                # the planner, now seeing the refusals, says again what to search next.
                with _timed(trace.timings_ms, "plan"):
                    try:
                        plan.queries = self._planner.plan(state, final=final).queries
                    except PlannerError as exc:
                        trace.planner_error = str(exc)
        trace.failed_searches = [
            {"query": f.query, "reason": f.reason} for f in state.failed if f.round == state.round
        ]
        result.trace.append(trace)
        if plan is None:
            return True, []  # a failed round: the planner gets the next round, with nothing new retrieved
        if plan.done or state.coverage_met():
            return False, []
        next_queries = [q for q in plan.queries[:3] if state.is_new_query(q)]
        return bool(next_queries), next_queries

    def _apply(self, verdict: Verdict, state: PlannerState, result: Answer, trace: RoundTrace) -> None:
        if verdict.accepted:
            self._accept(verdict, state, result, trace)
        elif verdict.conflict is not None and verdict.supports:
            self._resolve(verdict, verdict.conflict, state, result, trace)
        else:
            rejected = RejectedClause(verdict.proposal.clause, verdict.reason)
            trace.rejected.append(rejected)
            state.rejected.append(rejected)

    def _resolve(
        self, verdict: Verdict, conflict: Conflict, state: PlannerState, result: Answer, trace: RoundTrace
    ) -> None:
        """A clause its own sources entail but another source (or accepted clause) contradicts."""
        rival_index = conflict.clause_index
        rival = conflict.hit
        if rival is None and rival_index is not None:
            sources = result.clauses[rival_index].sources
            rival = sources[0] if sources else None
        mine = verdict.supports[0]
        most_recent = self._config.conflict_policy is ConflictPolicy.MOST_RECENT
        if (
            most_recent
            and rival is not None
            and self._changed_at(state, rival) >= self._changed_at(state, mine)
        ):
            rejected = RejectedClause(verdict.proposal.clause, f"{verdict.reason} by a more recent source")
            trace.rejected.append(rejected)
            state.rejected.append(rejected)
            if rival_index is None:
                self._accept(_verbatim(rival, conflict), state, result, trace)
            result.notes.append(f"sources disagree; kept {rival.path}, the more recently changed")
            return
        index = self._accept(verdict, state, result, trace)
        if most_recent:
            if rival_index is not None:
                result.clauses[rival_index] = result.clauses.pop(index)
            result.notes.append(f"sources disagree; kept {mine.path}, the more recently changed")
            return
        if rival_index is None and rival is not None:
            rival_index = self._accept(_verbatim(rival, conflict), state, result, trace)
        if rival_index is not None:
            result.clauses[index].conflicts_with.append(rival_index)
            result.clauses[rival_index].conflicts_with.append(index)
            result.notes.append(f"clauses {rival_index} and {index} cite sources that disagree")

    def _accept(self, verdict: Verdict, state: PlannerState, result: Answer, trace: RoundTrace) -> int:
        result.clauses.append(
            AnswerClause(
                verdict.proposal.clause,
                verdict.supports,
                verdict.confidence,
                verdict.proposal.need,
                verdict.verification,
                round=state.round,
            )
        )
        trace.accepted.append(verdict.proposal.clause)
        state.accepted.append(
            Finding(
                verdict.proposal.clause,
                tuple(h.sentence_id for h in verdict.supports),
                tuple(h.path for h in verdict.supports),
                state.round,
            )
        )
        return len(result.clauses) - 1

    @staticmethod
    def _changed_at(state: PlannerState, hit: Hit) -> datetime:
        context = state.pool.contexts.get(hit.sentence_id)
        return context.changed_at if context is not None and context.changed_at is not None else datetime.min


def _verbatim(hit: Hit, conflict: Conflict) -> Verdict:
    """The contradicting sentence as a clause of its own: its own text entails it, word for word."""
    p = conflict.probability
    scores = Verification(1.0, 0.0, 1.0, 1.0, p, (4.0 - p) / 5.0)
    return Verdict(Proposal(hit.text), True, "verbatim", [hit], scores, scores.composite)


def answer(
    question: str,
    budget: Budget | str = Budget.MID,
    filters: Filters | None = None,
    *,
    engine: AnswerEngine,
    use_store: bool = True,
) -> Answer:
    """Entry point for `citeline ask` and the API; `budget` is a Budget or "low", "mid", "high"."""
    return engine.answer(question, Budget(budget), filters, use_store=use_store)
