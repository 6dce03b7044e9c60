"""The question matcher reads each (new, earlier) pair both ways round and the memory takes the mean: which of
two wordings was asked first is an accident, and a cross-encoder reads the two orders differently."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from engine.crossencoders import PairScorer, load_question_match
from engine.memory import MemoryConfig, recall
from engine.search import Filters
from indexer.remembered import Remembered
from tests.engine_support import ScriptedPairs

NEW = "Can I keep the cache on another disk?"
EARLIER = "How do I change where the cache is stored?"
OTHER = "How big can the cache get?"


class _OneSided:
    """A scripted matcher (the trained one is read below) that scores a pair by which text comes first."""

    def __init__(self, forward: dict[str, float], backward: dict[str, float]) -> None:
        self.forward, self.backward = forward, backward
        self.calls = 0

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls += 1
        if query == NEW:
            return [self.forward[p] for p in passages]
        return [self.backward[query] for _ in passages]


def _earlier() -> ScriptedPairs:
    now = datetime.now(UTC)
    return ScriptedPairs(
        Remembered(EARLIER, "a1", now, 1, 0.6, question_key="earlier"),
        Remembered(OTHER, "a2", now, 2, 0.6, question_key="other"),
    )


def test_the_score_is_the_mean_of_the_two_orders_and_one_way_reads_only_the_new_question_first() -> None:
    matcher = _OneSided({EARLIER: 0.1, OTHER: 0.15}, {EARLIER: 0.9, OTHER: 0.05})
    config = MemoryConfig(match_similarity=0.4, min_match=0.3, vouch_match=0.3, min_lead=0.05)

    [offered] = recall(_earlier(), NEW, [1.0], Filters(), config, matcher)
    assert (offered.sentence_id, offered.similarity) == (1, 0.5)
    assert matcher.calls == 3, "read one way in one call, the other one pair at a time"

    one_way = MemoryConfig(match_similarity=0.4, min_match=0.3, vouch_match=0.3, both_ways=False)
    assert recall(_earlier(), NEW, [1.0], Filters(), one_way, matcher) == []


def test_the_shipped_matcher_reads_both_orders_in_one_batch_and_agrees_with_reading_them_apart() -> None:
    matcher = load_question_match()
    assert isinstance(matcher, PairScorer)
    batched = matcher.score_pairs([(NEW, EARLIER), (EARLIER, NEW), (NEW, OTHER)])
    apart = [matcher.score(a, [b])[0] for a, b in ((NEW, EARLIER), (EARLIER, NEW), (NEW, OTHER))]
    assert all(0.0 <= s <= 1.0 for s in batched)
    assert batched == pytest.approx(apart, abs=1e-3)
    assert batched[0] != batched[1], "the two orders are read differently"


def test_the_accepted_sentences_own_score_counts_only_where_both_orders_reach_the_gate() -> None:
    asked: list[list[int]] = []

    def answers_it(question: str, sentence_ids: Sequence[int]) -> dict[int, float]:
        asked.append(list(sentence_ids))
        return dict.fromkeys(sentence_ids, 1.0)

    config = MemoryConfig(match_similarity=0.4, min_match=0.2, vouch_match=0.2, answer_gate=0.05)
    one_order_differs = _OneSided({EARLIER: 0.02, OTHER: 0.0}, {EARLIER: 0.5, OTHER: 0.0})
    [offered] = recall(_earlier(), NEW, [1.0], Filters(), config, one_order_differs, answers_it)
    assert (offered.sentence_id, offered.similarity, asked) == (1, 0.26, []), "not rated: the matcher alone"

    both_reach = _OneSided({EARLIER: 0.1, OTHER: 0.0}, {EARLIER: 0.5, OTHER: 0.0})
    [offered] = recall(_earlier(), NEW, [1.0], Filters(), config, both_reach, answers_it)
    assert (offered.sentence_id, round(offered.similarity, 6), asked) == (1, 0.65, [[1]])
