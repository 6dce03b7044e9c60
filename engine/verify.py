"""SAFE-style verification: a clause is emitted only when the sources it cites entail it.

Each planned clause gets candidate supports from the evidence pool (the planner's own choice first, then the
sentences closest to it by embedding) and goes through five stages: semantic similarity (cosine), relevance of
the support to the question (reranker, else cosine), entailment (NLI; premise = the support with its previous
sentence, hypothesis = the clause), key-term coverage (the clause's content words and numbers must appear in
its supports: NLI models forgive a wrong number more often than one would like) and contradiction (NLI against
the other related evidence and the clauses already accepted). Every pair of every clause goes to the models in
one batch per model. Acceptance is strict on purpose, precision over recall: the required number of entailing
references, no contradiction, coverage, and a composite at or above the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import islice

import numpy as np

from engine.answers import Budget, ReferenceNeed, Verification
from engine.crossencoders import EntailmentModel, EntailmentScores, RelevanceModel
from engine.evidence import EvidencePool
from engine.routing import content_terms, entities, stem, stems
from engine.search import Hit
from indexer.hashing import normalize_sentence

__all__ = ["Conflict", "Proposal", "Verdict", "Verifier", "VerifyConfig", "coverage"]

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


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
    entailment, and the shipped NLI model calls some long sentences neutral to themselves (asking it anyway
    refused gold sentences on HotpotQA: README.md, Answers)."""
    stop_at_first_sufficient: bool = False
    """Keep only the first supports that meet the need (the low budget)."""
    min_relevance: float = 0.35
    """A clause whose best source the relevance model scores below this for the question is not emitted,
    however well its sources entail it: a true sentence that does not bear on the question is no answer.
    Chosen on HotpotQA, where it raised citation precision with no abstention and no loss of recall
    (README.md, Answers). Without the model nothing gates here: a cosine is too weak a signal."""
    min_relevance_linked: float = 0.15
    """The relevance floor for a linked proposal. "As of 2010 the county population was 9,984" bears on "the
    lake is in a county of how many inhabitants?" only through the finding that puts the lake in the county;
    the relevance model, reading the question alone, refuses gold later hops at the full floor; on HotpotQA
    the lower one lets through mostly gold ones (README.md, Answers)."""
    max_sources: int = 1
    """Sources cited for a single-reference clause, strongest entailment first, on every budget. Corroborating
    sources are where a small NLI model errs: on HotpotQA most extra sources were not supporting facts, and
    citing more a clause cut citation precision (README.md, Answers)."""

    def for_budget(self, budget: Budget) -> VerifyConfig:
        """Low stops at the first sufficient support; high runs every stage on more candidates."""
        if budget is Budget.LOW:
            return replace(self, supports_per_clause=2, stop_at_first_sufficient=True)
        if budget is Budget.HIGH:
            return replace(self, supports_per_clause=8, stop_at_first_sufficient=False)
        return self


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
    accepted: bool
    reason: str
    supports: list[Hit] = field(default_factory=list)
    verification: Verification = field(default_factory=Verification)
    confidence: float = 0.0
    conflict: Conflict | None = None


def coverage(clause: str, texts: Sequence[str]) -> float:
    """Share of the clause's content words found in `texts` (by stem); 0 if any number is missing."""
    haystack = " ".join(texts)
    numbers = set(_NUMBER.findall(clause))
    if not numbers <= set(_NUMBER.findall(haystack)):
        return 0.0
    terms = [t for t in content_terms(clause) if not _NUMBER.fullmatch(t)]
    if not terms:
        return 1.0
    have = stems(haystack)
    have |= set(content_terms(haystack))
    return sum(1 for t in terms if stem(t) in have or t in have) / len(terms)


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

    __slots__ = ("_config", "_entailment", "_relevance")

    def __init__(
        self,
        entailment: EntailmentModel | None,
        relevance: RelevanceModel | None = None,
        config: VerifyConfig | None = None,
    ) -> None:
        self._entailment = entailment
        self._relevance = relevance
        self._config = config or VerifyConfig()

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
            limit = max(config.supports_per_clause, len(chosen))
            candidates = list({h.sentence_id: h for h in chosen + ranked}.values())[:limit]
            job = _Job(proposal, candidates if proposal.need is not ReferenceNeed.NONE else [], sims)
            job.accepted = list(accepted)
            job.subject = _subject(proposal.clause)
            for hit in job.candidates:
                if not (config.verbatim_shortcut and _same(hit.text, proposal.clause)):
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
        return [self._decide(job, nli, relevance, pool) for job in jobs]

    def _same_subject(self, job: _Job, text: str) -> bool:
        """Whether `text` is about the clause's subject, so that a contradiction can mean anything: each
        names the other's first entity (when it has one), and it shares enough of the clause's terms. Two
        sentences on two tugboats share most words ("X is a historic tugboat located at ...") and nothing
        else; "Dainan is a town under Xinghua" names Xinghua but is about Dainan."""
        if job.subject and not set(job.subject) <= set(content_terms(text)):
            return False
        theirs = _subject(text)
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
        self, job: _Job, nli: list[EntailmentScores], relevance: dict[int, float], pool: EvidencePool
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
                return Verdict(proposal, False, f"no candidate source entails it{missing}")
            cover = coverage(proposal.clause, [pool.premise(h) for h in supports])
            entail = sum(entails(h) for h in supports) / len(supports)
        else:
            if job.joint_pair is None or not nli:
                return Verdict(
                    proposal,
                    False,
                    "a multi-reference clause needs two candidate sources and the entailment model",
                )
            entail = nli[job.joint_pair].entailment
            if entail < config.entail_threshold:
                return Verdict(proposal, False, f"sources together do not entail it ({entail:.2f})")
            supports = _needed(proposal.clause, job.candidates[:3], pool)
            if len(supports) < 2:
                return Verdict(proposal, False, "fewer than two sources are needed for it")
            cover = coverage(proposal.clause, [pool.premise(h) for h in supports])
        if cover < config.coverage_threshold:
            return Verdict(proposal, False, f"key terms not in its sources (coverage {cover:.2f})")
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
                proposal, False, reason, supports, verification, verification.composite, contradiction
            )
        floor = config.min_relevance_linked if proposal.linked else config.min_relevance
        if self._relevance is not None and proposal.asks:
            rated = pool.rate(proposal.asks, self._relevance, supports)
            rels = [max(r, rated[h.sentence_id]) for r, h in zip(rels, supports, strict=True)]
        if self._relevance is not None and max(rels) < floor:
            reason = f"sources do not bear on the question (relevance {max(rels):.2f})"
            return Verdict(proposal, False, reason)
        if verification.composite < config.threshold:
            return Verdict(
                proposal, False, f"composite {verification.composite:.2f} below {config.threshold}"
            )
        return Verdict(proposal, True, "entailed", supports, verification, verification.composite)


def _subject(text: str) -> tuple[str, ...]:
    """The terms of the first named entity, skipping figures ("In 1901 the Acme bridge": Acme)."""
    named = (e for e in entities(text) if not _NUMBER.fullmatch(e))
    return tuple(content_terms(next(named, "")))


def _same(a: str, b: str) -> bool:
    return normalize_sentence(a).rstrip(".") == normalize_sentence(b).rstrip(".")


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
