"""The passages closest to answering a question no clause could be verified for (`Answer.nearest`).

The rounds record every refused clause's closest source with the stage and score that refused it; when the
answer ends with no clause, the question's own first retrieval (its search top `first_k`, of which a round
holds only the head) is listed whole, ranked by how well the relevance model reads each sentence as answering
it (those not rated yet are rated now, one batch); then, only while fewer than `NEAREST` are listed, whatever
else the rounds held or refused, ranked the same way. So a passage that the question's own search ranked in
its top 10 is always in the list, whatever the relevance model made of it: a reworded answer that the model
rates low is still shown (the CLI and the page show the first `NEAREST` and fold the rest). The first
retrieval leads because later rounds search subqueries that reach further from the question. A held sentence
the planner drew no clause from says so, with its rating against the relevance floor, and what happened to
it (`engine.reasons`: rated below the floor, not chosen by a reader shown it, or not read, with its rank by
rating). Headings and questions state nothing and are left out. The list is never an answer: the
controller sets it only on an answer with no verified clause.

A passage that depends on the sentence before it ("It just works!", "Then we need to examine it.": the
notion the embedding queue reads, `engine.contexts.leans_on`) is listed with that sentence as its `context`
(`with_context`). A fragment, under `FRAGMENT_WORDS` content words, always depends on the unit before it;
the first of a section is shown under its heading ("Specify server port." under "server.port"), and any
other (a short lead-in: "There are a few:") is not listed at all: shown alone, it is noise.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from engine.contexts import fetch_contexts, previous_text
from engine.crossencoders import RelevanceModel
from engine.evidence import EvidencePool
from engine.passages import NEAREST, NearPassage
from engine.reasons import ReasonKind, reason_kind
from engine.search import Hit, load_hits
from engine.verdicts import Verdict
from indexer.database import Connection
from indexer.embedding_context import FRAGMENT_WORDS, is_fragment

__all__ = ["FRAGMENT_WORDS", "NEAREST", "closest", "refused_passage", "with_context"]

_UNDRAWN = "no clause was drawn from it"


def refused_passage(verdict: Verdict) -> NearPassage | None:
    """The source a refused clause came closest with, and why it was refused; None when it had none."""
    if verdict.accepted or verdict.candidate is None:
        return None
    return NearPassage(
        verdict.candidate, verdict.reason, verdict.stage, verdict.measure, verdict.score, verdict.threshold
    )


def closest(
    refused: Sequence[NearPassage],
    pool: EvidencePool,
    question: str,
    retrieved: Sequence[Hit] = (),
    relevance: RelevanceModel | None = None,
    floor: float | None = None,
    limit: int = NEAREST,
    shown: Collection[int] = (),
) -> list[NearPassage]:
    """Every stating sentence of `retrieved` (the question's first retrieval), then the best of the refused
    ones and the rest of the pool while fewer than `limit` are listed; each part best rated for `question`
    first.

    With `relevance`, sentences not rated yet are rated, and `floor` is the relevance floor each is measured
    against; without it, passages keep the order they were retrieved in. The rest of the pool is rated only
    when the question's own retrieval leaves some of the `limit` places empty (an insufficient answer's
    rounds hold dozens of sentences, a cross-encoder batch of them took as long as the rounds). A sentence
    refused more than once keeps its first refusal.

    A passage no clause was drawn from says what happened to it (`engine.reasons`): rated below `floor`, or
    else not chosen when a model reader was `shown` it (sentence ids), or not read, with its `rank` among
    the listed passages by rating; never "not about your question" when rated at or above the floor."""
    candidates = {h.sentence_id: h for h in (*pool.hits.values(), *retrieved)}
    order = {sentence_id: index for index, sentence_id in enumerate(candidates)}
    stating = [h for h in candidates.values() if h.kind != "heading" and not pool.states_nothing(h)]
    found: dict[int, NearPassage] = {}
    for passage in refused:
        found.setdefault(passage.hit.sentence_id, passage)
    own = {h.sentence_id for h in retrieved}
    first = [h for h in stating if h.sentence_id in own]
    if relevance is not None:
        pool.rate(question, relevance, first)
        if len(first) < limit:  # the others can still be listed
            pool.rate(question, relevance, [h for h in stating if h.sentence_id not in own])
    against_floor = relevance is not None and floor is not None
    for hit in stating:
        if hit.sentence_id in found:
            continue
        if against_floor:
            rating = _rating(pool, question, hit.sentence_id)
            found[hit.sentence_id] = NearPassage(hit, _UNDRAWN, None, "relevance", rating, floor)
        else:
            found[hit.sentence_id] = NearPassage(hit, _UNDRAWN)
    rated = [replace(p, rating=_rating(pool, question, p.hit.sentence_id)) for p in found.values()]
    rated.sort(
        key=lambda p: (
            p.hit.sentence_id not in own,
            -p.rating,
            p.stage is None,
            order.get(p.hit.sentence_id, len(order)),
        )
    )
    return _ranked(rated[: max(limit, len(first))], shown)


def _ranked(listed: list[NearPassage], shown: Collection[int]) -> list[NearPassage]:
    """`listed`, each passage no clause was drawn from with its kind (`reason_kind`), then ranked
    (`_renumbered`)."""
    out: list[NearPassage] = []
    for passage in listed:
        if passage.stage is None:
            was_shown = passage.hit.sentence_id in shown
            kind = reason_kind(None, passage.measure, passage.score, passage.threshold, shown=was_shown)
            passage = replace(passage, kind=kind)
        out.append(passage)
    return _renumbered(out)


def _renumbered(listed: list[NearPassage]) -> list[NearPassage]:
    """`listed`, each passage not read or not chosen with its place among them all by rating (1 for the best
    rated, ties in list order); the others without a rank."""
    by_rating = sorted(range(len(listed)), key=lambda i: -listed[i].rating)
    rank = {index: place for place, index in enumerate(by_rating, 1)}
    ranked = (ReasonKind.NOT_READ, ReasonKind.NOT_CHOSEN)
    return [replace(p, rank=rank[i] if p.kind in ranked else None) for i, p in enumerate(listed)]


def _rating(pool: EvidencePool, question: str, sentence_id: int) -> float:
    """The best of the sentence's ratings for the question: under its heading, and read on its own."""
    rated = pool.ratings.get(question, {}).get(sentence_id, 0.0)
    own = pool.own_ratings.get(question, {}).get(sentence_id, 0.0)
    return max(rated, own)


