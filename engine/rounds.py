"""The rounds of one question: the FastPath is one round, the IRCoT loop (ReasonPath) several.

The loop interleaves retrieval with planning: retrieve for the current queries (both lanes, de-duplicated
against the evidence held, capped per subquery and in total), let the planner propose a clause and the next
subquery, verify, and repeat until the planner is done, coverage is met, or the budget's rounds have run. A
round the planner fails (a model's endpoint down or out of time, its output malformed) is planned by the
fallback planner (the extractive one, when the configured planner is another), and so, for an LLM planner, is
a round whose every proposed clause verification refused while the answer holds none; the trace says so. A
subquery that fails or brings nothing new is broadened once and then recorded as a failed search, which the
planner sees; it never sinks the round. When verification refuses every pick of a round, the planner is asked
again what to search, so the next subquery does not follow a refused lead. Verification is run here, never by
a planner, so no planner can emit an unverified clause.

With a rewriter (`LLMConfig.variants`), a first round that verifies nothing is followed by one over the
question's variants: each is searched on both lanes, and the new hits are merged after the first round's,
which keep their slots (a variant's exact and vector hits before its typo and prefix ones); the round reads
the best section again. Each round's trace names who chose each accepted clause and what a reader said.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from engine.answers import Answer, RoundTrace
from engine.config import EngineConfig
from engine.conflicts import apply_verdict
from engine.contexts import cite_companions, fetch_contexts
from engine.crossencoders import RelevanceModel
from engine.nearest import refused_passage
from engine.planning import FailedSearch, Plan, Planner, PlannerError, PlannerState
from engine.search import Hit
from engine.verdicts import Chooser
from engine.verify import Verifier
from engine.words import content_terms
from indexer.database import Connection

__all__ = ["RewriteFn", "Rounds", "SearchFn"]

SearchFn = Callable[[str, int], list[Hit]]
"""A search under the question's filters: the query and how many hits."""
RewriteFn = Callable[[PlannerState, Sequence[str]], list[str]]
"""The question's variants, given the loop state and the headings the first search reached; raises
`PlannerError` when the model cannot write them."""
_STAGES = {None: 0, "exact": 0, "typo": 1, "prefix": 2}


