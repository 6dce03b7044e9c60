"""SAFE verification rules, each on known verdicts, and the shipped NLI model when its weights are present.

Rule tests use a scripted entailment model (so a rule, not a model's mood, decides the outcome) and the real
all-MiniLM-L6-v2 for the semantic stage.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.answers import ReferenceNeed, Stage
from engine.crossencoders import WEIGHTS_DIR, EntailmentModel, EntailmentScores, load_entailment
from engine.evidence import EvidencePool
from engine.search import Hit
from engine.verdicts import Proposal, VerifyConfig
from engine.verify import Verifier
from engine.words import coverage
from indexer.embedder import EmbeddingModel

ENTAIL = EntailmentScores(0.96, 0.03, 0.01)
NEUTRAL = EntailmentScores(0.05, 0.9, 0.05)
CONTRADICT = EntailmentScores(0.01, 0.04, 0.95)


class ScriptedNLI:
    """(premise substring, hypothesis) -> scores; anything else is neutral. Counts calls and pairs."""

    def __init__(self, rules: Sequence[tuple[str, str, EntailmentScores]] = ()) -> None:
        self.rules = list(rules)
        self.calls: list[int] = []
        self.pairs: list[tuple[str, str]] = []

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[EntailmentScores]:
        self.calls.append(len(pairs))
        self.pairs += pairs
        out = []
        for premise, hypothesis in pairs:
            match = [s for p, h, s in self.rules if p in premise and h == hypothesis]
            out.append(match[0] if match else NEUTRAL)
        return out


SENTENCES = [
    "The Acme bridge was opened in 1901 by the city council.",
    "The Acme bridge spans the Blue river near the old mill.",
    "The Blue river floods every spring.",
    "Bread dough rises because yeast produces gas.",
]


def _pool(embedder: EmbeddingModel, texts: Sequence[str] = SENTENCES) -> EvidencePool:
    pool = EvidencePool(embedder)
    hits = [
        Hit(i, t, "docs", f"d{i}.md", 1, 1, ("Doc",), i, 0, "abc123", True) for i, t in enumerate(texts, 1)
    ]
    pool.add(hits, 1, len(hits))
    return pool


def test_verbatim_clause_is_entailed_without_an_nli_call(embedder: EmbeddingModel) -> None:
    nli = ScriptedNLI()
    verdict = Verifier(nli).verify(
        "when did the bridge open", [Proposal(SENTENCES[0], support_ids=(1,))], _pool(embedder)
    )[0]
    assert verdict.accepted, verdict.reason
    assert [h.sentence_id for h in verdict.supports] == [1]
    assert verdict.verification.entailment == 1.0 and verdict.verification.similarity == pytest.approx(
        1.0, abs=1e-3
    )
    assert (SENTENCES[0], SENTENCES[0]) not in nli.pairs  # the shortcut, not the model, judged it
    # Without any NLI model, only verbatim clauses can verify.
    paraphrase = Proposal("The city council opened the Acme bridge in 1901.")
    verdicts = Verifier(None).verify("when", [Proposal(SENTENCES[0]), paraphrase], _pool(embedder))
    assert verdicts[0].accepted and not verdicts[1].accepted
    assert "no entailment model" in verdicts[1].reason
    assert verdicts[0].stage is None and verdicts[1].stage is Stage.ENTAILMENT


def test_paraphrase_needs_entailment_and_pairs_are_batched_across_clauses(embedder: EmbeddingModel) -> None:
    entailed = "The city council opened the Acme bridge in 1901."
    unsupported = "The Acme bridge was designed by a famous architect."
    nli = ScriptedNLI([("opened in 1901", entailed, ENTAIL)])
    verdicts = Verifier(nli).verify(
        "who opened the Acme bridge", [Proposal(entailed), Proposal(unsupported)], _pool(embedder)
    )
    assert verdicts[0].accepted, verdicts[0].reason
    assert verdicts[0].supports[0].sentence_id == 1
    assert not verdicts[1].accepted and "entails" in verdicts[1].reason
    assert len(nli.calls) == 1  # one batch for both clauses' entailment and contradiction pairs


def test_a_wrong_number_fails_coverage_even_when_nli_says_entailed(embedder: EmbeddingModel) -> None:
    clause = "The city council opened the Acme bridge in 1902."
    nli = ScriptedNLI([("opened in 1901", clause, ENTAIL)])
    verdict = Verifier(nli).verify("when", [Proposal(clause)], _pool(embedder))[0]
    assert not verdict.accepted and "coverage" in verdict.reason
    assert verdict.stage is Stage.COVERAGE
    assert coverage(clause, [SENTENCES[0]]) == 0.0
    assert coverage("The Acme bridge opened in 1901.", [SENTENCES[0]]) == 1.0


def test_a_clause_contradicted_by_related_evidence_is_not_emitted(embedder: EmbeddingModel) -> None:
    clause = "The Acme bridge spans the Blue river near the old mill."
    texts = [*SENTENCES, "The Acme bridge does not span the Blue river; it crosses the Red river."]
    nli = ScriptedNLI([("does not span", clause, CONTRADICT)])
    verdict = Verifier(nli).verify(
        "what does the bridge span", [Proposal(clause, support_ids=(2,))], _pool(embedder, texts)
    )[0]
    assert not verdict.accepted and "contradicted" in verdict.reason
    assert verdict.stage is Stage.CONTRADICTION
    assert verdict.conflict is not None and verdict.conflict.hit is not None
    assert verdict.conflict.hit.sentence_id == 5
    assert verdict.supports and verdict.verification.composite > 0  # scored, so a conflict policy can keep it


def test_contradicting_an_accepted_clause_is_caught(embedder: EmbeddingModel) -> None:
    clause = SENTENCES[2]
    accepted = "The Blue river never floods."
    nli = ScriptedNLI([(accepted, clause, CONTRADICT)])
    verdict = Verifier(nli).verify("does the river flood", [Proposal(clause)], _pool(embedder), [accepted])[0]
    assert not verdict.accepted and verdict.conflict is not None and verdict.conflict.clause_index == 0
    # An accepted clause about another subject is not asked: the NLI model would call it contradictory.
    other = "The Zenith tunnel never opened."
    nli = ScriptedNLI([(other, clause, CONTRADICT)])
    verdict = Verifier(nli).verify("does the river flood", [Proposal(clause)], _pool(embedder), [other])[0]
    assert verdict.accepted, verdict.reason


def test_multi_reference_clause_needs_two_contributing_sources(embedder: EmbeddingModel) -> None:
    joined = "The Acme bridge, opened in 1901, spans the Blue river."
    nli = ScriptedNLI([("spans the Blue river", joined, ENTAIL)])
    verdict = Verifier(nli).verify(
        "tell me about the bridge", [Proposal(joined, ReferenceNeed.MULTI, (1, 2))], _pool(embedder)
    )[0]
    assert verdict.accepted, verdict.reason
    assert {h.sentence_id for h in verdict.supports} == {1, 2}
    single_fact = "The Acme bridge was opened by the city council."
    nli = ScriptedNLI([("opened in 1901", single_fact, ENTAIL)])
    verdict = Verifier(nli).verify(
        "who", [Proposal(single_fact, ReferenceNeed.MULTI, (1, 2))], _pool(embedder)
    )[0]
    assert not verdict.accepted  # the joint premise entails it but only one source is needed


def test_composite_threshold_and_low_budget_first_sufficient(embedder: EmbeddingModel) -> None:
    texts = [*SENTENCES, "In 1901 the city council opened the Acme bridge."]
    clause = "The council opened the Acme bridge in 1901."
    nli = ScriptedNLI([("1901", clause, ENTAIL)])
    corroborated = Verifier(nli, config=VerifyConfig(max_sources=3))
    full = corroborated.verify("when did the bridge open", [Proposal(clause)], _pool(embedder, texts))[0]
    assert full.accepted and len(full.supports) == 2
    assert full.confidence == pytest.approx(full.verification.composite)
    low = Verifier(nli, config=VerifyConfig(stop_at_first_sufficient=True))
    assert len(low.verify("when", [Proposal(clause)], _pool(embedder, texts))[0].supports) == 1
    strict = Verifier(nli, config=VerifyConfig(threshold=0.99))
    verdict = strict.verify("when", [Proposal(clause)], _pool(embedder, texts))[0]
    assert not verdict.accepted and "composite" in verdict.reason
    assert verdict.stage is Stage.COMPOSITE


def test_a_clause_with_no_reference_may_only_restate_accepted_clauses(embedder: EmbeddingModel) -> None:
    accepted = [SENTENCES[0]]
    verifier = Verifier(ScriptedNLI())
    restated = verifier.verify(
        "q", [Proposal("So the bridge opened in 1901.", ReferenceNeed.NONE)], _pool(embedder), accepted
    )
    invented = verifier.verify(
        "q", [Proposal("So the bridge is made of steel.", ReferenceNeed.NONE)], _pool(embedder), accepted
    )
    assert restated[0].accepted and restated[0].supports == []
    assert not invented[0].accepted


def _shipped_entailment() -> EntailmentModel:
    if not (WEIGHTS_DIR / "entailment" / "config.json").is_file():
        pytest.skip(f"the shipped entailment model is not in {WEIGHTS_DIR / 'entailment'} yet (models issue)")
    return load_entailment()


def test_shipped_nli_model_accepts_entailed_and_rejects_contradicted_clauses(
    embedder: EmbeddingModel,
) -> None:
    verifier = Verifier(_shipped_entailment())
    texts = ["The committee approved the new budget on Monday after a long debate."]
    good, bad = "The committee approved the budget.", "The committee rejected the budget."
    verdicts = verifier.verify(
        "what happened to the budget", [Proposal(good), Proposal(bad)], _pool(embedder, texts)
    )
    assert verdicts[0].accepted, verdicts[0].reason
    assert not verdicts[1].accepted


def test_a_contradiction_about_another_subject_is_no_conflict(embedder: EmbeddingModel) -> None:
    """NLI models trained on captions call "X is a 1998 film" and "Y is a 2005 film" contradictory; a
    sentence that shares too few of the clause's terms cannot contradict it."""
    clause = "The Acme bridge spans the Blue river near the old mill."
    texts = [*SENTENCES, "The Zenith tunnel was dug under the harbour in 1950."]
    nli = ScriptedNLI([("Zenith tunnel", clause, CONTRADICT)])
    verdict = Verifier(nli, config=VerifyConfig(related_cosine=0.0)).verify(
        "what does the bridge span", [Proposal(clause, support_ids=(2,))], _pool(embedder, texts)
    )[0]
    assert verdict.accepted, verdict.reason
    assert verdict.verification.contradiction < 0.5
    # Most words shared, but another subject: the rival does not name the clause's first entity.
    tugboat = "Catawissa is a historic tugboat located at Waterford in Saratoga County, New York."
    rival = "Whittelsey is a historic tugboat located at Kingston in Ulster County, New York."
    _assert_no_conflict(embedder, "where is the Catawissa", tugboat, rival, accepted=[rival])
    # The rival names the clause's subject, but its own subject is another one.
    city = "Xinghua is a county-level city under the administration of Taizhou."
    town = "Dainan is a town under the administration of Xinghua City."
    _assert_no_conflict(embedder, "is Xinghua a city", city, town, accepted=[])


