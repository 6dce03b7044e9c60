"""Relevance pairs from the questions written in users' words (``docs_faq/users_written*.jsonl.gz``).

Each written row names a mined row of ``pairs.jsonl.gz`` (or, for the overflow file, of
``heading_overflow.jsonl.gz``) by its line number, and asks it three ways that its mined answer answers:
``plain``, ``situation`` and ``terse``. Its ``near_miss`` is a question on the same page that the mined answer
does not answer. What one usable row of a training repository gives, each style its own group:

- the mined row's passages as ``training.docs_mix.pairs_for_row`` rates them (the answer and its paragraph
  1, the nearest units of its section ``UNCERTAIN``, the mined near misses 0), trimmed to the answers, the
  first ``UNCERTAIN_KEPT`` uncertain units and the first ``NEAR_MISSES_KEPT`` near misses, so three styles
  cost about as much as two mined rows;
- in the ``plain`` group, the ``near_miss`` question against the mined answer, target 0: the same sentence,
  asked something it does not answer (the question-side hard negative).

Rows marked not ``usable`` are skipped, and only repositories whose role in ``training.docs_split`` is
``train`` are read: the held-out and tune rows are for measuring and choosing floors.
"""

from __future__ import annotations

from pathlib import Path

from training.data import RelRow, read_jsonl
from training.docs_mix import UNCERTAIN, RepoIndex, pairs_for_row, read_corpus
from training.docs_split import role

__all__ = [
    "MINED_FILE",
    "NEAR_MISSES_KEPT",
    "STYLES",
    "UNCERTAIN_KEPT",
    "Joined",
    "joined_rows",
    "load_written",
    "written_groups",
]

STYLES = ("plain", "situation", "terse")
"""The written questions a usable row has, each answered by its mined answer."""
MINED_FILE = {
    "users_written.jsonl.gz": "pairs.jsonl.gz",
    "users_written_overflow.jsonl.gz": "heading_overflow.jsonl.gz",
}
"""The mined file whose line numbers a written file's ``row`` names."""
UNCERTAIN_KEPT = 1
NEAR_MISSES_KEPT = 2


def _trimmed(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    kept = {UNCERTAIN: 0, 0.0: 0}
    limit = {UNCERTAIN: UNCERTAIN_KEPT, 0.0: NEAR_MISSES_KEPT}
    for passage, goal in pairs:
        if goal in limit:
            if kept[goal] >= limit[goal]:
                continue
            kept[goal] += 1
        out.append((passage, goal))
    return out


def written_groups(
    written: dict[str, object], pairs: list[tuple[str, float]], group: str, source: str
) -> list[RelRow]:
    """The relevance rows of one usable written row, given its mined row's ``pairs`` (answer first)."""
    if not pairs or not written.get("usable"):
        return []
    kept = _trimmed(pairs)
    out: list[RelRow] = []
    for style in STYLES:
        query = str(written.get(style) or "").strip()
        if not query:
            continue
        name = f"{group}:{style}"
        for passage, goal in kept:
            soft = None if goal in (0.0, 1.0) else goal
            out.append(RelRow(query, passage, int(goal == 1.0), name, source, soft))
        near = str(written.get("near_miss") or "").strip()
        if style == "plain" and near:
            out.append(RelRow(near, pairs[0][0], 0, name, source))
    return out


Joined = dict[str, list[tuple[dict[str, object], dict[str, object]]]]
"""Repository -> (mined row, written row) of every usable written row, in the mined file's order."""


def joined_rows(file: Path, roles: tuple[str, ...] = ("train",)) -> Joined:
    """The usable rows of a written file for the repositories whose role is in ``roles``, each joined to the
    mined row it names (``MINED_FILE``, beside it); a written row naming another question is an error."""
    mined_name = MINED_FILE.get(file.name)
    if mined_name is None:
        raise ValueError(f"{file.name}: not a users_written file ({', '.join(MINED_FILE)})")
    wanted: dict[int, dict[str, object]] = {
        int(w["row"]): w for w in read_jsonl(file) if w.get("usable") and role(str(w["repo"])) in roles
    }
    by_repo: Joined = {}
    for n, row in enumerate(read_jsonl(file.parent / mined_name)):
        written = wanted.get(n)
        if written is None:
            continue
        if (row["repo"], row["question"]) != (written["repo"], written["question"]):
            raise ValueError(f"{file.name}: row {n} names {written['question']!r}, the mined row differs")
        by_repo.setdefault(str(row["repo"]), []).append((row, written))
    return by_repo


def load_written(file: Path, roles: tuple[str, ...] = ("train",)) -> list[RelRow]:
    """Relevance rows from a written file, for the repositories whose role is in ``roles``; the mined file
    it names (``MINED_FILE``) and the ``corpus/`` folder are beside it."""
    by_repo = joined_rows(file, roles)
    source = f"docs_faq/{file.name.split('.')[0]}"
    out: list[RelRow] = []
    for repository in sorted(by_repo):
        index = RepoIndex(read_corpus(file.parent / "corpus", repository))
        for row, written in by_repo[repository]:
            group = f"written:{repository}:{row['path']}:{row['question']}"
            out += written_groups(written, pairs_for_row(row, index), group, source)
    return out
