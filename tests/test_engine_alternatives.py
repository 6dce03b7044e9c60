"""A lookup's close alternatives: when the best-rated candidates are nearly tied, the extractive planner
proposes a few, best first; a clear winner, a multi-hop question or the default of one clause proposes one.

No database and no models: the ratings are written into the evidence pool as the relevance model would.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.evidence import EvidencePool
from engine.planners import ExtractivePlanner
from engine.planning import PlannerState
from engine.routing import shape
from engine.search import Hit

QUESTION = "where does the tool keep its downloaded files"


def _hit(sentence_id: int, text: str, path: str = "dirs.md", kind: str = "sentence") -> Hit:
    return Hit(
        sentence_id,
        text,
        "docs",
        path,
        sentence_id,
        sentence_id,
        ("Directories",),
        1,
        sentence_id,
        None,
        True,
        kind=kind,
    )


def _state(question: str, rated: Sequence[tuple[Hit, float]]) -> PlannerState:
    pool = EvidencePool(None)
    pool.add([h for h, _ in rated], 1, 100)
    pool.ratings[question] = {h.sentence_id: r for h, r in rated}
    state = PlannerState(question, shape(question), pool, round=1)
    state.latest = [h for h, _ in rated]
    return state


def _proposed(state: PlannerState, clauses: int, margin: float = 0.1) -> list[int]:
    plan = ExtractivePlanner(lookup_clauses=clauses, lookup_margin=margin).plan(state, final=True)
    return [p.support_ids[0] for p in plan.proposals]


def test_nearly_tied_candidates_are_each_proposed_best_first() -> None:
    premise = _hit(1, "Downloaded tools can take a lot of space.")
    answer = _hit(2, "Tools are downloaded into ~/.local/share/tool/installs.")
    other = _hit(3, "Set TOOL_DATA_DIR to keep them somewhere else.")
    far = _hit(4, "The tool is written in Rust.")
    state = _state(QUESTION, [(premise, 0.80), (answer, 0.78), (other, 0.74), (far, 0.20)])
    assert _proposed(state, 3) == [1, 2, 3]


def test_a_clear_winner_is_proposed_alone() -> None:
    answer = _hit(1, "Tools are downloaded into ~/.local/share/tool/installs.")
    other = _hit(2, "Downloaded tools can take a lot of space.")
    state = _state(QUESTION, [(answer, 0.9), (other, 0.5)])
    assert _proposed(state, 3) == [1]


def test_one_clause_is_the_default_whatever_the_ratings() -> None:
    first, second = _hit(1, "Tools go into installs."), _hit(2, "Tools go into the cache first.")
    state = _state(QUESTION, [(first, 0.8), (second, 0.8)])
    assert len(ExtractivePlanner().plan(state, final=True).proposals) == 1


def test_code_blocks_and_repeated_text_are_never_alternatives() -> None:
    answer = _hit(1, "Tools are downloaded into ~/.local/share/tool/installs.")
    code = _hit(2, "ls ~/.local/share/tool/installs", kind="code")
    copy = _hit(3, "Tools are downloaded into ~/.local/share/tool/installs.", path="faq.md")
    state = _state(QUESTION, [(answer, 0.8), (code, 0.8), (copy, 0.8)])
    assert _proposed(state, 3) == [1]


def test_a_comparison_is_not_answered_with_alternatives() -> None:
    question = "Is Muskegon County Airport or John Wayne Airport further west?"
    a = _hit(1, "John Wayne Airport is in California.", path="a.md")
    b = _hit(2, "John Wayne Airport is in Orange County.", path="b.md")
    state = _state(question, [(a, 0.8), (b, 0.8)])
    assert len(_proposed(state, 3)) == 1
