"""The default planner: extractive, no LLM; it proposes source sentences as clauses (`engine.planning` holds
the Protocol and the state every planner reads).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.alternatives import close_alternatives
from engine.answers import ReferenceNeed
from engine.planning import Plan, PlannerState
from engine.search import Hit
from engine.verdicts import Proposal
from engine.words import content_terms, entities, stem, stems

__all__ = ["ExtractivePlanner"]


@dataclass(frozen=True, slots=True)
class ExtractivePlanner:
    """Clauses are source sentences chosen for the question; the next subquery carries the bridge entity.

    Each round proposes the best unused sentence, preferring what the latest search found in a document no
    accepted finding cites yet (a multi-hop answer needs a new document per hop). The next subquery is the
    question plus the entities and new terms of that sentence: in "what game did the team with an 11-1 record
    play in", the first hop's sentence names the team, and the team's name finds the second hop. For a
    comparison, the question's entities that no finding mentions yet lead the subquery instead.
    """

    clauses_per_round: int = 1
    max_new_terms: int = 6
    relevance_weight: float = 10.0
    """How much the relevance model's rating of a sentence for the question (0 to 1) weighs beside the term,
    rank and document features (together about 0 to 3) in the first hop: the learned rating chooses, and the
    features only break what it leaves nearly tied. Later hops and comparisons are chosen by the features
    alone. Each part of a two-part question is chosen by its own rating."""
    heading_prior: float = 0.6
    """Weight of a heading made of target (or, before a finding, question) terms: the section is about it."""
    lead_prior: float = 0.2
    """Weight of a sentence's place in its section (the lead defines the subject), divided by its ordinal."""
    figure_prior: float = 0.5
    """Weight of a sentence stating a figure when the question compares quantities or, once its subject is
    found, asks for one ("when", "how many")."""
    own_weight: float = 5.0
    """Within the best-scored sentence's section, how much a unit's rating read on its own (0 to 1) weighs
    beside its rating under the heading path, which weighs `relevance_weight` (`_within_section`)."""
    named_hops: bool = True
    """Past a bridge's first hop, a new document must be named by the findings or the question."""
    lookup_clauses: int = 1
    """How many clauses a one-hop question's first finding may propose at once: the best candidate and its
    close alternatives (`engine.alternatives`), each verified on its own, best first."""
    lookup_margin: float = 0.1
    """How close an alternative's rating must come to the best candidate's (`close_alternatives`)."""

    @property
    def name(self) -> str:
        """Shown in traces."""
        return "extractive"

    def plan(self, state: PlannerState, *, final: bool) -> Plan:
        """Propose the next sentence(s) and, unless final, the next subquery."""
        ranked = self.ranked(state)
        chosen = self._choose(state, ranked)
        linked = bool(state.accepted) and not state.shape.comparison  # see _choose: a named document
        per_part: list[Proposal] = []
        asks: dict[int, str] = {}
        if len(state.parts) > 1 and not state.accepted and not state.shape.comparison:
            per_part, asks = self._per_part(state, chosen, ranked)
        elif self._lookup(state):
            chosen = [
                *chosen,
                *close_alternatives(state, ranked, chosen, self.lookup_clauses, self.lookup_margin),
            ]
        proposals = [
            Proposal(h.text, ReferenceNeed.SINGLE, (h.sentence_id,), linked, asks.get(h.sentence_id, ""))
            for h in chosen
        ]
        proposals += per_part
        return self.follow(state, chosen, proposals, final=final)

    def _lookup(self, state: PlannerState) -> bool:
        """Whether close alternatives may join the first finding: a one-hop question, not a comparison,
        nothing accepted yet, and more than one clause allowed."""
        shape = state.shape
        return self.lookup_clauses > 1 and not state.accepted and shape.hops == 1 and not shape.comparison

    def ranked(self, state: PlannerState) -> list[Hit]:
        """Every sentence that could be proposed now, best first (`_rank`)."""
        return [hit for hit, _ in self._rank(state)]

    def follow(
        self, state: PlannerState, chosen: Sequence[Hit], proposals: list[Proposal], *, final: bool
    ) -> Plan:
        """The plan of `proposals` drawn from `chosen`: done when final, when nothing was chosen, or when
        coverage is met; otherwise with the next subquery that `chosen` leads to."""
        done = final or not chosen or state.coverage_met(chosen)
        if done:
            return Plan(proposals, [], True)
        query = self._next_query(state, chosen)
        return Plan(proposals, [query] if query else [], False)

    def eligible(self, state: PlannerState, ranked: list[Hit]) -> list[Hit]:
        """The ranked sentences a clause may be chosen from now, in order: those of documents no finding
        cites yet when there are any, and past a bridge's first hop only those of a document the findings
        or the question name (none, when no such document was found)."""
        covered = state.covered_documents()
        fresh = [h for h in ranked if h.path not in covered]
        if state.accepted and not state.shape.comparison and self.named_hops:
            held = state.held()
            read = [*held, *(lead for h in held if (lead := state.pool.lead_of(h)))]
            named = stems(" ".join([state.question, *(h.text for h in read)]))
            return [h for h in fresh if stems(_title(h)) <= named]
        return fresh or ranked

    def _choose(self, state: PlannerState, ranked: list[Hit]) -> list[Hit]:
        """The best-scored candidates, from documents no finding cites yet when there are any.

        Past the first hop of a bridge question, a new document must be one the findings (read with the
        leads of their sections) or the question name (its title's words all appear there): the bridge is
        what links one hop to the next, and a document reached by shared words alone is most often a wrong
        page.
        """
        picked: list[Hit] = []
        for hit in self.eligible(state, ranked):  # none past a bridge's hop that no finding names
            if len(picked) >= self.clauses_per_round:
                break
            if all(hit.path != p.path for p in picked):
                picked.append(hit)
        return picked

    def _per_part(
        self, state: PlannerState, chosen: Sequence[Hit], ranked: list[Hit]
    ) -> tuple[list[Proposal], dict[int, str]]:
        """For a question that asks several things, the best sentence for each part the chosen ones do not
        already answer best: rated against that part and mentioning its terms. Also the part each chosen
        sentence answers best, if any: it is proposed for that part too, so the verifier reads its relevance
        against the part as well as against the whole question, which a sentence answering one half of
        it may not match ("... what changed, and how do I use them again?")."""
        chosen_ids = {h.sentence_id for h in chosen}
        taken = set(chosen_ids)
        asks: dict[int, str] = {}
        proposals = []
        for part in state.parts:
            terms = stems(part)

            def fit(hit: Hit, part: str = part, terms: set[str] = terms) -> float:
                share = len(terms & stems(hit.headed_text)) / len(terms) if terms else 0.0
                return state.pool.rating(part, hit) + 0.5 * share

            best = max(ranked, key=fit, default=None)
            if best is None:
                continue
            if best.sentence_id in taken:
                if best.sentence_id in chosen_ids:
                    asks.setdefault(best.sentence_id, part)
                continue
            taken.add(best.sentence_id)
            proposals.append(Proposal(best.text, ReferenceNeed.SINGLE, (best.sentence_id,), False, part))
        return proposals, asks

    def _rank(self, state: PlannerState) -> list[tuple[Hit, float]]:
        """Every sentence that could be proposed now, with its score, best first.

        The score adds the share of target terms a sentence mentions, the search's own rank (this round's
        ranking first, then what earlier rounds held), and document priors: a sentence under a heading made
        of target or question terms is about it ("Terry Richardson" more than "Kenton Richardson" for a
        question on Terry Richardson), and a section's lead sentences define its subject. A comparison of
        quantities ("who is younger") and a question asking for a figure ("when", once the subject is
        found) are settled by sentences that state one.
        """
        used = {i for f in state.accepted for i in f.source_ids}
        rejected = {r.clause.strip().lower() for r in state.rejected}

        def usable(hit: Hit) -> bool:
            return (
                not state.pool.states_nothing(hit)
                and hit.sentence_id not in used
                and hit.text.strip().lower() not in rejected
            )

        latest = [h for h in state.latest if usable(h)]
        rest = sorted(
            (h for h in state.pool.hits.values() if usable(h)),
            key=lambda h: state.pool.round_of[h.sentence_id],
        )
        ordered = list({h.sentence_id: h for h in latest + rest}.values())
        targets = self._targets(state)
        # Before the first finding a heading made of question terms marks the document; after it, only one
        # made of what is still sought does, or the first hop's document would win the second hop too.
        about_terms = targets if state.accepted else stems(state.question)
        measured = bool(_QUANTITY.search(state.question)) and state.shape.comparison
        measured = measured or bool(_ASKS_FIGURE.search(state.question) and state.accepted)

        # The question says what a first hop must answer; a later hop is sought for what the findings
        # lack (a bridge's next document), and a comparison for each compared name's own document, which a
        # rating against the whole question cannot judge ("which writer was from England, A or B?").
        weight = 0.0 if state.accepted or state.shape.comparison else self.relevance_weight

        def score(rank: int, hit: Hit) -> float:
            words = stems(hit.headed_text)
            overlap = len(targets & words) / len(targets) if targets else 0.0
            heading = stems(" ".join(hit.heading_path))
            about = self.heading_prior * len(heading & about_terms) / len(heading) if heading else 0.0
            figure = self.figure_prior if measured and _DIGIT.search(hit.text) else 0.0
            rated = weight * state.pool.rating(state.question, hit)
            lead = self.lead_prior / max(1, hit.ordinal)
            return overlap + 0.5 / (1 + rank) + about + lead + figure + rated

        scored = sorted(
            [(hit, score(rank, hit)) for rank, hit in enumerate(ordered)], key=lambda item: -item[1]
        )
        return self._within_section(state, scored) if weight else scored

    def _within_section(
        self, state: PlannerState, scored: list[tuple[Hit, float]]
    ) -> list[tuple[Hit, float]]:
        """`scored` with the unit that answers best within the best-scored sentence's section first, when
        that section was read (`Rounds._read_section`).

        The heading path rates the section and the unit's own reading rates the unit: under a heading that
        restates the question, the premise that sets it up and the sentence that answers rate alike, and
        only read on its own does the answer stand out. A unit held with the section and not rated under
        its heading shares the heading, and so the best-scored sentence's rating there. When the best-rated
        unit is a question line (a FAQ's question written as a sentence), it marks the section instead, and
        the choice is among the units it introduces (`EvidencePool.answer_block`).
        """
        if not scored:
            return scored
        rated = state.pool.ratings.get(state.question, {})
        top = max(state.pool.hits.values(), key=lambda h: rated.get(h.sentence_id, 0.0))
        if not state.pool.is_question(top):
            top = scored[0][0]  # a question line states nothing: it marks where its answer is
        if state.pool.own_rating(state.question, top) is None:
            return scored
        shared = rated.get(top.sentence_id, 0.0)

        def within(item: tuple[Hit, float]) -> float:
            headed = rated.get(item[0].sentence_id, shared)
            own = state.pool.own_rating(state.question, item[0]) or 0.0
            return self.relevance_weight * headed + self.own_weight * own

        block = {h.sentence_id for h in state.pool.answer_block(top)} if state.pool.is_question(top) else None
        section = [
            item
            for item in scored
            if item[0].document_id == top.document_id
            and item[0].heading_path == top.heading_path
            and state.pool.own_rating(state.question, item[0]) is not None
            and (block is None or item[0].sentence_id in block)
        ]
        if not section:
            return scored
        best = max(section, key=within)
        return [best, *(item for item in scored if item[0] is not best[0])]

    @staticmethod
    def _targets(state: PlannerState) -> set[str]:
        """Stems a next sentence should mention: question terms not yet covered, and the bridge entities."""
        held = state.held()
        known = stems(" ".join(h.headed_text for h in held))
        question = stems(state.question)
        if not held:
            return question
        if state.shape.comparison:
            # The other compared entity, not what the first one's sentence names; and the compared attribute
            # ("writer", "species") for each entity, though the first one's sentence already mentions it.
            return (question - known) | (question - stems(" ".join(state.shape.entities)))
        names = (e for h in held for e in _names(h.text))
        bridge = stems(" ".join(names)) - question
        return (question - known) | bridge

    def _next_query(self, state: PlannerState, chosen: Sequence[Hit]) -> str:
        """Uncovered question entities and terms, plus (for a bridge) the chosen evidence's new entities
        (names, not dates: a date finds every page of that year)."""
        question = state.question
        held = state.held()
        known_stems = stems(" ".join(h.headed_text for h in [*held, *chosen]))
        # A compared entity is covered by a document about it, not by a mention in another one ("Annie
        # Morton ... worked with Terry Richardson" says nothing of his age); other entities by all their
        # words.
        about_stems = (
            stems(" ".join(" ".join(h.heading_path) for h in [*held, *chosen]))
            if state.shape.comparison
            else known_stems
        )
        uncovered_entities = [e for e in state.shape.entities if not stems(e) <= about_stems]
        uncovered_terms = [t for t in content_terms(question) if stem(t) not in known_stems]
        bridge: list[str] = []
        if not state.shape.comparison:
            for hit in chosen:
                # Each heading and the sentence apart: joined, "Les McCann" and "Les McCann was..." would
                # read as one name.
                names = (e for text in (*hit.heading_path, hit.text) for e in _names(text))
                bridge += [e for e in names if e.lower() not in question.lower()]
        words = " ".join(uncovered_entities + bridge[: self.max_new_terms] + uncovered_terms).split()
        parts = list(dict.fromkeys(w.lower() for w in words))
        # A comparison's next hop is the document about the other entity: its name alone finds it, where
        # the question's words ("which peak stands higher") find other peaks.
        named = " ".join(uncovered_entities).lower() if state.shape.comparison else ""
        candidates = [
            named,
            " ".join(parts),
            " ".join(bridge[: self.max_new_terms]),
            " ".join(content_terms(question)),
        ]
        for query in candidates:
            if query.strip() and state.is_new_query(query):
                return query.strip()
        return ""


_QUANTITY = re.compile(
    r"\b(older|younger|earlier|later|first|last|taller|higher|lower|longer|shorter|larger|bigger|smaller"
    r"|more|fewer|less|born|founded|established|oldest|youngest|tallest|highest|largest|most)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_PARENTHESIS = re.compile(r"\s*\([^)]*\)")
_ASKS_FIGURE = re.compile(
    r"\b(when|what year|which year|how (many|much|old|long|tall|high|far|big|large))\b", re.IGNORECASE
)
_DATE = re.compile(
    r"[\d\s,.:/–-]*((january|february|march|april|may|june|july|august|september|october|november"
    r"|december)[\d\s,.:/–-]*)?",
    re.IGNORECASE,
)


def _names(text: str) -> list[str]:
    """The entities of `text` that can name a next hop: not dates (a date finds every page of that year),
    and not long quotations (a quoted prize citation is words said, not a name)."""
    return [e for e in entities(text) if not _DATE.fullmatch(e) and len(e.split()) <= 8]


def _title(hit: Hit) -> str:
    """The document's title without a disambiguation ("Dan Lewis (footballer)": "dan lewis")."""
    return _PARENTHESIS.sub("", hit.heading_path[0]).strip().lower() if hit.heading_path else ""
