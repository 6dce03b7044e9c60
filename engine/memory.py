"""Answers the team has accepted: a sentence accepted for an earlier question, proposed again when a new
question asks the same thing in other words, and verified like any other candidate.

The engine asks a `RememberedAnswers` (implemented over the database by `indexer.remembered.AcceptedAnswers`,
injected by `daemon.assembly`) for the pairs whose question is closest to the new one, within the answer's
repositories and path prefix. A pair is offered when its question is at least `MemoryConfig.min_similarity`
close (the embedder's cosine; without an embedder, `min_overlap` of the content-word keys), its sentence is
live with the hash it had when accepted (the store marks the others stale and never returns them), and no
close question had the same sentence rejected (unhelpful feedback).

An offered sentence is proposed as its own clause and goes through the verifier's stages (entailment,
contradiction against the evidence and the clauses already accepted, coverage, relevance, the composite and
the answer check). Two floors decide whose word counts:
- at or above `MemoryConfig.vouch_similarity` (or the same question key, or, without an embedder, the
  overlap floor) the two questions ask the same thing, so the team's word stands: the sentence's relevance,
  as the relevance model and the answer check read it, is raised to that similarity;
- between `min_similarity` and `vouch_similarity` the questions are only near (a question on the same page
  that asks something else is often as near as a rewording), so the sentence is offered but rated by the
  models as any candidate: memory brings it in front of the verifier, and the verifier decides.
With a matcher (`[models] question_match`: a cross-encoder trained to tell whether two questions ask the
same thing, `training.question_pairs`), the cosine only finds the candidates (`match_similarity`) and the
matcher's score takes its place: offered at `min_match`, vouched for at `vouch_match`, and the score is what
a vouched sentence's relevance is raised to. The embedder's cosine cannot tell a rewording from a question
on the same page that asks something else; the matcher was trained on exactly that difference. It reads
each pair both ways round (`MemoryConfig.both_ways`). With the
relevance model too (`Rater`), an earlier question's score also weighs how well its accepted sentence answers
the new question (`MemoryConfig.answer_weight`): a rewording of another question on the same page matches
its question about as well as its own, but the other question's sentence does not answer it.
Only one earlier question's sentences are offered: the closest one's, and none when another earlier question
with other sentences scores within `MemoryConfig.min_lead` of it. Each earlier question was accepted for its
own sentences; when two score alike the new question is as close to either, and serving both (or the
wrong one) answers a question nobody asked (``docs/feedback.md``, "One accepted answer, or none").
An accepted clause says where it came from (`AnswerClause.remembered`, `chosen_by` "team"); a refused one is
in the trace with its stage. `bench/feedback_memory.py` measures the floors (``docs/feedback.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from engine.answers import Answer, AnswerClause, ReferenceNeed, RejectedClause, RoundTrace
from engine.contexts import fetch_contexts
from engine.crossencoders import PairScorer, RelevanceModel
from engine.evidence import EvidencePool
from engine.feedback import question_key
from engine.search import Filters, load_hits
from engine.verdicts import Proposal
from engine.verify import Verifier
from indexer.database import Connection
from indexer.remembered import Remembered

__all__ = [
    "TEAM",
    "MemoryConfig",
    "Rater",
    "Recalled",
    "RememberedAnswers",
    "add_remembered",
    "rater",
    "recall",
]

TEAM = "team"
"""`chosen_by` of a clause the team accepted for an earlier question."""


class RememberedAnswers(Protocol):
    """Where the engine finds the pairs the team judged (`indexer.remembered.AcceptedAnswers`)."""

    def remembered(
        self,
        question_key: str,
        vector: Sequence[float] | None,
        repositories: Sequence[str] | None,
        path_prefix: str | None,
        limit: int,
    ) -> Sequence[Remembered]:
        """The live pairs closest to the question, closest first, accepted and rejected alike."""
        ...


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """When an accepted sentence is offered again."""

    min_similarity: float = 0.65
    """The least cosine between the new question's embedding and the accepted question's for the sentence
    to be offered (and rated by the models). Chosen on the tune rows' written questions with the default
    embedder (``docs/feedback.md``)."""
    vouch_similarity: float = 0.8
    """The least cosine at which the team's word stands in for the models' (the sentence's relevance and
    answer check are raised to the cosine)."""
    match_similarity: float = 0.4
    """With a matcher: the least cosine for an accepted question to be read by it at all. 0.4 on the docs
    embedder's scale passes about the share of the tune rows' rewordings that 0.45 passed on
    all-MiniLM-L6-v2's (`situation` p10 0.431 against 0.497; `bench/feedback_memory.py --similarities`)."""
    min_match: float = 0.2
    """With a matcher: the least score (0 to 1) for the sentence to be offered (and rated by the models)."""
    vouch_match: float = 0.2
    """With a matcher: the least score at which the team's word stands in for the models' (relevance and
    answer check raised to the score, at least to the verifier's floors). Both chosen with `min_lead` on the
    tune rows' written questions with the shipped matcher (``docs/feedback.md``, "One accepted answer, or
    none"): the near misses score below 0.03 nine times in ten. Without `min_lead`, 0.2 served more
    sentences accepted for other questions than 0.5 did."""
    min_lead: float = 0.05
    """How far the closest earlier question must score above every other earlier question with other
    sentences for its sentences to be offered (on the scale in use: the matcher's score, else the cosine,
    else the overlap). Chosen on the tune rows with the matcher; below it, nothing is offered."""
    answer_weight: float = 0.5
    """With a matcher and a `Rater`: the share of the relevance model's score of (new question, accepted
    sentence) in an earlier question's score, the matcher's making up the rest; 0: the matcher alone.
    Chosen on the tune rows' written questions at the floors and lead above (``docs/feedback.md``, "The
    accepted sentence's own score")."""
    answer_gate: float = 0.05
    """The least matcher score for the accepted sentence's own score to count: below it the matcher says the
    two questions differ, and a sentence that answers the new question as well is another question's
    answer served to it (on tune, near misses given another row's sentence: 3 with the gate, 14 without).
    Read both ways round, each order must reach it: one order saying the two differ is enough."""
    both_ways: bool = True
    """With a matcher: read each pair both ways round, (new, earlier) and (earlier, new), and take the mean.
    A cross-encoder reads the two orders differently, and which wording came first is an accident. On the
    tune rows' replay at the floors and lead above, it offered 107 and 114 rewordings their own sentence
    against 99 and 111 read one way (``docs/feedback.md``, "Both ways round")."""
    min_overlap: float = 0.75
    """Without an embedder: the least Dice overlap of the two questions' content-word stems."""
    candidates: int = 20
    """How many closest pairs are read (rejections among them hold their sentence back)."""
    max_clauses: int = 2
    """The most remembered sentences verified for one question (all accepted for the one closest question)."""


