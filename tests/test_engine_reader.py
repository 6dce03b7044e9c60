"""The reader's prompt and its strict parse, the rewriter's parse, and the verification rule that makes a
reader's verdict count: each rule on known inputs, with fake rating models (a rule, not a model's mood,
decides) and the real all-MiniLM-L6-v2 for the semantic stage. The reader against a scripted endpoint and
through the engine: `tests/test_reader_engine.py`; against a real llama.cpp server: `tests/test_real_llm.py`.
"""

from __future__ import annotations

import math

import pytest

from engine.answers import Stage
from engine.evidence import EvidencePool
from engine.reader import Passage, p_none, parse_reading, parse_rewrites, reader_messages, rewrite_messages
from engine.search import Hit
from engine.verdicts import Chooser, Proposal, VerifyConfig
from engine.verify import Verifier
from indexer.embedder import EmbeddingModel
from tests.engine_support import ContainmentNLI, FixedRating

QUESTION = "How do I reload the gateway configuration?"
ANSWER = "To reload the gateway configuration, send SIGHUP to the gateway process."
NEAR = "The gateway reads its configuration from /etc/gateway/gateway.toml when it starts."


def test_the_prompt_numbers_each_candidate_under_its_heading_and_shows_a_code_block_after_its_intro() -> None:
    shown = [
        Passage(7, ("Gateway", "Configuration"), NEAR),
        Passage(9, ("Gateway", "Reload"), "kill -HUP $(pidof gateway)", intro="Reload it with:"),
    ]
    system, user = reader_messages(QUESTION, shown)
    assert system["role"] == "system" and "NONE" in system["content"]
    assert user["content"].startswith(f"Question: {QUESTION}\n")
    assert f"[1] (Gateway > Configuration) {NEAR}" in user["content"]
    assert "[2] (Gateway > Reload) Reload it with:\nkill -HUP $(pidof gateway)" in user["content"]


@pytest.mark.parametrize(
    ("reply", "numbers"),
    [
        ("2", (2,)),
        ("1, 3", (1, 3)),
        ("[3, 1, 3]", (3, 1)),
        (" NONE ", ()),
        ("none.", ()),
        ("2 and 4", (2, 4)),
        ("[1], [4]", (1, 4)),
    ],
)
def test_a_reading_names_passage_numbers_or_none(reply: str, numbers: tuple[int, ...]) -> None:
    assert parse_reading(reply, 4) == numbers


@pytest.mark.parametrize("reply", ["", "Passage 2", "2: it says to send SIGHUP", "5", "0", "NONE, 2"])
def test_anything_else_is_a_malformed_reading(reply: str) -> None:
    with pytest.raises(ValueError, match=r"not passage numbers or NONE|not in 1\.\.4"):
        parse_reading(reply, 4)


def test_the_probability_of_none_sums_the_first_token_alternatives_that_spell_it() -> None:
    first = [("1", math.log(0.5)), ("NONE", math.log(0.3)), (" N", math.log(0.1)), ("No", math.log(0.05))]
    assert p_none(first) == pytest.approx(0.4)  # "No" does not spell NONE's start in capitals
    assert p_none([]) is None


def test_rewrites_drop_list_marks_the_question_itself_and_repeats_and_keep_two() -> None:
    reply = (
        f'1. reload configuration SIGHUP\n- {QUESTION}\n\n2) reload configuration SIGHUP\n"gateway reload"\n'
    )
    reply += "a third one"
    assert parse_rewrites(reply, QUESTION) == ["reload configuration SIGHUP", "gateway reload"]
    with pytest.raises(ValueError, match="no rewrite"):
        parse_rewrites(f"{QUESTION}\n\n", QUESTION)
    assert "- Gateway > Reload" in rewrite_messages(QUESTION, ["Gateway > Reload"])[1]["content"]


def _pool(embedder: EmbeddingModel) -> EvidencePool:
    pool = EvidencePool(embedder)
    hits = [
        Hit(i, t, "docs", "gateway.md", i, i, ("Gateway",), 1, i, None, True)
        for i, t in enumerate([NEAR, ANSWER], 1)
    ]
    pool.add(hits, 1, 2)
    return pool


def _verdicts(
    embedder: EmbeddingModel, relevance: float, check: float, config: VerifyConfig | None = None
) -> dict[str, bool]:
    """Whether the answer is accepted when the reader chose it, when the extractive planner did, and when the
    extractive planner did in a round the reader declined."""
    proposals = {
        "reader": Proposal(ANSWER, support_ids=(2,), chosen_by=Chooser.READER),
        "extractive": Proposal(ANSWER, support_ids=(2,)),
        "declined": Proposal(ANSWER, support_ids=(2,), declined=True),
    }
    verifier = Verifier(ContainmentNLI(), FixedRating(relevance), config, check=FixedRating(check))
    out = {}
    for name, proposal in proposals.items():  # one at a time: each is judged alone
        verdict = verifier.verify(QUESTION, [proposal], _pool(embedder))[0]
        out[name] = verdict.accepted
        if not verdict.accepted:
            assert verdict.stage is Stage.RELEVANCE
    return out


def test_a_unit_the_reader_chose_is_not_refused_by_the_relevance_floor_alone(
    embedder: EmbeddingModel,
) -> None:
    assert _verdicts(embedder, relevance=0.1, check=0.9) == {
        "reader": True,
        "extractive": False,
        "declined": False,
    }


def test_a_unit_the_reader_chose_is_not_refused_by_the_answer_check_alone(embedder: EmbeddingModel) -> None:
    assert _verdicts(embedder, relevance=0.9, check=0.02) == {
        "reader": True,
        "extractive": False,
        "declined": False,
    }


def test_a_unit_both_models_rate_low_is_refused_though_the_reader_chose_it(embedder: EmbeddingModel) -> None:
    assert _verdicts(embedder, relevance=0.1, check=0.02) == {
        "reader": False,
        "extractive": False,
        "declined": False,
    }


def test_a_clause_of_a_round_the_reader_declined_meets_the_declined_floors(embedder: EmbeddingModel) -> None:
    config = VerifyConfig(min_relevance_declined=0.8)
    assert _verdicts(embedder, relevance=0.6, check=0.9, config=config) == {
        "reader": True,
        "extractive": True,
        "declined": False,
    }