def _assert_no_conflict(
    embedder: EmbeddingModel, question: str, clause: str, rival: str, *, accepted: Sequence[str]
) -> None:
    """`rival` shares enough of the clause's terms to be checked and the NLI model calls it contradictory,
    yet the clause is accepted: the two are about different subjects."""
    assert coverage(clause, [rival]) >= VerifyConfig().conflict_overlap
    nli = ScriptedNLI([(rival, clause, CONTRADICT)])
    verdict = Verifier(nli, config=VerifyConfig(related_cosine=0.0)).verify(
        question, [Proposal(clause)], _pool(embedder, [clause, rival]), accepted
    )[0]
    assert verdict.accepted, verdict.reason
    assert verdict.verification.contradiction < 0.5


def test_a_single_reference_clause_cites_its_strongest_source(embedder: EmbeddingModel) -> None:
    """By default one source is cited: the one that entails the clause most strongly, not the first found."""
    texts = [*SENTENCES, "In 1901 the city council opened the Acme bridge."]
    clause = "The council opened the Acme bridge in 1901."
    weaker = EntailmentScores(0.7, 0.2, 0.1)
    nli = ScriptedNLI([("was opened in 1901", clause, weaker), ("In 1901 the city", clause, ENTAIL)])
    verdict = Verifier(nli).verify(
        "when did it open", [Proposal(clause, support_ids=(1,))], _pool(embedder, texts)
    )[0]
    assert verdict.accepted, verdict.reason
    assert [h.text for h in verdict.supports] == [texts[4]]


