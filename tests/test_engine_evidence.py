"""What the evidence pool holds beside the hits: the neighbour a sentence leans on, and relevance ratings."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.contexts import SentenceContext, leans_on
from engine.evidence import EvidencePool
from engine.search import Hit


def _hit(text: str, sentence_id: int = 7) -> Hit:
    return Hit(sentence_id, text, "docs", "guide.md", 3, 3, ("Guide",), 1, 2, None, True)


NEIGHBOURS = SentenceContext("The sentence before.", None, previous_id=6, next_id=8)


@pytest.mark.parametrize(
    ("text", "neighbour"),
    [
        ("To reload the configuration, send this request:", 8),
        ("This is also disabled by default.", 6),
        ("These flags are experimental.", 6),
        ("It lives in the target folder.", 6),
        ("It just works!", 6),
        ("Then we need to examine it.", 6),
        ("However, the flag is ignored on every Windows host.", 6),
        ("Also reloads the rules when the file changes on disk.", 6),
        ("Restart the server.", 6),
        ("The default scrape timeout is 10 seconds.", None),
        ("Items in this list are sorted by date.", None),
        ("Thereafter the scrape timeout applies to every target.", None),
    ],
)
def test_a_sentence_leans_on_the_unit_it_introduces_or_the_one_it_points_back_to(
    text: str, neighbour: int | None
) -> None:
    assert leans_on(_hit(text), NEIGHBOURS) == neighbour


def test_a_code_block_is_read_with_the_sentence_that_introduces_it() -> None:
    code = SentenceContext("Send this request:", None, kind="code", previous_id=6, next_id=8)
    assert leans_on(_hit("curl -X POST http://localhost:9090/-/reload"), code) == 6


def test_no_neighbour_is_taken_across_a_heading_or_the_documents_edge() -> None:
    first_in_section = SentenceContext(None, None, previous_id=None, next_id=None)
    assert leans_on(_hit("This is the first sentence."), first_in_section) is None
    assert leans_on(_hit("Run this:"), first_in_section) is None
    assert leans_on(_hit("Run this:"), None) is None


class CountingRelevance:
    """Scores a passage by how many of the query's words it holds; counts the passages it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.asked += passages
        words = set(query.lower().split())
        return [len(words & set(p.lower().split())) / len(words) for p in passages]


def test_each_sentence_is_rated_once_and_read_under_its_heading() -> None:
    pool = EvidencePool(None)
    model = CountingRelevance()
    first, second = _hit("It lives in the target folder.", 1), _hit("Bread rises.", 2)
    question = "where does the guide say it lives"
    pool.rate(question, model, [first, second])
    rated = pool.rate(question, model, [first])
    assert model.asked == ["Guide: It lives in the target folder.", "Guide: Bread rises."]
    assert rated[1] > rated[2] == pool.rating(question, second)
    assert pool.rating("another question", first) == 0.0


def test_a_sentence_read_on_its_own_leaves_its_heading_out_and_takes_its_companion_in() -> None:
    pool = EvidencePool(None)
    intro, pointing, plain = (
        _hit("To clean it, run this command:", 1),
        _hit("This is disabled by default.", 2),
        _hit("The build cache can grow large.", 3),
    )
    pool.contexts[1] = SentenceContext(
        "The build cache can grow large.", None, next_id=9, following="cargo clean"
    )
    pool.contexts[2] = SentenceContext(
        "The lifecycle flag adds endpoints.", None, previous_id=8, next_id=None
    )
    pool.contexts[3] = SentenceContext(None, None, next_id=1, following="To clean it, run this command:")
    model = CountingRelevance()
    rated = pool.rate_own("how do I clean the build cache", model, [intro, pointing, plain, intro])
    assert model.asked == [
        "To clean it, run this command: cargo clean",
        "The lifecycle flag adds endpoints. This is disabled by default.",
        "The build cache can grow large.",
    ]
    assert set(rated) == {1, 2, 3}
    assert pool.own_rating("how do I clean the build cache", plain) == rated[3]
    assert pool.own_rating("another question", plain) is None
    assert pool.rating("how do I clean the build cache", plain) == 0.0  # the headed rating is apart


def test_a_question_line_states_nothing_and_introduces_the_units_up_to_the_next_question() -> None:
    pool = EvidencePool(None)

    def unit(sentence_id: int, text: str, heading: str = "FAQ") -> Hit:
        return Hit(sentence_id, text, "docs", "faq.md", 1, 1, (heading,), 1, sentence_id, None, True)

    asked = unit(1, "Can I rename a table?")
    units = [
        asked,
        unit(2, "Yes."),
        unit(3, "Use **RENAME TABLE**."),
        unit(4, "Can I drop it?"),
        unit(5, "No."),
    ]
    pool.add([*units, unit(6, "Tables hold rows.", heading="Intro")], 1, 100)
    assert pool.states_nothing(asked) and pool.is_question(unit(7, "**Why not?**"))
    assert not pool.states_nothing(units[1]) and not pool.is_question(unit(8, 'The song "Why?" charted.'))
    assert [h.sentence_id for h in pool.answer_block(asked)] == [2, 3]


def test_a_unit_a_question_line_introduces_is_read_under_it_and_rated_again() -> None:
    pool = EvidencePool(None)

    def unit(sentence_id: int, text: str) -> Hit:
        return Hit(sentence_id, text, "docs", "faq.md", 1, 1, ("FAQ",), 1, sentence_id, None, True)

    asked, answer, other = (
        unit(1, "What happens on a NULL timestamp?"),
        unit(2, "The insert fails."),
        unit(3, "Why?"),
    )
    pool.add([asked, answer, other], 1, 100)
    pool.ratings["q"] = {2: 0.1}
    assert pool.headed(answer) == "FAQ: The insert fails."
    assert pool.read_under(asked) == [answer]
    assert pool.headed(answer) == "FAQ > What happens on a NULL timestamp?: The insert fails."
    assert 2 not in pool.ratings["q"]  # rated again, under the question it answers
