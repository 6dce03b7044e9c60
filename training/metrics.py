"""Held-out metrics shared by the training scripts (validation) and ``training/evaluate.py`` (test sets)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

__all__ = ["accuracy_f1", "mrr_at_k"]


def accuracy_f1(
    gold: Sequence[str], pred: Sequence[str], classes: Sequence[str]
) -> tuple[float, dict[str, float]]:
    """Accuracy and per-class F1 (F1 is 0 for a class never predicted nor present)."""
    g = np.asarray(gold)
    p = np.asarray(pred)
    f1 = {}
    for c in classes:
        tp = float(np.sum((g == c) & (p == c)))
        denom = float(np.sum(g == c) + np.sum(p == c))
        f1[c] = 2 * tp / denom if denom else 0.0
    return float(np.mean(g == p)), f1


def mrr_at_k(
    groups: Sequence[Hashable], labels: Sequence[int], scores: Sequence[float], k: int = 10
) -> tuple[float, int]:
    """Mean reciprocal rank of the first relevant item within the top ``k`` of each group.

    Groups with no relevant or no irrelevant candidate are skipped (their rank says nothing about the model),
    which is the usual protocol for WikiQA and TrecQA. Ties are broken pessimistically so that a model that
    scores everything equally gets no credit. Returns (MRR, number of groups counted).
    """
    by_group: dict[Hashable, list[tuple[float, int]]] = {}
    for g, y, s in zip(groups, labels, scores, strict=True):
        by_group.setdefault(g, []).append((float(s), int(y)))
    rr = []
    for items in by_group.values():
        ys = {y for _, y in items}
        if ys != {0, 1}:
            continue
        ranked = sorted(items, key=lambda t: (-t[0], t[1]))
        first = next(i for i, (_, y) in enumerate(ranked) if y == 1)
        rr.append(1.0 / (first + 1) if first < k else 0.0)
    return (float(np.mean(rr)) if rr else 0.0), len(rr)
