"""The reader's soft labels for the 1.5B rewrites: how far a rewrite's mined answer still answers it, as the
round-trip check (``rewrite_checks.jsonl.gz``) read it, used as the answer's training target when the row is
asked in that rewrite (``DocsRecipe.reader_soft``).

The check read each rewrite with four numbered passages (the answer and up to three mined near misses) and
named the ones that answer, or NONE. The reader is itself wrong at times, so its reply weights the rewrite
rather than labels it: docs4u dropped the rewrites the check showed to miss the answer and kept the rest at
full weight; here every rewrite is kept, at the target its check earned. The targets were set once, before
any measurement, from the README's hand reading (about 6 rewrites in 10 keep the meaning) and the check's
own rates (it picks the answer for 0.68, the answer alone for 0.44):

- the answer alone: ``ALONE`` (the reader and the rewrite agree);
- the answer and a near miss: ``WITH_NEAR_MISS`` (the rewrite may have widened);
- not checked: ``UNCHECKED`` (the prior: about 6 in 10 keep the meaning);
- NONE: ``NONE``; a near miss only: ``NEAR_MISS_ONLY`` (the rewrite likely drifted to another question).
"""

from __future__ import annotations

from pathlib import Path

from training.data import read_jsonl
from training.docs_split import role

__all__ = [
    "ALONE",
    "NEAR_MISS_ONLY",
    "NONE",
    "UNCHECKED",
    "WITH_NEAR_MISS",
    "read_checks",
    "reader_rewrites",
    "rewrite_texts",
]

ALONE = 0.9
WITH_NEAR_MISS = 0.6
UNCHECKED = 0.6
NONE = 0.3
NEAR_MISS_ONLY = 0.1

Key = tuple[str, str, str]
"""(repo, kind, mined question)."""


def _goal(check: dict[str, object] | None) -> float:
    if check is None:
        return UNCHECKED
    if check["picks_answer"]:
        return WITH_NEAR_MISS if check["picks_near_miss"] else ALONE
    return NEAR_MISS_ONLY if check["picks_near_miss"] else NONE


def rewrite_texts(row: dict[str, object]) -> list[str]:
    """A ``paraphrases.jsonl.gz`` row's rewrites, stripped, less the empty and the too short (under 8
    characters)."""
    rewrites = row.get("rewrites") or []
    assert isinstance(rewrites, list)
    return [t for t in (str(w["text"]).strip() for w in rewrites) if len(t) >= 8]


def read_checks(data: Path) -> dict[tuple[str, str, str, str], dict[str, object]]:
    """The round-trip checks of `data` (``traindata/docs_faq``), by (repo, kind, mined question, rewrite)."""
    return {
        (r["repo"], r["kind"], r["question"], r["rewrite"]): r
        for r in read_jsonl(data / "rewrite_checks.jsonl.gz")
    }


def reader_rewrites(
    data: Path, roles: tuple[str, ...] = ("train",)
) -> tuple[dict[Key, list[str]], dict[tuple[str, str, str, str], float]]:
    """Every non-empty rewrite (8 characters or more) of the repositories in `roles`, by row, and each
    rewrite's target for its row's answer (keyed by the row's key and the rewrite), from `data`
    (``traindata/docs_faq``)."""
    checks = read_checks(data)
    texts: dict[Key, list[str]] = {}
    goals: dict[tuple[str, str, str, str], float] = {}
    for row in read_jsonl(data / "paraphrases.jsonl.gz"):
        if role(str(row["repo"])) not in roles:
            continue
        key = (str(row["repo"]), str(row["kind"]), str(row["question"]))
        kept = rewrite_texts(row)
        if kept:
            texts[key] = kept
        for text in kept:
            goals[(*key, text)] = _goal(checks.get((*key, text)))
    return texts, goals