class _FixedRelevance:
    """A fake relevance model: one score for every passage (the real one is tested in test_crossencoders)."""

    def __init__(self, score: float) -> None:
        self.value = score

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [self.value for _ in passages]


def test_a_clause_whose_sources_do_not_bear_on_the_question_is_not_emitted(embedder: EmbeddingModel) -> None:
    proposal = Proposal(SENTENCES[3], support_ids=(4,))
    low = Verifier(ScriptedNLI(), _FixedRelevance(0.1)).verify(
        "why does bread rise", [proposal], _pool(embedder)
    )
    assert not low[0].accepted and "bear on the question" in low[0].reason
    assert low[0].stage is Stage.RELEVANCE
    high = Verifier(ScriptedNLI(), _FixedRelevance(0.9)).verify(
        "why does bread rise", [proposal], _pool(embedder)
    )
    assert high[0].accepted, high[0].reason


def test_a_later_hop_reached_through_a_finding_is_held_to_the_lower_relevance_floor(
    embedder: EmbeddingModel,
) -> None:
    """0.25 is below `min_relevance` (0.35) but above `min_relevance_linked` (0.15)."""
    config = VerifyConfig()
    assert config.min_relevance_linked < 0.25 < config.min_relevance
    verifier = Verifier(ScriptedNLI(), _FixedRelevance(0.25))
    unlinked, linked = (Proposal(SENTENCES[2], support_ids=(3,), linked=flag) for flag in (False, True))
    verdicts = verifier.verify("how big is the Acme bridge's river", [unlinked, linked], _pool(embedder))
    assert not verdicts[0].accepted and "bear on the question" in verdicts[0].reason
    assert verdicts[1].accepted, verdicts[1].reason


