"""Relevance pairs from ``traindata/docs_faq``, read the way citeline's index reads the same pages.

Each mined row names a page, a question (a heading) and the first sentence under it. The page is parsed
with citeline's own Markdown parser and segmenter, so every passage is a unit exactly as the engine rates
it: the sentence after its full heading path (``Hit.headed_text``), for answers and near misses alike. The
row is asked with its question as mined or in other words (``training.docs_queries.reworded``): a mined
question copies its heading word for word, users do not. What one row gives:

- the positive, target 1;
- the rest of the positive's paragraph (and the list it introduces), and the unit right after a positive
  that ends with a colon (the list item, code block or sentence it introduces), target 1;
- every other unit of the positive's section, target ``UNCERTAIN``: the mined positive is often background
  and the answer comes later, so such a unit may answer, but most do not (a warning, a link, a later step),
  and a heading that matches the question must not make every unit under it an answer;
- each mined near miss (other sections of the page, other answers of the repository), located in the
  parsed pages, target 0;
- with ``DocsRecipe.other_pages``, for a question row (``kind`` faq), the units of other pages that rank
  highest for it as asked (``training.docs_misses``: what the engine meets when the docs do not answer),
  target 0. A topic heading ("Create EKS cluster") is covered by other pages too often for them to count as
  misses.

Only repositories whose role in ``training.docs_split`` is ``train`` are read.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.search import headed_text
from indexer.markdown import TextUnit
from training.data import RelRow, norm_key, read_jsonl
from training.docs_misses import OtherPages
from training.docs_pages import CITABLE as _CITABLE
from training.docs_pages import DocsPage, RepoIndex, parse_page, read_corpus
from training.docs_queries import reworded
from training.docs_recipe import DocsRecipe
from training.docs_split import role
from training.docs_text import in_paragraph

if TYPE_CHECKING:
    from training.docs_dense import DenseMisses

__all__ = [
    "MAX_NEAR_MISSES",
    "MAX_UNCERTAIN",
    "UNCERTAIN",
    "DocsPage",
    "DocsRecipe",
    "RepoIndex",
    "Rewrites",
    "asked_as",
    "load_docs",
    "pairs_for_row",
    "parse_page",
    "read_corpus",
]


def _read(unit: TextUnit) -> str:
    return headed_text(unit.heading_path, unit.text)


def _bare(unit: TextUnit) -> str:
    return unit.text


MAX_UNCERTAIN = 2
"""Uncertain units kept per row: the ones nearest the answer (what follows it first), the hardest to tell
apart from it; a long section would otherwise outweigh its own answer many times over."""
MAX_NEAR_MISSES = 4
"""Mined near misses kept per row, in the miner's order (most words shared with the question first)."""

UNCERTAIN = 0.15
"""The target of a unit of the answer's section outside its paragraph: it may answer (the mined paragraph is
often background and the answer comes later), but most such units do not (a warning, a link, a later step)."""


def pairs_for_row(
    row: dict[str, object], index: RepoIndex, read: Callable[[TextUnit], str] = _read
) -> list[tuple[str, float]]:
    """(passage, target) pairs for one mined row; none when its positive is not found on its page. Every
    passage is read by `read`: by default under its full heading path, as the engine reads it."""
    path = str(row["path"])
    page = index.pages.get(path)
    start = page.find(str(row["positive"])) if page is not None else None
    if page is None or start is None:
        return []
    positive = page.units[start]
    out: list[tuple[str, float]] = [(read(positive), 1.0)]
    context = str(row.get("positive_context") or "")
    introduces = positive.text.rstrip().endswith(":")
    for i in range(start + 1, len(page.units)):
        unit = page.units[i]
        if unit.heading_path[: len(positive.heading_path)] != positive.heading_path:
            break  # the section ends at the next heading of its level or above
        if unit.kind not in _CITABLE:
            continue
        answers = in_paragraph(unit.text, context) or (introduces and i == start + 1)
        if answers or sum(goal == UNCERTAIN for _, goal in out) < MAX_UNCERTAIN:
            out.append((read(unit), 1.0 if answers else UNCERTAIN))
    seen = {norm_key(p) for p, _ in out}
    negatives = row.get("negatives") or []
    assert isinstance(negatives, list)
    for text in negatives:
        if sum(goal == 0.0 for _, goal in out) >= MAX_NEAR_MISSES:
            break
        found = index.locate(path, str(text))
        if found is None:
            continue
        near_page, i = found
        unit = near_page.units[i]
        if near_page is page and unit.heading_path[: len(positive.heading_path)] == positive.heading_path:
            continue  # the answer's own section: already rated above
        passage = read(unit)
        if norm_key(passage) not in seen and norm_key(unit.text) != norm_key(str(row["question"])):
            seen.add(norm_key(passage))
            out.append((passage, 0.0))
    return out


