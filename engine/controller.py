"""The answer engine: the answer store, routing, and the rounds that answer a question.

A question is answered from the store while nothing in the index changed since its stored answer was
computed (the index generation, `indexer.generation`), so a stored answer never hides a sentence added or
edited since; otherwise it is routed (`engine.routing`) and answered by the FastPath or the IRCoT loop
(`engine.rounds`), whose every clause is verified before it is emitted. A round another planner (an LLM's)
fails, or whose every clause an LLM planner or reader chose was refused while the answer holds none, is
planned by the extractive planner. A model's planner with a rewriter (`LLMConfig.variants`) writes the
question's variants for a first round that verified nothing, within the same budget as its other calls.
An engine error is an answer with status `fail` and its reason, never a guess.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace

from psycopg_pool import ConnectionPool

from engine.answers import Answer, AnswerClause, Budget, Route, SourceState, Status
from engine.caveats import caveats, replace_caveats
from engine.config import MAX_ROUNDS, ConflictPolicy, EngineConfig
from engine.contexts import fetch_contexts
from engine.crossencoders import EntailmentModel, RelevanceModel
from engine.evidence import EvidencePool
from engine.llm_planner import LLMPlanner
from engine.memory import RememberedAnswers, add_remembered, rater, recall
from engine.nearest import closest, with_context
from engine.planners import ExtractivePlanner
from engine.planning import Planner, PlannerState
from engine.rounds import RewriteFn, Rounds
from engine.routing import question_parts, route
from engine.search import Filters, Hit, Search, Spelling, spell_question
from engine.store import count_serving, find_answer, load_answer, save_answer
from engine.verdicts import Proposal
from engine.verify import Verifier
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from indexer.generation import index_generation

__all__ = ["MAX_ROUNDS", "AnswerEngine", "ConflictPolicy", "EngineConfig", "answer"]


class AnswerEngine:
    """Answers questions over one citeline database; models are injected, one instance per process."""

    __slots__ = (
        "_check",
        "_compare_disk",
        "_config",
        "_database",
        "_embedder",
        "_entailment",
        "_match",
        "_memory",
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
        answer_check: RelevanceModel | None = None,
        compare_disk: bool = False,
        memory: RememberedAnswers | None = None,
        question_match: RelevanceModel | None = None,
    ) -> None:
        """`pool` (the retriever's, shared) serves the engine's own queries; without it each opens a
        connection of its own on `database`. `answer_check` is the verifier's second reading of a clause's
        sources (`VerifyConfig.min_answer_check`). `compare_disk` (set where no watcher keeps the index
        current) warns of indexed files changed on disk since (`engine.caveats`). `memory` holds the
        sentences the team accepted for earlier questions (`engine.memory`); None: none is offered.
        `question_match` reads whether a new question asks what an accepted one asked (`engine.memory`);
        None: the embedder's cosine decides."""
        self._database = database
        self._pool = pool
        self._retriever = retriever
        self._embedder = embedder
        self._entailment = entailment
        self._relevance = relevance
        self._config = config or EngineConfig()
        self._planner: Planner = planner or ExtractivePlanner(
            lookup_clauses=self._config.lookup_clauses, lookup_margin=self._config.lookup_margin
        )
        self._check = answer_check
        self._compare_disk = compare_disk
        self._memory = memory
        self._match = question_match

    @property
    def answer_check(self) -> RelevanceModel | None:
        """The verifier's answer check (`VerifyConfig.min_answer_check`); None when answers go without one."""
        return self._check

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
        """Answer `question`; a stored answer computed at the current index generation is served as is (its
        cited sentences are then unchanged too)."""
        started = time.perf_counter()
        filters = filters or Filters()
        key = {"repositories": list(filters.repositories or []), "path_prefix": filters.path_prefix}
        store = self._config.store and use_store
        notes: list[str] = []
        generation: int | None = None
        if store:
            with self._connect() as conn:
                generation = index_generation(conn)  # before any read of the index
                stored_id = find_answer(conn, question, key)
                stored = load_answer(conn, stored_id) if stored_id else None
                served = stored is not None and stored.fresh and stored.generation == generation
                if served:
                    assert stored is not None and stored.id is not None
                    count_serving(conn, stored.id)
            if served:
                assert stored is not None
                stored.cached = True
                self._warn(stored, filters)
                return stored
            if stored is not None and stored.fresh:
                notes.append(f"the index changed since stored answer {stored.id}: recomputed")
            elif stored is not None:
                checks = [s for c in stored.clauses for s in c.checks]
                stale = sum(1 for s in checks if s.state is not SourceState.LIVE)
                notes.append(f"stored answer {stored.id} had {stale} changed or deleted source(s)")
                if budget is Budget.HIGH:
                    reverified = self._reverify(stored, filters, notes)
                    if reverified is not None:
                        reverified.generation = generation
                        self._warn(reverified, filters)
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
        result.generation = generation
        if result.status is not Status.FAIL:
            self._warn(result, filters)
        return self._finish(result, store and result.status is not Status.FAIL, started)

    def _warn(self, result: Answer, filters: Filters) -> None:
        """Replace the answer's warnings with the index's state now (`engine.caveats`); a warning that
        cannot be read is left out rather than failing the answer."""
        try:
            with self._connect() as conn:
                fresh = caveats(conn, filters, compare_disk=self._compare_disk)
        except Exception:  # a warning is advice, never a reason to fail an answer
            fresh = []
        result.notes = replace_caveats(result.notes, fresh)

    def _finish(self, result: Answer, store: bool, started: float) -> Answer:
        result.timings_ms["total"] = 1000 * (time.perf_counter() - started)
        if store:
            with self._connect() as conn:
                result.id = save_answer(conn, result)
        return result

    def _reverify(self, stored: Answer, filters: Filters, notes: list[str]) -> Answer | None:
        """High budget: verify each stored clause again against the index as it is now; None if any fails."""
        if self._entailment is None or not stored.clauses:
            return None
        config = self._config
        proposals = [Proposal(c.clause, c.need) for c in stored.clauses]
        pool = EvidencePool(self._embedder, config.max_evidence)
        found = [self._search(p.clause, config.hits_per_subquery, filters) for p in proposals]
        with self._connect() as conn:
            pool.contexts.update(fetch_contexts(conn, [h.sentence_id for hits in found for h in hits]))
        for hits in found:
            pool.add(hits, 1, config.hits_per_subquery)
        verify = config.verify.for_budget(Budget.HIGH)
        verifier = Verifier(self._entailment, self._relevance, verify, self._check)
        verdicts = verifier.verify(self._spelled(stored.question, filters).text, proposals, pool)
        if not all(v.accepted for v in verdicts):
            return None
        result = Answer(stored.question, Status.ANSWER, stored.route, Budget.HIGH, filters=stored.filters)
        result.clauses = [
            AnswerClause(v.proposal.clause, v.supports, v.confidence, v.proposal.need, v.verification)
            for v in verdicts
        ]
        result.notes = [*notes, "re-verified every clause against the current sources"]
        return result

    def _search(self, query: str, k: int, filters: Filters) -> list[Hit]:
        return self._retriever.search(query, k, filters=filters)

    def _spelled(self, question: str, filters: Filters) -> Spelling:
        """The question as search and the models read it (`EngineConfig.spelling`), corrected only to the
        words of the repositories `filters` allows (a scoped key's): nothing of another one shows."""
        if not self._config.spelling:
            return Spelling(question)
        with self._connect() as conn:
            return spell_question(conn, question, repositories=filters.repositories)

    def _compute(self, question: str, budget: Budget, filters: Filters) -> Answer:
        """Route the question on its first retrieval, then run the FastPath or the loop; both read the
        question with its typos corrected (`spell_question`), and the answer keeps it as asked."""
        config = self._config
        begun = time.monotonic()
        started = time.perf_counter()
        spelling = self._spelled(question, filters)
        asked = spelling.text
        first = self._search(asked, config.first_k, filters)
        ms = 1000 * (time.perf_counter() - started)
        decision = route(asked, first, config.routing)
        result = Answer(question, Status.INSUFFICIENT, decision.route, budget)
        if (note := spelling.note()) is not None:
            result.read_as = asked
            result.notes.append(note)
        result.notes.append(f"route {decision.route.value}: " + "; ".join(decision.reasons))
        result.notes.append(f"planner {self._planner.name}")
        pool = EvidencePool(self._embedder, config.max_evidence)
        state = PlannerState(asked, decision.shape, pool, max_rounds=config.rounds_for(budget), started=begun)
        state.parts = question_parts(asked)
        verifier = Verifier(self._entailment, self._relevance, config.verify.for_budget(budget), self._check)
        rounds = Rounds(
            self._connect,
            self._planner,
            self._relevance,
            config,
            verifier,
            lambda query, k: self._search(query, k, filters),
            None if isinstance(self._planner, ExtractivePlanner) else ExtractivePlanner(),
            rescue=isinstance(self._planner, LLMPlanner),
            rewrite=_rewrite_of(self._planner),
        )
        if decision.route is Route.FAST:
            state.shape = replace(state.shape, comparison=False, bridge=False)
            rounds.fast(state, result, first, ms)
        else:
            rounds.loop(state, result, first, ms)
        if self._memory is not None:
            self._remembered(asked, result, pool, filters, verifier)
        if result.clauses:
            result.status = Status.ANSWER
            result.nearest = []
        else:
            result.reason = "no clause could be verified against the indexed sources"
            floor = config.verify.min_relevance
            shown = {i for t in result.trace if t.reading for i in t.reading.get("shown", [])}
            nearest = closest(result.nearest, pool, asked, first, self._relevance, floor, shown=shown)
            with self._connect() as conn:
                result.nearest = with_context(conn, pool, nearest)
        return result

    def _remembered(
        self, asked: str, result: Answer, pool: EvidencePool, filters: Filters, verifier: Verifier
    ) -> None:
        """Verify the sentences the team accepted for a question close to this one (`engine.memory`)."""
        assert self._memory is not None
        vector = pool.vectors([asked])[0].tolist() if self._embedder is not None else None
        rate = rater(self._connect, pool, self._relevance) if self._relevance is not None else None
        offered = recall(self._memory, asked, vector, filters, self._config.memory, self._match, rate)
        add_remembered(result, asked, offered, pool, verifier, self._connect, self._relevance, self._check)


def _rewrite_of(planner: Planner) -> RewriteFn | None:
    """The rounds' rewrite: the model planner's rewriter, within the planner's budget for the answer."""
    if not isinstance(planner, LLMPlanner) or planner.rewriter is None:
        return None
    rewriter = planner.rewriter

    def rewrite(state: PlannerState, hints: Sequence[str]) -> list[str]:
        return rewriter.rewrite(state.question, hints, planner.deadline(state))

    return rewrite


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