@dataclass(frozen=True, slots=True)
class Recalled:
    """A sentence offered from memory, and the earlier question it was accepted for."""

    sentence_id: int
    question: str
    answer_id: str
    accepted_at: datetime
    similarity: float
    vouched: bool = True
    """Whether the questions are close enough for the team's word to stand in for the models'."""

    def to_dict(self) -> dict[str, str]:
        """The clause's `remembered` member."""
        return {
            "question": self.question,
            "answer_id": self.answer_id,
            "accepted_at": self.accepted_at.isoformat(),
        }


Rater = Callable[[str, Sequence[int]], dict[int, float]]
"""How well each sentence (by id) answers a question, 0 to 1: the relevance model as the verifier reads it."""


def rater(
    connect: Callable[[], AbstractContextManager[Connection]], pool: EvidencePool, relevance: RelevanceModel
) -> Rater:
    """A `Rater` over the index: each sentence read as the verifier reads it (its heading path and the
    sentence it leans on), rated into `pool`, so that the one then verified is not rated twice."""

    def rate(question: str, sentence_ids: Sequence[int]) -> dict[int, float]:
        if not sentence_ids:
            return {}
        with connect() as conn:
            hits = load_hits(conn, list(sentence_ids))
            pool.contexts.update(fetch_contexts(conn, [h.sentence_id for h in hits]))
        return pool.rate(question, relevance, hits)

    return rate