_PLAIN = DocsRecipe()


Rewrites = dict[tuple[str, str, str], list[str]]
"""(repo, kind, mined question) -> its kept user-worded rewrites (``embedder_data.read_rewrites``)."""


def asked_as(row: dict[str, object], group: str, recipe: DocsRecipe, rewrites: Rewrites) -> str:
    """The query one row is asked with: with ``recipe.rewrite_share`` of the rows that have a kept rewrite,
    one of those rewrites (drawn per group); otherwise the mined question as mined or reworded."""
    question = str(row["question"])
    texts = rewrites.get((str(row["repo"]), str(row.get("kind")), question)) or []
    rng = random.Random(f"rewrite:{group}")
    if texts and rng.random() < recipe.rewrite_share:
        return rng.choice(texts)
    return reworded(question, group)


def _in_users_words(row: dict[str, object], query: str, rewrites: Rewrites) -> bool:
    return query in rewrites.get((str(row["repo"]), str(row.get("kind")), str(row["question"])), [])


def _dense_pairs(
    row: dict[str, object],
    query: str,
    index: RepoIndex,
    dense: DenseMisses,
    limit: int,
    read: Callable[[TextUnit], str],
    pairs: list[tuple[str, float]],
) -> list[tuple[str, float]]:
    """The vector lane's near misses of one row as target-0 pairs, less any passage the row already rates."""
    path, positive = str(row["path"]), str(row["positive"])
    page = index.pages[path]
    start = page.find(positive)
    if start is None:
        return []
    section = page.units[start].heading_path
    held = {norm_key(p) for p, _ in pairs}
    misses = (read(u) for u in dense.misses(query, path, section, page.units[start].text, limit))
    return [(p, 0.0) for p in misses if norm_key(p) not in held]


def load_docs(
    file: Path,
    roles: tuple[str, ...] = ("train",),
    recipe: DocsRecipe = _PLAIN,
    rewrites: Rewrites | None = None,
    reader: dict[tuple[str, str, str, str], float] | None = None,
) -> list[RelRow]:
    """Relevance rows from a docs_faq pairs file, for the repositories whose role is in ``roles``; the
    corpus is the ``corpus/`` folder beside the file. A row's group is its repository, page and question;
    its query is that question as mined, reworded, or in a user's words (``asked_as``, drawn per group). A
    row asked in a rewrite that `reader` rates (``training.reader_labels``) trains its answers towards that
    rating instead of 1."""
    corpus = file.parent / "corpus"
    by_repo: dict[str, list[dict[str, object]]] = {}
    for row in read_jsonl(file):
        if role(str(row["repo"])) in roles:
            by_repo.setdefault(str(row["repo"]), []).append(row)
    out: list[RelRow] = []
    source = f"docs_faq/{file.name.split('.')[0]}"
    lane = None
    if recipe.dense_misses:
        from training.docs_dense import dense_lane  # loads an embedder: only where the recipe asks

        lane = dense_lane(recipe.dense_embedder)
    for repository in sorted(by_repo):
        index = RepoIndex(read_corpus(corpus, repository))
        other = OtherPages(index.citable()) if recipe.other_pages else None
        for row in by_repo[repository]:
            group = f"docs:{repository}:{row['path']}:{row['question']}"
            query = asked_as(row, group, recipe, rewrites or {})
            headless = random.Random(f"headless:{group}").random() < recipe.headless_share
            read = _bare if headless else _read
            pairs = pairs_for_row(row, index, read)
            if pairs and other is not None and row.get("kind") == "faq":
                held = {norm_key(p) for p, _ in pairs}
                misses = (read(u) for u in other.misses(query, str(row["path"])))
                pairs += [(p, 0.0) for p in misses if norm_key(p) not in held]
            if pairs and lane is not None and _in_users_words(row, query, rewrites or {}):
                dense = lane.of(repository, index)
                pairs += _dense_pairs(row, query, index, dense, recipe.dense_misses, read, pairs)
            rated = (reader or {}).get((repository, str(row.get("kind")), str(row["question"]), query))
            if rated is not None:
                pairs = [(p, rated if goal == 1.0 else goal) for p, goal in pairs]
            for passage, goal in pairs:
                soft = None if goal in (0.0, 1.0) else goal
                out.append(RelRow(query, passage, int(goal == 1.0), group, source, soft))
    return out
