"""The relevance model's yes/no questions, made from NLI pairs (`training.polar`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from training.polar import load_polar, polar_question
from training.train_relevance import _load


@pytest.mark.parametrize(
    ("statement", "question"),
    [
        ("A man is sleeping on the couch.", "Is a man sleeping on the couch?"),
        ("There are several rules about bids.", "Are there several rules about bids?"),
        ("Prometheus can reload its configuration.", "Can Prometheus reload its configuration?"),
        ("The old policy wasn't going to help anyone.", "Wasn't the old policy going to help anyone?"),
        ("I will take the train.", "Will I take the train?"),
        ("The magazine subscribers have lived longer.", "Have the magazine subscribers lived longer?"),
    ],
)
def test_an_auxiliary_moves_in_front_of_the_subject(statement: str, question: str) -> None:
    assert polar_question(statement) == question


@pytest.mark.parametrize(
    "statement",
    [
        "The man plays the guitar.",  # no auxiliary: "Does ... play" needs a lemmatizer
        "He has a car.",  # "has" is the main verb
        "In 1990, the team was sold.",  # a comma before the auxiliary
        'The sign says "closed" now.',
        "Is it raining?",
        "Too short",
    ],
)
def test_a_statement_without_a_clear_auxiliary_gives_no_question(statement: str) -> None:
    assert polar_question(statement) is None


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    return path


def test_a_premise_that_settles_the_question_answers_it_and_a_neutral_one_does_not(tmp_path: Path) -> None:
    premise = "The shop closes at noon on Sundays."
    file = _write(
        tmp_path / "train.jsonl.gz",
        [
            {"premise": premise, "hypothesis": "The shop is open on Sunday mornings.", "label": "entailment"},
            {"premise": premise, "hypothesis": "The shop is open all Sunday.", "label": "contradiction"},
            {"premise": premise, "hypothesis": "The shop is run by a family.", "label": "neutral"},
            {"premise": premise, "hypothesis": "The shop sells bread.", "label": "neutral"},  # no auxiliary
            {"premise": premise, "hypothesis": "The shop is closed.", "label": "not_entailment"},  # 2-way
        ],
    )
    rows = load_polar(file)
    assert [(r.query, r.label) for r in rows] == [
        ("Is the shop open on Sunday mornings?", 1),
        ("Is the shop open all Sunday?", 1),
        ("Is the shop run by a family?", 0),
    ]
    assert {r.passage for r in rows} == {premise}
    assert len({r.group for r in rows}) == 1  # one premise, one ranking of questions


def test_the_relevance_recipe_reads_nli_files_as_polar_questions_and_others_as_relevance(
    tmp_path: Path,
) -> None:
    nli = _write(
        tmp_path / "nli.jsonl.gz",
        [{"premise": "It rained all day.", "hypothesis": "The ground is wet.", "label": "entailment"}],
    )
    rel = _write(
        tmp_path / "rel.jsonl.gz", [{"query": "when did it rain", "passage": "It rained.", "label": "1"}]
    )
    assert [r.query for r in _load(nli)] == ["Is the ground wet?"]
    assert [(r.query, r.label) for r in _load(rel)] == [("when did it rain", 1)]