def _scores(
    question: str,
    key: str,
    found: Sequence[Remembered],
    vector: Sequence[float] | None,
    config: MemoryConfig,
    matcher: RelevanceModel | None,
    rate: Rater | None,
) -> tuple[list[float], float, float]:
    """How close each pair's question is to `question`, and the offer and vouch floors on that scale: the
    matcher's score of the cosine's candidates (with `rate`, weighed with how well each accepted sentence
    answers `question`), else the cosine, else the content-word overlap."""
    same = [bool(key) and p.question_key == key for p in found]
    if vector is None or matcher is None:
        scores = [1.0 if s else p.similarity for p, s in zip(found, same, strict=True)]
        if vector is None:
            return scores, config.min_overlap, config.min_overlap
        return scores, config.min_similarity, max(config.min_similarity, config.vouch_similarity)
    read = [n for n, p in enumerate(found) if p.similarity >= config.match_similarity and not same[n]]
    earlier = [found[n].question for n in read]
    both = _match(matcher, question, earlier, config.both_ways)
    matched = {n: mean for n, (mean, _) in zip(read, both, strict=True)}
    w = config.answer_weight
    gated = [n for n, (_, least) in zip(read, both, strict=True) if least >= config.answer_gate]
    if rate is not None and w > 0 and gated:
        answers = rate(question, [found[n].sentence_id for n in gated])
        answering = {n: answers.get(found[n].sentence_id, 0.0) for n in gated}
        matched = {n: (1 - w) * s + w * answering.get(n, 0.0) for n, s in matched.items()}
    scores = [1.0 if s else matched.get(n, 0.0) for n, s in enumerate(same)]
    return scores, config.min_match, max(config.min_match, config.vouch_match)


def _match(
    matcher: RelevanceModel, question: str, earlier: Sequence[str], both_ways: bool
) -> list[tuple[float, float]]:
    """The matcher's score of `question` against each `earlier` question, and the lower of its two orders;
    `both_ways`: the score is the mean of the two orders, read in one batch where the matcher scores pairs
    (`PairScorer`); else both are the one order's."""
    if not both_ways or not earlier:
        return [(s, s) for s in matcher.score(question, earlier)]
    if isinstance(matcher, PairScorer):
        read = matcher.score_pairs([(question, e) for e in earlier] + [(e, question) for e in earlier])
        forward, backward = read[: len(earlier)], read[len(earlier) :]
    else:
        forward = matcher.score(question, earlier)
        backward = [matcher.score(e, [question])[0] for e in earlier]
    return [((a + b) / 2, min(a, b)) for a, b in zip(forward, backward, strict=True)]


def recall(
    memory: RememberedAnswers,
    question: str,
    vector: Sequence[float] | None,
    filters: Filters,
    config: MemoryConfig,
    matcher: RelevanceModel | None = None,
    rate: Rater | None = None,
) -> list[Recalled]:
    """The sentences to offer for `question`, as the module says: those accepted for the one closest earlier
    question (the same question key counts as the closest), when it reaches the floor and leads every other
    earlier question with other sentences by `min_lead`; else none."""
    key = question_key(question)
    found = memory.remembered(key, vector, filters.repositories, filters.path_prefix, config.candidates)
    scores, floor, vouch = _scores(question, key, found, vector, config, matcher, rate)
    held_back = {p.sentence_id for p, s in zip(found, scores, strict=True) if not p.helpful and s >= floor}
    ranked = [
        (score, pair)
        for score, pair in sorted(zip(scores, found, strict=True), key=lambda t: -t[0])
        if pair.helpful and pair.sentence_id not in held_back
    ]
    if not ranked or ranked[0][0] < floor:
        return []
    first = _asked(ranked[0][1])
    chosen = [(s, p) for s, p in ranked if _asked(p) == first and s >= floor]
    mine = {p.sentence_id for _, p in chosen}
    rival = max((s for s, p in ranked if _asked(p) != first and p.sentence_id not in mine), default=None)
    if rival is not None and rival > ranked[0][0] - config.min_lead:
        return []
    offered: dict[int, Recalled] = {}
    for score, pair in chosen:
        offered.setdefault(
            pair.sentence_id,
            Recalled(
                pair.sentence_id, pair.question, pair.answer_id, pair.accepted_at, score, score >= vouch
            ),
        )
    return list(offered.values())[: config.max_clauses]


