"""Routing without an LLM: question shape features and the first retrieval's confidence decide the route."""

from __future__ import annotations

import pytest

from engine.answers import Route
from engine.routing import RoutingConfig, question_parts, route, shape
from engine.search import Hit
from engine.words import content_terms, entities, stem


def _hits(*scores: float, key: str = "rerank") -> list[Hit]:
    return [
        Hit(i, f"sentence {i}", "docs", "a.md", i, i, (), 1, i, None, True, scores={key: s, "fused": 0.03})
        for i, s in enumerate(scores, start=1)
    ]


@pytest.mark.parametrize(
    ("question", "comparison", "bridge"),
    [
        ("Which is older, the Rose Bowl or the Sugar Bowl?", True, False),
        ("Are Joe Walsh and Chester Bennington both guitarists?", True, False),
        ("What game did the team that won 11 games play in?", False, True),
        ("When was the pianist who recorded Live at the Manne-Hole born?", False, True),
        ("Is Muskegon County Airport or John Wayne Airport further west?", True, False),
        ("Is the bridge open on Sundays?", False, False),
        ("Bill Nelson flew on a shuttle launched for the first time in what year?", False, False),
        ("Is the Rhine longer than the Elbe?", True, False),
        ("why does bread dough rise", False, False),
    ],
)
def test_shape_features(question: str, comparison: bool, bridge: bool) -> None:
    features = shape(question)
    assert features.comparison is comparison
    assert features.bridge is bridge
    assert features.hops == (2 if comparison or bridge or len(features.entities) >= 2 else 1)


def test_entities_and_content_terms() -> None:
    assert entities("Are Joe Walsh and Chester Bennington both guitarists?") == [
        "Joe Walsh",
        "Chester Bennington",
    ]
    assert content_terms("Why does the bread dough rise so fast?") == ["bread", "dough", "rise", "fast"]


def test_words_and_names_in_any_script_stay_whole() -> None:
    question = "Were the Prológica CP-400 and the Commodore 16 made where Élie and Lars Høgh lived?"
    assert {"prológica", "høgh", "élie"} <= set(content_terms(question))
    assert "gica" not in content_terms(question)
    assert {"Prológica CP-400", "Élie", "Lars Høgh"} <= set(entities(question))
    # A dash between digits is a hyphen, whichever dash the page used; between words it separates them.
    assert content_terms("a 2–6 record, 1998—2008") == content_terms("a 2-6 record, 1998-2008")
    assert content_terms("Goulding—Martin") == ["goulding", "martin"]


def test_confident_single_fact_goes_fast() -> None:
    decision = route("why does bread dough rise", _hits(0.93, 0.20))
    assert decision.route is Route.FAST


@pytest.mark.parametrize(
    ("question", "hits", "reason"),
    [
        ("why does bread dough rise", _hits(0.93, 0.90), "not confident"),  # no clear winner
        ("why does bread dough rise", _hits(0.30, 0.01), "not confident"),  # clear but weak
        ("why does bread dough rise", [], "not confident"),
        ("why does bread dough rise", _hits(0.93, 0.2, key="bm25"), "not confident"),  # BM25 is unscaled
        ("Which is older, the Rose Bowl or the Sugar Bowl?", _hits(0.95, 0.1), "comparison"),
        ("What game did the team that won the Sugar Bowl play in?", _hits(0.95, 0.1), "bridge"),
    ],
)
def test_multi_hop_shapes_and_unsure_retrievals_take_the_loop(
    question: str, hits: list[Hit], reason: str
) -> None:
    decision = route(question, hits)
    assert decision.route is Route.REASON
    assert any(reason in r for r in decision.reasons)


def test_routing_is_deterministic_and_configurable() -> None:
    hits = _hits(0.7, 0.5)
    assert route("why does bread dough rise", hits).route is Route.FAST
    strict = RoutingConfig(min_top_score=0.8)
    assert route("why does bread dough rise", hits, strict).route is Route.REASON
    assert [route("why does bread dough rise", hits).route for _ in range(3)] == [Route.FAST] * 3


@pytest.mark.parametrize(
    ("words", "same"),
    [
        (("defeated", "defeating", "defeats", "defeat"), True),
        (("produced", "produce", "producing"), True),
        (("casualties", "casualty"), True),
        (("stopped", "stop"), True),
        (("founded", "founder"), False),
        (("actress", "actor"), False),
        (("general", "generate"), False),
    ],
)
def test_stem_joins_inflections_and_nothing_more(words: tuple[str, ...], same: bool) -> None:
    assert (len({stem(w) for w in words}) == 1) is same


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "How do I enable the OTLP receiver, and on which HTTP path will it receive metrics?",
            ("How do I enable the OTLP receiver", "on which HTTP path will it receive metrics"),
        ),
        (
            "What is the default query timeout, and which flag changes it?",
            ("What is the default query timeout", "which flag changes it"),
        ),
        ("Where do the logs go? How long are they kept?", ("Where do the logs go", "How long are they kept")),
    ],
)
def test_a_question_that_asks_two_things_has_two_parts(question: str, parts: tuple[str, ...]) -> None:
    assert question_parts(question) == parts


@pytest.mark.parametrize(
    "question",
    [
        "Which city is larger, Paris or Lyon?",
        "Were Scott Derrickson and Ed Wood of the same nationality?",
        "Who directed the film and when?",
        "How do I reload the configuration without a restart?",
    ],
)
def test_one_question_with_an_and_stays_whole(question: str) -> None:
    assert question_parts(question) == (question,)