@contextmanager
def _timed(timings: dict[str, float], key: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[key] = timings.get(key, 0.0) + 1000 * (time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class Rounds:
    """Runs the rounds of one question into `result`, with one verifier and one search for all of them."""

    connect: Callable[[], AbstractContextManager[Connection]]
    """Where the rounds' own queries get a connection (the engine's shared pool, or a new one)."""
    planner: Planner
    relevance: RelevanceModel | None
    config: EngineConfig
    verifier: Verifier
    search: SearchFn
    fallback: Planner | None = None
    """Plans a round the planner failed (its error and this planner's name go into the round's trace)."""
    rescue: bool = False
    """The fallback also plans a round whose every clause a model chose was refused while the answer holds
    none (set for a model's planner: a small model's picks must not cost the answer the fallback's)."""
    rewrite: RewriteFn | None = None
    """Writes the question's variants for a first round that verified nothing (none: no variants)."""

    def fast(self, state: PlannerState, result: Answer, first: list[Hit], ms: float) -> None:
        """The FastPath: one final round over the first retrieval (and one over the variants, if any)."""
        self.round(state, result, [state.question], first, final=True, retrieve_ms=ms)
        varied = self._variants(state, result, first)
        if varied is not None:
            state.round = 2
            self.round(state, result, varied[0], varied[1], final=True, retrieve_ms=varied[2], reread=True)

    def loop(self, state: PlannerState, result: Answer, first: list[Hit], ms: float) -> None:
        """The ReasonPath: rounds until the planner is done, coverage is met, or `state.max_rounds` ran.

        A one-hop question stops once `EngineConfig.one_hop_patience` rounds have verified none of its
        clauses: its own retrieval, read sentence by sentence and section by section, held what answers it
        if anything indexed does, and a later round's subquery only reaches further from the question, to
        near misses that cost an answer its precision and the reader the wait.
        """
        queries, hits = [state.question], first
        patience = self.config.one_hop_patience
        reread = False
        for number in range(1, state.max_rounds + 1):
            state.round = number
            final = number == state.max_rounds
            going_on, next_queries = self.round(
                state, result, queries, hits, final=final, retrieve_ms=ms, reread=reread
            )
            varied = self._variants(state, result, first) if number == 1 and not final else None
            if varied is not None:  # the variants' round replaces whatever the planner asked next
                queries, hits, ms = varied
                reread = True
                continue
            reread = False
            if not going_on or final:
                return
            if state.shape.hops == 1 and not result.clauses and 0 < patience <= number:
                result.notes.append(
                    f"a one-hop question with no verified clause after {number} round(s): stopped"
                )
                return
            started = time.perf_counter()
            queries, hits = next_queries, self._gather(state, next_queries)
            ms = 1000 * (time.perf_counter() - started)

    def round(
        self,
        state: PlannerState,
        result: Answer,
        queries: list[str],
        hits: list[Hit],
        *,
        final: bool,
        retrieve_ms: float,
        reread: bool = False,
    ) -> tuple[bool, list[str]]:
        """One round: hold the new evidence, plan, verify; returns whether to go on and the next queries.
        `reread` reads the best section again, as a first round does (the variants' round)."""
        trace = RoundTrace(state.round, list(queries), timings_ms={"retrieve": retrieve_ms})
        if state.round == 1:
            state.queries_run.extend(queries)
        self._hold(state, queries, hits, trace)
        self._rate(state, trace, reread)
        plan = self._plan(state, trace, final=final)
        if plan is not None:
            trace.reading = plan.reading
            self._verify(state, result, plan, trace)
            plan = self._rescue(state, result, plan, trace, final=final)
            if plan.proposals and not trace.accepted and not plan.done:
                # Every pick was refused: its subquery would follow a lead the answer does not hold, so
                # the planner, now seeing the refusals, says again what to search next.
                # A reader's searches are the extractive planner's: asked of it, without a model call.
                again = self._replan(state, trace, final=final, read=plan.reading is not None)
                if again is not None:
                    plan.queries = again.queries
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

    def _hold(self, state: PlannerState, queries: list[str], hits: list[Hit], trace: RoundTrace) -> None:
        """Fetch the contexts of this round's hits and hold the new ones, capped per subquery."""
        with self.connect() as conn:
            unseen = [h.sentence_id for h in hits if h.sentence_id not in state.pool.contexts]
            state.pool.contexts.update(fetch_contexts(conn, unseen))
            hits = state.pool.in_place_of_headings(conn, hits)
        limit = self.config.hits_per_subquery * max(1, len(queries))
        if state.round == 1:
            # A comparison's own retrieval most often holds both its documents: all of it is kept.
            limit = self.config.first_k if state.shape.comparison else max(limit, self.config.first_hold)
        new = state.pool.add(hits, state.round, limit)
        trace.new_evidence = [h.sentence_id for h in new]
        # The planner reads this round's ranking, including evidence an earlier round already held.
        state.latest = [h for h in hits if h.sentence_id in state.pool.hits]

    def _rate(self, state: PlannerState, trace: RoundTrace, reread: bool = False) -> None:
        """Rate this round's ranking for the question (and, before a first finding, for each of its parts)."""
        if self.relevance is None:
            return
        with _timed(trace.timings_ms, "rate"):
            parts = () if state.accepted else state.parts  # a part is answered by a first hop
            for query in dict.fromkeys([state.question, *parts]):
                state.pool.rate(query, self.relevance, state.latest)
            if (state.round == 1 or reread) and state.shape.hops == 1 and self.config.section_units > 0:
                self._read_section(state)

    def _read_section(self, state: PlannerState) -> None:
        """Hold the section of the best-rated sentence and rate each of its units on its own too (a one-hop
        question's first round: a multi-hop question's first hop seeks what names the next one, which need
        not answer anything on its own).

        The best-rated sentence marks the section that answers (its heading often restates the question),
        but not which of its sentences does: a premise ("The build cache can grow large.") rates as high
        under that heading as the sentence it introduces. The planner chooses within the section by how
        well each unit answers read on its own (`EvidencePool.rate_own`).
        """
        assert self.relevance is not None
        rated = state.pool.ratings.get(state.question, {})
        best = max(state.latest, key=lambda h: rated.get(h.sentence_id, 0.0), default=None)
        if best is None:
            return
        with self.connect() as conn:
            section = state.pool.hold_section(conn, best, state.round, self.config.section_units)
        if state.pool.is_question(best):  # a FAQ's question line: what follows it is read under it
            state.pool.rate(state.question, self.relevance, state.pool.read_under(best))
        state.pool.rate_own(state.question, self.relevance, section)

    def _plan(self, state: PlannerState, trace: RoundTrace, *, final: bool) -> Plan | None:
        """The planner's plan; when it fails (recorded in the trace), the fallback's, else None."""
        with _timed(trace.timings_ms, "plan"):
            try:
                return self.planner.plan(state, final=final)
            except PlannerError as exc:
                trace.planner_error = str(exc)
                if self.fallback is None:
                    return None
                trace.planned_by = self.fallback.name
                return self.fallback.plan(state, final=final)

    def _replan(self, state: PlannerState, trace: RoundTrace, *, final: bool, read: bool) -> Plan | None:
        """The plan again, for its searches: the fallback's after a reader's round, else the planner's."""
        if read and self.fallback is not None:
            with _timed(trace.timings_ms, "plan"):
                return self.fallback.plan(state, final=final)
        return self._plan(state, trace, final=final)

    def _rescue(
        self, state: PlannerState, result: Answer, plan: Plan, trace: RoundTrace, *, final: bool
    ) -> Plan:
        """When verification refused every clause the planner proposed and the answer holds none yet, the
        fallback plans the round again and its plan is verified and followed instead."""
        if not self.rescue or self.fallback is None or trace.planned_by is not None:
            return plan
        if result.clauses or all(p.chosen_by is Chooser.EXTRACTIVE or p.declined for p in plan.proposals):
            return plan  # a clause held, or the model chose none, or only in doubt (the floors weigh it)
        trace.planner_error = f"every clause {self.planner.name} proposed was refused"
        trace.planned_by = self.fallback.name
        with _timed(trace.timings_ms, "plan"):
            rescue = self.fallback.plan(state, final=final)
        self._verify(state, result, rescue, trace)
        return rescue

    def _verify(self, state: PlannerState, result: Answer, plan: Plan, trace: RoundTrace) -> None:
        """Verify the plan's proposals, apply each verdict, and cite each new source with what it leans on."""
        with _timed(trace.timings_ms, "verify"):
            accepted = [c.clause for c in result.clauses]
            verdicts = self.verifier.verify(state.question, plan.proposals, state.pool, accepted)
        for verdict in verdicts:
            apply_verdict(verdict, state, result, trace, self.config.conflict_policy)
            if verdict.accepted:
                trace.chosen_by[verdict.proposal.clause] = verdict.proposal.chosen_by.value
            if (near := refused_passage(verdict)) is not None:
                result.nearest.append(near)  # kept only if the answer ends with no clause
        cited = [src for c in result.clauses if c.round == state.round for src in c.sources]
        if cited:  # their sections' leads join the evidence, each listed after its citation
            with self.connect() as conn:
                cite_companions(
                    conn, state.pool.contexts, [c for c in result.clauses if c.round == state.round]
                )
                trace.new_evidence = state.pool.hold_leads(conn, cited, state.round, trace.new_evidence)

    def _variants(
        self, state: PlannerState, result: Answer, first: list[Hit]
    ) -> tuple[list[str], list[Hit], float] | None:
        """After a first round that verified nothing: the question's new variants, the first retrieval with
        their hits merged after it, and the milliseconds spent; None without a rewriter, a clause, or a
        variant (why the model wrote none goes into the notes)."""
        if self.rewrite is None or result.clauses:
            return None
        started = time.perf_counter()
        hints = list(dict.fromkeys(" > ".join(h.heading_path) for h in first if h.heading_path))[:6]
        try:
            variants = [v for v in self.rewrite(state, hints) if state.is_new_query(v)]
        except PlannerError as exc:
            result.notes.append(f"no query variants: {exc}")
            return None
        if not variants:
            return None
        result.notes.append("query variants: " + " | ".join(variants))
        state.queries_run.extend(variants)
        found: list[tuple[int, int, Hit]] = []
        for variant in variants:
            try:
                hits = self.search(variant, self.config.first_k)
            except Exception as exc:  # one failing variant does not sink the round
                state.failed.append(FailedSearch(variant, f"search failed: {exc}", state.round + 1))
                continue
            found += [(_STAGES.get(h.lexical_stage, 2), rank, h) for rank, h in enumerate(hits)]
        merged = {h.sentence_id: h for h in first}
        for _, _, hit in sorted(found, key=lambda item: item[:2]):
            merged.setdefault(hit.sentence_id, hit)
        return variants, list(merged.values()), 1000 * (time.perf_counter() - started)

    def _gather(self, state: PlannerState, queries: list[str]) -> list[Hit]:
        """Run each subquery (broadened once when it finds nothing new); failures are recorded, not raised."""
        found: list[Hit] = []
        cap = self.config.hits_per_subquery
        for query in queries[:3]:
            attempts = [query, " ".join(content_terms(query)[:6])]
            for attempt in dict.fromkeys(a for a in attempts if a):
                state.queries_run.append(attempt)
                try:
                    hits = self.search(attempt, cap * 3)
                except Exception as exc:  # one failing subquery does not sink the round
                    state.failed.append(FailedSearch(attempt, f"search failed: {exc}", state.round + 1))
                    continue
                held = set(state.pool.hits) | {h.sentence_id for h in found}
                if any(h.sentence_id not in held for h in hits):
                    found += [h for h in hits if h.sentence_id not in {f.sentence_id for f in found}]
                    break
                state.failed.append(FailedSearch(attempt, "no new evidence", state.round + 1))
        return found