def _asked(pair: Remembered) -> str:
    """Which earlier question a pair was accepted for: its question key (the same question asked twice is
    one), else its answer."""
    return pair.question_key or pair.answer_id


def add_remembered(
    result: Answer,
    question: str,
    offered: Sequence[Recalled],
    pool: EvidencePool,
    verifier: Verifier,
    connect: Callable[[], AbstractContextManager[Connection]],
    relevance: RelevanceModel | None,
    check: RelevanceModel | None,
) -> None:
    """Verify each offered sentence as a clause of `result` (read as `question`): an accepted one is added
    with where it came from, a refused one goes to the last round's trace. A sentence the answer already
    cites only gains its `remembered` origin. A vouched sentence's relevance and answer check are raised to
    its score and at least to the verifier's floors, whatever their scale: the team's word stands in for
    the models', and entailment, contradiction and the composite still judge it."""
    if not offered:
        return
    if not result.trace:
        result.trace.append(RoundTrace(1))
    trace = result.trace[-1]
    cited = {h.sentence_id: clause for clause in result.clauses for h in clause.sources}
    fresh = [r for r in offered if r.sentence_id not in cited]
    for r in offered:
        if r.sentence_id in cited and cited[r.sentence_id].remembered is None:
            cited[r.sentence_id].remembered = r.to_dict()
    if not fresh:
        return
    with connect() as conn:
        hits = {h.sentence_id: h for h in load_hits(conn, [r.sentence_id for r in fresh])}
        pool.contexts.update(fetch_contexts(conn, list(hits)))
    fresh = [r for r in fresh if r.sentence_id in hits]
    proposals = [Proposal(hits[r.sentence_id].text, ReferenceNeed.SINGLE, (r.sentence_id,)) for r in fresh]
    for r, proposal in zip(fresh, proposals, strict=True):
        hit = hits[r.sentence_id]
        pool.hits.setdefault(hit.sentence_id, hit)  # held even when the pool is full: it is verified now
        pool.round_of.setdefault(hit.sentence_id, trace.round)
        min_relevance, min_check = verifier.config.floors(proposal)
        if relevance is not None:
            rated = pool.rate(question, relevance, [hit])
            if r.vouched:
                rated[hit.sentence_id] = max(rated[hit.sentence_id], r.similarity, min_relevance)
        if check is not None:
            checked = pool.rate_check(question, check, [hit])
            if r.vouched:
                checked[hit.sentence_id] = max(checked[hit.sentence_id], r.similarity, min_check)
    accepted = [c.clause for c in result.clauses]
    for r, verdict in zip(fresh, verifier.verify(question, proposals, pool, accepted), strict=True):
        clause = verdict.proposal.clause
        if not verdict.accepted:
            reason = f"remembered from answer {r.answer_id}: {verdict.reason}"
            trace.rejected.append(RejectedClause(clause, reason, verdict.stage))
            continue
        result.clauses.append(
            AnswerClause(
                clause,
                verdict.supports,
                verdict.confidence,
                ReferenceNeed.SINGLE,
                verdict.verification,
                round=trace.round,
                remembered=r.to_dict(),
                chosen_by=TEAM,
            )
        )
        trace.accepted.append(clause)
        trace.chosen_by[clause] = TEAM
