"""Embedder triplets from the questions written in users' words (``docs_faq/users_written*.jsonl.gz``).

A usable written row names a mined row (its line number in ``pairs.jsonl.gz``, or in
``heading_overflow.jsonl.gz`` for the overflow file) and asks it three ways its mined answer answers:
``plain``, ``situation`` and ``terse``. Each style gives one triplet:

- the query: the written question;
- the positive: the mined answer as the embedding queue embeds it (``embedder_data.embedded_text``);
- the hard negatives: the mined near misses located on the parsed pages outside the answer's section, then
  a unit of another section of the same page (as ``embedder_data.docs_triplets`` builds them);
- ``near_miss``: the row's ``near_miss`` question, which the positive does not answer. The trainer scores the
  positive against the batch's questions and these, so the answer is pulled to its own question and away
  from a question on the same page that it does not answer.

The triplet's ``group`` is the mined row's, so a written question and the mined question of one answer are
never each other's negatives. Only repositories whose role in ``training.docs_split`` is in ``roles`` (train
by default) are read, and rows not ``usable`` are skipped.
"""

from __future__ import annotations

import random
from pathlib import Path

from training.docs_pages import RepoIndex, read_corpus
from training.docs_written import STYLES, joined_rows
from training.embedder_data import Triplet, row_answer

__all__ = ["written_triplets"]


def written_triplets(
    files: list[Path], roles: tuple[str, ...] = ("train",), *, seed: int = 0
) -> list[Triplet]:
    """One triplet per written style of every usable row of `files` in the repositories of `roles`; a row
    whose mined answer is not found on its page gives none."""
    rng = random.Random(seed)
    out: list[Triplet] = []
    for file in files:
        source = f"written/{file.name.split('.')[0]}"
        by_repo = joined_rows(file, roles)
        for repository in sorted(by_repo):
            index = RepoIndex(read_corpus(file.parent / "corpus", repository))
            for row, written in by_repo[repository]:
                answer = row_answer(row, index, rng)
                if answer is None:
                    continue
                positive, negatives, group = answer
                near = str(written.get("near_miss") or "").strip()
                for style in STYLES:
                    query = str(written.get(style) or "").strip()
                    if query:
                        out.append(Triplet(query, positive, negatives, group, f"{source}/{style}", near))
    return out
