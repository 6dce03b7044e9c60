"""The evidence gathered for a question: retrieved sentences with their contexts (`engine.contexts`), the
relevance model's ratings of them, and their vectors.

Verification reads a source with its previous sentence as context ("It was founded in 1901." needs the
sentence naming "it"), conflict handling prefers the most recently changed sentence, and the semantic stage
compares embeddings; all three are fetched once per sentence and shared by every round and clause.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from engine.contexts import SentenceContext, asks, fetch_contexts, leans_on, previous_text
from engine.crossencoders import RelevanceModel
from engine.search import Hit, headed_text, load_hits
from indexer.database import Connection
from indexer.embedder import EmbeddingModel

__all__ = ["EvidencePool"]

_OWN_CHARS = 300

_SECTION_SQL = """
SELECT u.id FROM sentences s
JOIN sentences u ON u.document_id = s.document_id AND u.heading_path = s.heading_path AND u.kind <> 'heading'
WHERE s.id = %s AND u.ordinal >= CASE WHEN %s THEN s.ordinal ELSE 0 END
ORDER BY u.ordinal
LIMIT %s
"""


def _rate_into(
    rated: dict[int, float],
    query: str,
    model: RelevanceModel,
    hits: Sequence[Hit],
    read: Callable[[Hit], str],
) -> dict[int, float]:
    """Rate each of `hits` not in `rated`, read as `read` gives it, for `query` (one model batch), into
    `rated`, clamped to 0..1; returns `rated`."""
    todo = list({h.sentence_id: h for h in hits if h.sentence_id not in rated}.values())
    if todo:
        for hit, value in zip(todo, model.score(query, [read(h) for h in todo]), strict=True):
            rated[hit.sentence_id] = min(1.0, max(0.0, value))
    return rated


@dataclass(slots=True)
class EvidencePool:
    """Every sentence retrieved for one question, in the order first seen, with the round that found it."""

    embedder: EmbeddingModel | None
    max_size: int = 48
    hits: dict[int, Hit] = field(default_factory=dict)
    round_of: dict[int, int] = field(default_factory=dict)
    contexts: dict[int, SentenceContext] = field(default_factory=dict)
    ratings: dict[str, dict[int, float]] = field(default_factory=dict)
    """Per question (or part of one): how well each rated sentence answers it, as the relevance model reads
    it, from 0 to 1."""
    own_ratings: dict[str, dict[int, float]] = field(default_factory=dict)
    """Per question: how well a sentence answers it read on its own (`rate_own`), from 0 to 1."""
    check_ratings: dict[str, dict[int, float]] = field(default_factory=dict)
    """Per question (or part): the answer check's rating of a cited sentence (`rate_check`), from 0 to 1."""
    asked_by: dict[int, str] = field(default_factory=dict)
    """A unit that answers a question line (`read_under`), by id: that question, read as its sub-heading."""
    _vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)

    def add(self, hits: Iterable[Hit], round_number: int, limit: int) -> list[Hit]:
        """Add up to `limit` hits not already held (by sentence id or identical text); return the new ones.

        Headings are not held: they state nothing a clause could cite, and each sentence already carries its
        heading path, so a heading would only take the place of a sentence under the per-subquery cap.
        """
        held_texts = {h.text.strip().lower() for h in self.hits.values()}
        new: list[Hit] = []
        for hit in hits:
            if len(new) >= limit or len(self.hits) >= self.max_size:
                break
            key = hit.text.strip().lower()
            if hit.sentence_id in self.hits or key in held_texts or self.is_heading(hit):
                continue
            self.hits[hit.sentence_id] = hit
            self.round_of[hit.sentence_id] = round_number
            held_texts.add(key)
            new.append(hit)
        return new

    def in_place_of_headings(self, conn: Connection, hits: Sequence[Hit]) -> list[Hit]:
        """`hits` with each heading replaced, at its rank, by the first unit under it; `contexts` must hold
        theirs. A heading with no unit right under it (a sub-heading follows) is left in, to be passed over.

        A heading that matches the question is the strongest sign that its section answers ("What are
        decimals?"), yet it states nothing, and the pool does not hold it: the sentence under it would
        then stand or fall on its own rank, which a close heading of another page and that page's
        sentences can push out of the round. The unit under it rises to the heading's rank instead.
        """
        firsts = {
            hit.sentence_id: context.next_id
            for hit in hits
            if (context := self.contexts.get(hit.sentence_id)) is not None
            and context.kind == "heading"
            and context.next_id is not None
        }
        if not firsts:
            return list(hits)
        wanted = [i for i in dict.fromkeys(firsts.values()) if i not in self.contexts]
        self.contexts.update(fetch_contexts(conn, wanted))
        loaded = {hit.sentence_id: hit for hit in load_hits(conn, list(set(firsts.values())))}
        out: list[Hit] = []
        for hit in hits:
            first = loaded.get(firsts.get(hit.sentence_id, -1))
            out.append(hit if first is None else first)
        return list({hit.sentence_id: hit for hit in out}.values())

    def hold_leads(
        self, conn: Connection, cited: Sequence[Hit], round_number: int, listed: Sequence[int]
    ) -> list[int]:
        """Hold the lead sentence of each cited sentence's section; returns `listed` (a round's new evidence)
        with each lead now held after its citation, or at the end when the citation is not listed.

        A search finds sentences, but the first sentence under a heading is what defines its subject: an
        answer that cites "He won the title in 2015 by defeating Chris Weidman" is read with the sentence
        that names the fighter, and the next hop may need what that sentence says of him.
        """
        wanted: dict[int, int] = {}
        for hit in cited:
            context = self.contexts.get(hit.sentence_id)
            if context is not None and context.lead is not None and context.lead not in self.hits:
                wanted.setdefault(context.lead, hit.sentence_id)
        if not wanted:
            return list(listed)
        self.contexts.update(fetch_contexts(conn, [i for i in wanted if i not in self.contexts]))
        held = self.add(load_hits(conn, list(wanted)), round_number, len(wanted))
        after = {wanted[lead.sentence_id]: lead.sentence_id for lead in held}
        order: list[int] = []
        for sentence_id in listed:
            order.append(sentence_id)
            if sentence_id in after:
                order.append(after.pop(sentence_id))
        return order + list(after.values())

    def rate(self, query: str, model: RelevanceModel, hits: Sequence[Hit]) -> dict[int, float]:
        """Rate each of `hits` not yet rated for how well it answers `query` (one model batch); returns
        every rating for `query` so far.

        The model reads the sentence under its heading path (`Hit.headed_text`): a docs sentence often
        leaves its subject to the heading ("It lives in the target folder." under "Build cache").
        """
        return _rate_into(self.ratings.setdefault(query, {}), query, model, hits, self.headed)

    def rate_check(self, query: str, model: RelevanceModel, hits: Sequence[Hit]) -> dict[int, float]:
        """Rate each of `hits` not yet so rated with the answer check (`load_answer_check`), read as the
        relevance model reads it (`Hit.headed_text`); returns every such rating for `query`."""
        rated = self.check_ratings.setdefault(query, {})
        return _rate_into(rated, query, model, hits, self.headed)

    def headed(self, hit: Hit) -> str:
        """What the cross-encoders read: the sentence under its heading path (`headed_text`), and under the
        question line it answers too, when it answers one (`read_under`), after the sentence before it when
        it depends on that one (`leans_on`): "It just works!" is judged as what "it" is said to do. A code
        block is read alone: its lead-in is the clause that cites it."""
        asked = self.asked_by.get(hit.sentence_id)
        before = None if hit.kind == "code" else previous_text(hit, self.contexts.get(hit.sentence_id))
        text = f"{before[:_OWN_CHARS]} {hit.text}" if before else hit.text
        return headed_text((*hit.heading_path, asked) if asked else hit.heading_path, text)

    def read_under(self, question: Hit) -> list[Hit]:
        """Read the units a question line introduces (`answer_block`) under it from now on, as under a
        heading, forgetting how they were rated without it; returns them."""
        block = self.answer_block(question)
        for hit in block:
            self.asked_by[hit.sentence_id] = question.text
            for rated in (*self.ratings.values(), *self.check_ratings.values()):
                rated.pop(hit.sentence_id, None)
        return block

    def rate_own(self, query: str, model: RelevanceModel, hits: Sequence[Hit]) -> dict[int, float]:
        """Rate each of `hits` not yet so rated for how well it answers `query` on its own: without its
        heading path, with the neighbour it leans on (`own_text`); returns every such rating for `query`.

        Under a heading that restates the question, every sentence of the section reads as relevant beside
        it, the premise that sets the question up and a bare "See #1482." as much as the sentence that
        answers; read on their own, only that one still does.
        """
        return _rate_into(self.own_ratings.setdefault(query, {}), query, model, hits, self.own_text)

    def own_text(self, hit: Hit) -> str:
        """The sentence as it reads without its heading path, with the neighbour it leans on (`leans_on`),
        each cut to its first `_OWN_CHARS` characters: a code block's first lines say what it does, and a
        batch costs as much as its longest passage."""
        context = self.contexts.get(hit.sentence_id)
        companion = leans_on(hit, context)
        text = hit.text[:_OWN_CHARS]
        if context is None or companion is None:
            return text
        if companion == context.next_id and context.following:
            return f"{text} {context.following[:_OWN_CHARS]}"
        if companion == context.previous_id and context.previous:
            return f"{context.previous[:_OWN_CHARS]} {text}"
        return text

    def rating(self, query: str, hit: Hit) -> float:
        """`hit`'s rating for `query`, 0 when it was not rated."""
        return self.ratings.get(query, {}).get(hit.sentence_id, 0.0)

    def own_rating(self, query: str, hit: Hit) -> float | None:
        """`hit`'s rating for `query` read on its own, None when it was not so rated."""
        return self.own_ratings.get(query, {}).get(hit.sentence_id)

    def hold_section(self, conn: Connection, hit: Hit, round_number: int, limit: int) -> list[Hit]:
        """Hold the first `limit` units of `hit`'s section (its document, under its heading path) that are
        not held yet, or, when `hit` is a question, the first `limit` from it on: what a question line of a
        FAQ introduces is its answer, wherever it sits in a long section. Returns every held unit of those,
        in document order."""
        after = self.is_question(hit)
        ids = [int(r[0]) for r in conn.execute(_SECTION_SQL, (hit.sentence_id, after, limit)).fetchall()]
        missing = [i for i in ids if i not in self.hits]
        if missing:
            self.contexts.update(fetch_contexts(conn, [i for i in missing if i not in self.contexts]))
            self.add(load_hits(conn, missing), round_number, len(missing))
        return [self.hits[i] for i in ids if i in self.hits]

    def lead_of(self, hit: Hit) -> Hit | None:
        """The held lead sentence of `hit`'s section, if it is held and is not `hit` itself."""
        context = self.contexts.get(hit.sentence_id)
        return self.hits.get(context.lead) if context is not None and context.lead is not None else None

    def is_heading(self, hit: Hit) -> bool:
        """A heading names a topic and states nothing, so it is never a clause (it still steers retrieval)."""
        context = self.contexts.get(hit.sentence_id)
        return context is not None and context.kind == "heading"

    @staticmethod
    def is_question(hit: Hit) -> bool:
        """A sentence that asks ("Can I add a designated timestamp to an existing table?") states nothing
        either: in a FAQ it is the reader's question, and the answer is what follows it. A question rates
        high against itself, so without this it would be cited as its own answer."""
        return asks(hit)

    def answer_block(self, question: Hit) -> list[Hit]:
        """The held units that follow `question` in its section, in document order, up to the next question:
        what a question line introduces, as a heading introduces its section."""
        after = sorted(
            (
                h
                for h in self.hits.values()
                if h.document_id == question.document_id
                and h.heading_path == question.heading_path
                and h.ordinal > question.ordinal
            ),
            key=lambda h: h.ordinal,
        )
        block: list[Hit] = []
        for hit in after:
            if self.is_question(hit):
                break
            block.append(hit)
        return block

    def states_nothing(self, hit: Hit) -> bool:
        """A heading or a question: never a clause and never a support (each still steers retrieval)."""
        return self.is_heading(hit) or self.is_question(hit)

    def premise(self, hit: Hit) -> str:
        """The sentence with its previous sentence as context, as the entailment stage reads it."""
        context = self.contexts.get(hit.sentence_id)
        if context is None or not context.previous:
            return hit.text
        return f"{context.previous} {hit.text}"

    def hit_vectors(self, hits: Sequence[Hit]) -> npt.NDArray[np.float32]:
        """The stored vectors of embedded sentences (no model call); the others are encoded once."""
        stored = {
            h.sentence_id: c.vector for h in hits if (c := self.contexts.get(h.sentence_id)) is not None
        }
        for hit in hits:
            vector = stored.get(hit.sentence_id)
            if vector is not None:
                self._vectors.setdefault(hit.text, vector)
        return self.vectors([h.text for h in hits])

    def vectors(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors for `texts`, encoding only the ones not seen before (one batch).

        Without an embedder, texts with no stored vector get a zero vector: their similarity stage scores 0,
        which can only make verification stricter.
        """
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing and self.embedder is not None:
            for text, vector in zip(missing, self.embedder.encode(missing), strict=True):
                self._vectors[text] = vector
        dimension = next((len(v) for v in self._vectors.values()), 1)
        zero = np.zeros(dimension, dtype=np.float32)
        if not texts:
            return np.zeros((0, dimension), dtype=np.float32)
        return np.stack([self._vectors.get(t, zero) for t in texts])
