"""A listwise loss for a relevance cross-encoder: each question's answers against its own near misses.

Pointwise binary cross-entropy rates every (question, passage) pair on its own, so a model can lower a
reworded question's answer and its near misses together and still fit: what it learns is where the scores
sit. Ranking the answer above the near misses of the same question is what choosing an answer needs, and a
softmax over each question's rows asks for exactly that (a localized contrastive loss: Gao et al., 2021,
"Rethink Training of BERT Rerankers in Multi-Stage Retrieval Pipeline"). It is added to the pointwise loss,
which keeps the scores calibrated for the verifier's floors.

A unit of the answer's own section outside its paragraph has an uncertain target (it may answer) and is left
out of the softmax by default; counted in, the answer must also rank above the link or the aside beside it,
which a reworded question cannot tell apart from it by the heading they share.
"""

from __future__ import annotations

import torch

__all__ = ["listwise_loss"]


def listwise_loss(
    logits: torch.Tensor, goals: torch.Tensor, groups: torch.Tensor, uncertain: bool = False
) -> torch.Tensor:
    """Over the batch's groups that hold an answer (goal 1) and a near miss (goal 0), the mean of minus the
    log of the answers' share of the softmax over both. Rows with an uncertain goal (between 0 and 1) are
    left out, or with `uncertain` counted among what the answers must rank above: a unit of the answer's
    section that may answer, such as a link or a step after it. Zero (with a gradient) where no group
    qualifies."""
    losses = []
    for group in torch.unique(groups):
        rows = groups == group
        if not uncertain:
            rows &= (goals == 1.0) | (goals == 0.0)
        answers = goals[rows] == 1.0
        if not answers.any() or answers.all():
            continue
        scores = logits[rows]
        losses.append(torch.logsumexp(scores, 0) - torch.logsumexp(scores[answers], 0))
    return torch.stack(losses).mean() if losses else logits.sum() * 0.0