def with_context(conn: Connection, pool: EvidencePool, passages: Sequence[NearPassage]) -> list[NearPassage]:
    """`passages` in their order, each that depends on the unit before it (`previous_text`) with that unit as
    its `context`, less every fragment (`is_fragment`) without it: no passage under `FRAGMENT_WORDS` content
    words is listed without what comes before it, a heading for the first of a section (every passage shows
    its heading). A fragment within a section that introduces what follows ("There are a few:") is dropped,
    and the ranks of those left are counted again."""
    missing = [p.hit.sentence_id for p in passages if p.hit.sentence_id not in pool.contexts]
    pool.contexts.update(fetch_contexts(conn, missing))
    wanted = {
        p.hit.sentence_id: context.previous_id
        for p in passages
        if (context := pool.contexts.get(p.hit.sentence_id)) is not None
        and context.previous_id is not None
        and previous_text(p.hit, context) is not None
    }
    loaded = {h.sentence_id: h for h in load_hits(conn, list(wanted.values()))}
    listed: list[NearPassage] = []
    for passage in passages:
        before = loaded.get(wanted.get(passage.hit.sentence_id, -1))
        context = pool.contexts.get(passage.hit.sentence_id)
        under_heading = bool(passage.hit.heading_path) and context is not None and context.previous_id is None
        if before is not None:
            listed.append(replace(passage, context=before))
        elif under_heading or not is_fragment(passage.hit.text):
            listed.append(passage)
    return _renumbered(listed)