class _ScriptedCheck:
    """An answer check that rates by the passage: listed substrings get their score, anything else 0.9.
    Records what it read, to show it reads the sentence under its heading path."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.read: list[tuple[str, str]] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.read += [(query, p) for p in passages]
        return [next((v for k, v in self.scores.items() if k in p), 0.9) for p in passages]


def test_a_near_miss_the_relevance_model_lets_through_is_refused_by_the_answer_check(
    embedder: EmbeddingModel,
) -> None:
    check = _ScriptedCheck({"spans the Blue river": 0.04})
    verifier = Verifier(ScriptedNLI(), _FixedRelevance(0.9), check=check)
    near_miss, answer = Proposal(SENTENCES[1], support_ids=(2,)), Proposal(SENTENCES[0], support_ids=(1,))
    verdicts = verifier.verify("when was the Acme bridge opened", [near_miss, answer], _pool(embedder))
    assert not verdicts[0].accepted and verdicts[0].stage is Stage.RELEVANCE
    assert verdicts[0].reason == "the answer check reads its sources as a near miss (0.04)"
    assert verdicts[1].accepted, verdicts[1].reason
    assert verdicts[1].verification.answer_check == 0.9
    assert ("when was the Acme bridge opened", f"Doc: {SENTENCES[1]}") in check.read


def test_without_an_answer_check_or_on_a_later_hop_nothing_is_checked(embedder: EmbeddingModel) -> None:
    near_miss = Proposal(SENTENCES[1], support_ids=(2,))
    unchecked = Verifier(ScriptedNLI(), _FixedRelevance(0.9)).verify(
        "when was it opened", [near_miss], _pool(embedder)
    )
    assert unchecked[0].accepted, unchecked[0].reason
    check = _ScriptedCheck({"spans the Blue river": 0.04})
    linked = Proposal(SENTENCES[1], support_ids=(2,), linked=True)
    verdicts = Verifier(ScriptedNLI(), _FixedRelevance(0.9), check=check).verify(
        "when was it opened", [linked], _pool(embedder)
    )
    assert verdicts[0].accepted, verdicts[0].reason
    assert check.read == []
    for verdict in (unchecked[0], verdicts[0]):
        assert verdict.verification.answer_check is None
        assert "answer_check" not in verdict.verification.to_dict()  # every JSON value stays a number


def test_the_answer_check_reads_the_part_a_clause_answers_too(embedder: EmbeddingModel) -> None:
    """A clause answering one part of a two-part question passes when the check rates it high for that
    part, as the relevance floor reads it."""

    class ByQuery:
        def score(self, query: str, passages: Sequence[str]) -> list[float]:
            return [0.8 if query == "when was it opened" else 0.02 for _ in passages]

    proposal = Proposal(SENTENCES[0], support_ids=(1,), asks="when was it opened")
    question = "when was the Acme bridge opened, and what river does it span"
    verdicts = Verifier(ScriptedNLI(), _FixedRelevance(0.9), check=ByQuery()).verify(
        question, [proposal], _pool(embedder)
    )
    assert verdicts[0].accepted, verdicts[0].reason
    alone = Proposal(SENTENCES[0], support_ids=(1,))
    refused = Verifier(ScriptedNLI(), _FixedRelevance(0.9), check=ByQuery()).verify(
        question, [alone], _pool(embedder)
    )
    assert not refused[0].accepted and "near miss" in refused[0].reason
