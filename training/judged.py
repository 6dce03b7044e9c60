"""Relevance rows from a strong reader's judgement of citeline's own candidates (`judged_candidates`).

Each judged question lists the engine's search top 10 for it, each candidate read with its heading path and
labelled 2 (answers the question), 1 (partly: part of the answer, the answer only with the next sentence,
a closely related case) or 0 (does not answer). The cross-encoder reads a candidate as the engine rates it
(`engine.search.headed_text`), so what it learns here is what it is asked at run time: which of the
sentences that search found answers, told apart from the premise, the neighbour and the near miss.

Only the training repositories of `training.docs_split` are read: a file that holds another role's row is
refused, since a judged held-out question would leak into every figure measured there.
"""

from __future__ import annotations

from pathlib import Path

from engine.search import headed_text
from training.data import RelRow, read_jsonl
from training.docs_split import role

__all__ = ["PARTLY_TARGET", "load_judged"]

PARTLY_TARGET = 0.3
"""What a candidate judged as partly answering is trained towards: below the relevance floor (0.35), so a
premise or a neighbour of the answer is not emitted on its own, and above what does not answer at all."""

_TARGETS = {2: 1.0, 1: PARTLY_TARGET, 0: 0.0}


def load_judged(path: Path) -> list[RelRow]:
    """One group per judged question (`judged:REPO:QUESTION`), one row per candidate: label 1 for an answer
    (target 1), 0 otherwise (target `PARTLY_TARGET` for a partial answer, else 0). Raises ValueError on a
    row of a held-out or tune repository, or a label outside 0-2."""
    rows: list[RelRow] = []
    for item in read_jsonl(path):
        repo = str(item["repo"])
        if role(repo) != "train":
            raise ValueError(f"{path}: {repo} is a {role(repo)} repository; judge training ones only")
        question = str(item["question"])
        group = f"judged:{repo}:{question}"
        for candidate in item["candidates"]:
            label = int(candidate["label"])
            if label not in _TARGETS:
                raise ValueError(f"{path}: label {label} for {question!r} is not 0, 1 or 2")
            heading = str(candidate.get("heading") or "")
            passage = headed_text(heading.split(" > ") if heading else (), str(candidate["text"]))
            rows.append(RelRow(question, passage, int(label == 2), group, "docs_faq/judged", _TARGETS[label]))
    return rows
