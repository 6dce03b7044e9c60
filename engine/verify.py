"""SAFE-style verification: a clause is emitted only when the sources it cites entail it.

Each planned clause gets candidate supports from the evidence pool (the planner's own choice first, then the
sentences closest to it by embedding) and goes through five stages: semantic similarity (cosine), relevance of
the support to the question (reranker, else cosine), entailment (NLI; premise = the support with its previous
sentence, hypothesis = the clause), key-term coverage (the clause's content words and numbers must appear in
its supports: NLI models forgive a wrong number more often than one would like) and contradiction (NLI against
the other related evidence and the clauses already accepted). Every pair of every clause goes to the models in
one batch per model. Acceptance is strict on purpose, precision over recall: the required number of entailing
references, no contradiction, coverage, and a composite at or above the threshold. With an answer check (a
second, docs-trained relevance model), a clause that passed every other stage is refused when the check reads
its sources as a near miss: it is asked about nothing else (one call per such clause), so it can veto but
never choose.

A model reader's verdict counts as a signal (`engine.reader`): a unit it chose is refused for relevance only
when the relevance model and the answer check both rate it below the reader's floors, never by either alone,
and never by the answer check's veto; a clause of a round the reader declined (NONE) meets the declined
floors instead. Entailment, coverage, contradiction and the composite judge every clause alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice

import numpy as np

from engine.answers import ReferenceNeed, Stage, Verification
from engine.crossencoders import EntailmentModel, EntailmentScores, RelevanceModel
from engine.evidence import EvidencePool
from engine.search import Hit
from engine.verdicts import Chooser, Conflict, Proposal, Verdict, VerifyConfig, refusal
from engine.words import content_terms, coverage, same_text, stems, subject

__all__ = ["Verifier"]


@dataclass(slots=True)
class _Job:
    """One proposal's candidates and the indexes of its pairs in the shared model batches."""

    proposal: Proposal
    candidates: list[Hit]
    similarity: dict[int, float]
    entail_pairs: dict[int, int] = field(default_factory=dict)
    joint_pair: int | None = None
    contra_pairs: list[tuple[int, Conflict]] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    subject: tuple[str, ...] = ()
    """The terms of the clause's first entity, which a rival must name to contradict it."""


