"""The listwise loss ranks each question's answers above its own near misses, and grouped batches keep a
question's rows together."""

from __future__ import annotations

import random

import torch

from training.listwise import listwise_loss
from training.loop import _group_batches


def _loss(logits: list[float], goals: list[float], groups: list[int]) -> float:
    return float(listwise_loss(torch.tensor(logits), torch.tensor(goals), torch.tensor(groups)))


def test_an_answer_rated_above_its_near_misses_costs_less_than_one_rated_below() -> None:
    assert _loss([3.0, 0.0, 0.0], [1, 0, 0], [7, 7, 7]) < _loss([0.0, 3.0, 0.0], [1, 0, 0], [7, 7, 7])


def test_the_loss_compares_rows_only_within_their_own_question() -> None:
    alone = _loss([2.0, 1.0], [1, 0], [1, 1])
    beside = _loss([2.0, 1.0, 9.0, 9.0], [1, 0, 0, 1], [1, 1, 2, 2])
    assert abs(beside - (alone + _loss([9.0, 9.0], [0, 1], [2, 2])) / 2) < 1e-6


def test_uncertain_rows_and_questions_without_both_kinds_are_left_out() -> None:
    assert _loss([2.0, 1.0, 50.0], [1, 0, 0.15], [1, 1, 1]) == _loss([2.0, 1.0], [1, 0], [1, 1])
    assert _loss([2.0, 1.0], [1, 1], [1, 1]) == 0.0


def test_the_loss_pushes_the_answer_up_and_the_near_miss_down() -> None:
    logits = torch.tensor([0.0, 0.0], requires_grad=True)
    listwise_loss(logits, torch.tensor([1.0, 0.0]), torch.tensor([3, 3])).backward()
    assert logits.grad is not None and logits.grad[0] < 0 < logits.grad[1]


def test_grouped_batches_hold_whole_questions_and_every_row_once() -> None:
    groups = [0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 4]
    batches = _group_batches(groups, [10] * len(groups), 4, random.Random(1))
    assert sorted(i for b in batches for i in b) == list(range(len(groups)))
    for batch in batches:
        for g in {groups[i] for i in batch}:
            assert {i for i, x in enumerate(groups) if x == g} <= set(batch)
        assert len(batch) <= 4


def test_grouped_batches_put_questions_of_like_length_together() -> None:
    groups = [g for g in range(40) for _ in range(2)]
    lengths = [10 if g % 2 else 300 for g in groups]
    batches = _group_batches(groups, lengths, 4, random.Random(3))
    assert all(len({lengths[i] for i in batch}) == 1 for batch in batches)


def test_with_uncertain_rows_counted_the_answer_must_also_rank_above_its_sections_other_units() -> None:
    below = _loss([2.0, 0.0, 1.0], [1, 0, 0.15], [1, 1, 1])
    counted = float(
        listwise_loss(torch.tensor([2.0, 0.0, 1.0]), torch.tensor([1, 0, 0.15]), torch.tensor([1] * 3), True)
    )
    assert counted > below
    above = float(
        listwise_loss(torch.tensor([2.0, 0.0, 5.0]), torch.tensor([1, 0, 0.15]), torch.tensor([1] * 3), True)
    )
    assert above > counted