class Verifier:
    """Runs the stages over a batch of proposals; models are injected, the entailment model may be absent."""

    __slots__ = ("_check", "_config", "_entailment", "_relevance")

    def __init__(
        self,
        entailment: EntailmentModel | None,
        relevance: RelevanceModel | None = None,
        config: VerifyConfig | None = None,
        check: RelevanceModel | None = None,
    ) -> None:
        """`check` is the answer check (`VerifyConfig.min_answer_check`); without it nothing is checked."""
        self._entailment = entailment
        self._relevance = relevance
        self._config = config or VerifyConfig()
        self._check = check

    @property
    def config(self) -> VerifyConfig:
        """The thresholds in force."""
        return self._config

    def verify(
        self, question: str, proposals: Sequence[Proposal], pool: EvidencePool, accepted: Sequence[str] = ()
    ) -> list[Verdict]:
        """One verdict per proposal, in order; `accepted` are the clauses already emitted (contradiction)."""
        if not proposals:
            return []
        config = self._config
        evidence = list(pool.hits.values())
        evidence_vecs = pool.hit_vectors(evidence)  # a verbatim clause reuses its sentence's stored vector
        clause_vecs = pool.vectors([p.clause for p in proposals])
        cosines = clause_vecs @ evidence_vecs.T if evidence else np.zeros((len(proposals), 0))
        pairs: list[tuple[str, str]] = []
        jobs = []
        for row, proposal in enumerate(proposals):
            sims = {h.sentence_id: float(cosines[row, i]) for i, h in enumerate(evidence)}
            chosen = [pool.hits[i] for i in proposal.support_ids if i in pool.hits]
            ranked = sorted(evidence, key=lambda h: -sims[h.sentence_id])
            chosen, ranked = _stating(chosen, pool), _stating(ranked, pool)
            limit = max(config.supports_per_clause, len(chosen))
            candidates = list({h.sentence_id: h for h in chosen + ranked}.values())[:limit]
            job = _Job(proposal, candidates if proposal.need is not ReferenceNeed.NONE else [], sims)
            job.accepted = list(accepted)
            job.subject = subject(proposal.clause)
            for hit in job.candidates:
                if not (config.verbatim_shortcut and same_text(hit.text, proposal.clause)):
                    job.entail_pairs[hit.sentence_id] = len(pairs)
                    pairs.append((pool.premise(hit), proposal.clause))
            if proposal.need is ReferenceNeed.MULTI and len(job.candidates) >= 2:
                joint = " ".join(pool.premise(h) for h in job.candidates[:3])
                job.joint_pair = len(pairs)
                pairs.append((joint, proposal.clause))
            cited = {h.sentence_id for h in job.candidates}
            related = (
                h
                for h in ranked
                if h.sentence_id not in cited
                and sims[h.sentence_id] >= config.related_cosine
                and self._same_subject(job, pool.premise(h))
            )
            for hit in islice(related, config.contradiction_candidates):
                job.contra_pairs.append((len(pairs), Conflict(0.0, hit=hit)))
                pairs.append((pool.premise(hit), proposal.clause))
            for index, text in enumerate(accepted):
                if not self._same_subject(job, text):
                    continue  # an accepted clause about another subject cannot contradict this one
                job.contra_pairs.append((len(pairs), Conflict(0.0, clause_index=index)))
                pairs.append((text, proposal.clause))
            jobs.append(job)
        nli = self._entailment.predict(pairs) if self._entailment is not None and pairs else []
        support_texts = list({h.sentence_id: h for j in jobs for h in j.candidates}.values())
        relevance = self._relevance_scores(question, support_texts, pool)
        return [self._decide(question, job, nli, relevance, pool) for job in jobs]

    def _same_subject(self, job: _Job, text: str) -> bool:
        """Whether `text` is about the clause's subject, so that a contradiction can mean anything: each
        names the other's first entity (when it has one), and it shares enough of the clause's terms. Two
        sentences on two tugboats share most words ("X is a historic tugboat located at ...") and nothing
        else; "Dainan is a town under Xinghua" names Xinghua but is about Dainan."""
        if job.subject and not set(job.subject) <= set(content_terms(text)):
            return False
        theirs = subject(text)
        if theirs and not set(theirs) <= set(content_terms(job.proposal.clause)):
            return False
        return coverage(job.proposal.clause, [text]) >= self._config.conflict_overlap

    def _relevance_scores(self, question: str, hits: list[Hit], pool: EvidencePool) -> dict[int, float]:
        if not hits:
            return {}
        if self._relevance is not None:
            rated = pool.rate(question, self._relevance, hits)  # the planner's ratings, not recomputed
            scores = [rated[h.sentence_id] for h in hits]
        else:
            q = pool.vectors([question])[0]
            scores = [float(v @ q) for v in pool.hit_vectors(hits)]
        return {h.sentence_id: min(1.0, max(0.0, s)) for h, s in zip(hits, scores, strict=True)}

    def _decide(
        self,
        question: str,
        job: _Job,
        nli: list[EntailmentScores],
        relevance: dict[int, float],
        pool: EvidencePool,
    ) -> Verdict:
        config, proposal = self._config, job.proposal
        contradiction = Conflict(0.0)
        for index, conflict in job.contra_pairs if nli else ():
            p = nli[index].contradiction
            if p > contradiction.probability:
                contradiction = Conflict(p, conflict.hit, conflict.clause_index)

        def entails(hit: Hit) -> float:
            index = job.entail_pairs.get(hit.sentence_id)
            if index is None:
                return 1.0
            return nli[index].entailment if nli else 0.0

        need = proposal.need
        if need is ReferenceNeed.NONE:
            supports: list[Hit] = []
            cover = coverage(proposal.clause, job.accepted)
            entail = 1.0
        elif need is ReferenceNeed.SINGLE:
            supports = [h for h in job.candidates if entails(h) >= config.entail_threshold]
            if config.stop_at_first_sufficient:
                supports = supports[:1]
            supports = sorted(supports, key=lambda h: -entails(h))[: max(1, config.max_sources)]
            if not supports:
                missing = (
                    "" if self._entailment is not None else " (no entailment model: only verbatim clauses)"
                )
                reason = f"no candidate source entails it{missing}"
                near = max(job.candidates, key=entails, default=None)
                score = None if near is None else entails(near)
                return refusal(proposal, Stage.ENTAILMENT, reason, near, score, config.entail_threshold)
            cover = coverage(proposal.clause, [pool.premise(h) for h in supports])
            entail = sum(entails(h) for h in supports) / len(supports)
        else:
            first = job.candidates[0] if job.candidates else None
            if job.joint_pair is None or not nli:
                reason = "a multi-reference clause needs two candidate sources and the entailment model"
                return refusal(proposal, Stage.ENTAILMENT, reason, first)
            entail = nli[job.joint_pair].entailment
            if entail < config.entail_threshold:
                reason = f"sources together do not entail it ({entail:.2f})"
                return refusal(proposal, Stage.ENTAILMENT, reason, first, entail, config.entail_threshold)
            supports = _needed(proposal.clause, job.candidates[:3], pool)
            if len(supports) < 2:
                return refusal(proposal, Stage.ENTAILMENT, "fewer than two sources are needed for it", first)
            cover = coverage(proposal.clause, [pool.premise(h) for h in supports])
        if cover < config.coverage_threshold:
            reason = f"key terms not in its sources (coverage {cover:.2f})"
            top = supports[0] if supports else None
            return refusal(proposal, Stage.COVERAGE, reason, top, cover, config.coverage_threshold)
        cited = {h.sentence_id for h in supports}
        for hit in job.candidates:  # a candidate that does not support the clause may contradict it
            pair = job.entail_pairs.get(hit.sentence_id)
            if pair is None or not nli or hit.sentence_id in cited:
                continue
            if not self._same_subject(job, pool.premise(hit)):
                continue
            if nli[pair].contradiction > contradiction.probability:
                contradiction = Conflict(nli[pair].contradiction, hit=hit)
        sims = [min(1.0, max(0.0, job.similarity.get(h.sentence_id, 0.0))) for h in supports] or [1.0]
        rels = [relevance.get(h.sentence_id, 0.0) for h in supports] or [1.0]
        w = config.weights
        composites = [
            (w[0] * s + w[1] * r + w[2] * entail + w[3] * cover + w[4] * (1 - contradiction.probability))
            / sum(w)
            for s, r in zip(sims, rels, strict=True)
        ]
        verification = Verification(
            similarity=sum(sims) / len(sims),
            relevance=sum(rels) / len(rels),
            entailment=entail,
            coverage=cover,
            contradiction=contradiction.probability,
            composite=sum(composites) / len(composites),
        )
        if contradiction.probability >= config.contradiction_threshold:
            reason = f"contradicted ({contradiction.probability:.2f})"
            return Verdict(
                proposal,
                Stage.CONTRADICTION,
                reason,
                supports,
                verification,
                verification.composite,
                contradiction,
                supports[0] if supports else None,
                "contradiction",
                contradiction.probability,
                config.contradiction_threshold,
            )
        floors = config.floors(proposal)
        read = proposal.chosen_by is Chooser.READER and not proposal.declined
        checked: float | None = None
        if self._relevance is not None and supports:
            best = _best_rating(pool.rate, self._relevance, question, proposal.asks, supports)
            if best < floors[0] and read:  # a reader's choice: refused only when the check agrees
                checked = self._checked(question, proposal, supports, pool)
                if checked is None or checked < floors[1]:
                    shown = "" if checked is None else f", answer check {checked:.2f}"
                    reason = f"sources do not bear on the question (relevance {best:.2f}{shown})"
                    return refusal(
                        proposal, Stage.RELEVANCE, reason, supports[0], best, floors[0], "relevance"
                    )
            elif best < floors[0]:
                reason = f"sources do not bear on the question (relevance {best:.2f})"
                return refusal(proposal, Stage.RELEVANCE, reason, supports[0], best, floors[0], "relevance")
        if verification.composite < config.threshold:
            composite = verification.composite
            reason = f"composite {composite:.2f} below {config.threshold}"
            top = supports[0] if supports else None
            return refusal(proposal, Stage.COMPOSITE, reason, top, composite, config.threshold, "composite")
        if checked is None:  # last: only a clause that would pass is checked
            checked = self._checked(question, proposal, supports, pool)
        if checked is not None and checked < floors[1] and not read:
            reason = f"the answer check reads its sources as a near miss ({checked:.2f})"
            return refusal(proposal, Stage.RELEVANCE, reason, supports[0], checked, floors[1], "answer_check")
        verification.answer_check = checked
        return Verdict(proposal, None, "entailed", supports, verification, verification.composite)

    def _checked(
        self, question: str, proposal: Proposal, supports: list[Hit], pool: EvidencePool
    ) -> float | None:
        """The answer check's best rating of `supports` for the question or the part the clause answers;
        None when there is no check to ask, or the clause is a bridge's later hop."""
        if self._check is None or proposal.linked or not supports:
            return None
        return _best_rating(pool.rate_check, self._check, question, proposal.asks, supports)


_Rate = Callable[[str, RelevanceModel, Sequence[Hit]], dict[int, float]]


def _best_rating(rate: _Rate, model: RelevanceModel, question: str, asks: str, supports: list[Hit]) -> float:
    """The best rating `rate` gives any of `supports` for the question, or for the part of it the clause
    answers (`Proposal.asks`): a sentence that answers one half of a long question often rates low for the
    whole of it. The relevance floor and the answer check both read sources this way."""
    queries = [question, asks] if asks else [question]
    return max(rate(query, model, supports)[h.sentence_id] for query in queries for h in supports)


def _stating(hits: list[Hit], pool: EvidencePool) -> list[Hit]:
    """The hits that state something: a question or a heading supports no clause (`states_nothing`)."""
    return [h for h in hits if not pool.states_nothing(h)]


def _needed(clause: str, candidates: list[Hit], pool: EvidencePool) -> list[Hit]:
    """The candidates that contribute a clause term no other candidate has: each cited source must matter."""
    terms = stems(clause)
    own = [stems(pool.premise(h)) & terms for h in candidates]
    needed = []
    for i, hit in enumerate(candidates):
        others = set().union(*(own[j] for j in range(len(candidates)) if j != i))
        if own[i] - others:
            needed.append(hit)
    return needed
