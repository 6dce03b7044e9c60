"""Question-to-passage triplets for fine-tuning the embedder, read the way the embedding queue reads a page.

Each mined row of ``traindata/docs_faq`` names a page, a question (its heading) and the first sentence under
it. The page is parsed with citeline's own Markdown parser and segmenter, and every passage is embedded text
exactly as the queue builds it (``indexer.embedding_context.contextual_text``: the heading path, the previous
sentence when the sentence depends on it, the sentence). One row gives:

- its queries: the question as mined, and each user-worded rewrite of ``paraphrases.jsonl.gz`` that the
  round-trip check (``rewrite_checks.jsonl.gz``) did not show to miss the answer: a rewrite the reader read
  with the answer and near misses and that it answered with near misses only, or NONE, is dropped; a rewrite
  the check did not reach is kept;
- its positive: the mined sentence, located on the page;
- its hard negatives: the mined near misses located in the parsed pages (outside the answer's own section),
  then a unit of another section of the same page.

Only repositories whose role in ``training.docs_split`` is ``train`` give training rows. ``general_triplets``
adds replay data (Natural Questions: question to its paragraph) so that what the base model knew is kept.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from indexer.markdown import TextUnit
from training.data import norm_key, read_jsonl
from training.docs_pages import DocsPage, RepoIndex, embedded_text, page_units, read_corpus
from training.docs_split import role
from training.reader_labels import read_checks, rewrite_texts

__all__ = [
    "REWRITES",
    "Triplet",
    "count_by_source",
    "docs_triplets",
    "embedded_text",
    "general_triplets",
    "kept_rewrites",
    "page_units",
    "read_rewrites",
    "row_answer",
    "row_negatives",
    "write_rewrites",
]

REWRITES = Path(__file__).resolve().parent / "data" / "docs_rewrites.jsonl.gz"
"""The training repositories' kept rewrites, committed (`write_rewrites`): the shipped embedder was trained on
exactly these, so a run is reproduced without the model that wrote them."""


@dataclass(frozen=True, slots=True)
class Triplet:
    """One query, its positive passage and its hard negatives; `group` names the positive, so that two
    queries of one passage in a batch are not taken as each other's negatives."""

    query: str
    positive: str
    negatives: tuple[str, ...]
    group: str
    source: str
    near_miss: str = ""
    """A question the positive does not answer (the question-side hard negative), or empty."""


def kept_rewrites(data: Path) -> dict[tuple[str, str, str], list[str]]:
    """(repo, kind, question) -> the rewrites kept: non-empty, and not shown by the round-trip check to
    miss the answer."""
    checks = read_checks(data)
    out: dict[tuple[str, str, str], list[str]] = {}
    for row in read_jsonl(data / "paraphrases.jsonl.gz"):
        key = (row["repo"], row["kind"], row["question"])
        out[key] = [t for t in rewrite_texts(row) if checks.get((*key, t), {}).get("picks_answer", True)]
    return out


def write_rewrites(data: Path, out: Path = REWRITES, roles: tuple[str, ...] = ("train",)) -> int:
    """Write the kept rewrites of the repositories in `roles` to `out` (gzipped JSON lines); returns rows."""
    import gzip
    import json

    rows = [(k, v) for k, v in sorted(kept_rewrites(data).items()) if role(k[0]) in roles and v]
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        for (repo, kind, question), texts in rows:
            fh.write(json.dumps({"repo": repo, "kind": kind, "question": question, "rewrites": texts}) + "\n")
    return len(rows)


def read_rewrites(file: Path) -> dict[tuple[str, str, str], list[str]]:
    """What `write_rewrites` wrote."""
    return {(r["repo"], r["kind"], r["question"]): list(r["rewrites"]) for r in read_jsonl(file)}


def _in_section(unit: TextUnit, section: tuple[str, ...]) -> bool:
    return unit.heading_path[: len(section)] == section


def row_negatives(
    row: dict[str, object], index: RepoIndex, page: DocsPage, start: int, rng: random.Random
) -> list[str]:
    """A mined row's hard negatives as embedded text: its near misses located outside the answer's own
    section, then one unit of another section of the same page."""
    section = page.units[start].heading_path
    out: list[str] = []
    for text in row.get("negatives") or []:  # type: ignore[attr-defined]
        found = index.locate(str(row["path"]), str(text))
        if found is None:
            continue
        near_page, i = found
        if near_page is page and _in_section(near_page.units[i], section):
            continue
        out.append(embedded_text(near_page, i))
    others = [i for i in page_units(page) if not _in_section(page.units[i], section)]
    if others:
        out.append(embedded_text(page, rng.choice(others)))
    return list(dict.fromkeys(out))


def row_answer(
    row: dict[str, object], index: RepoIndex, rng: random.Random
) -> tuple[str, tuple[str, ...], str] | None:
    """A mined row's positive as embedded text, its hard negatives (`row_negatives`) and its group (the
    positive's repository, path and text); None when the positive is not found on its page."""
    page = index.pages.get(str(row["path"]))
    start = page.find(str(row["positive"])) if page is not None else None
    if page is None or start is None:
        return None
    positive = embedded_text(page, start)
    negatives = tuple(row_negatives(row, index, page, start, rng))
    return positive, negatives, f"{row['repo']}:{row['path']}:{norm_key(positive)[:80]}"


def docs_triplets(
    data: Path,
    roles: tuple[str, ...] = ("train",),
    *,
    overflow: int = 0,
    rewrites: bool = True,
    seed: int = 0,
    rewrites_file: Path | None = None,
) -> list[Triplet]:
    """Triplets from `pairs.jsonl.gz` (and up to `overflow` rows of `heading_overflow.jsonl.gz`) for the
    repositories whose role is in `roles`; a row whose positive is not found on its page gives none. The
    rewrites come from `rewrites_file` (`write_rewrites`'s format) when given, else from `data`."""
    rng = random.Random(seed)
    rows = [r for r in read_jsonl(data / "pairs.jsonl.gz") if role(str(r["repo"])) in roles]
    if overflow:
        extra = [r for r in read_jsonl(data / "heading_overflow.jsonl.gz") if role(str(r["repo"])) in roles]
        rng.shuffle(extra)
        rows += extra[:overflow]
    if not rewrites:
        worded: dict[tuple[str, str, str], list[str]] = {}
    else:
        worded = read_rewrites(rewrites_file) if rewrites_file is not None else kept_rewrites(data)
    by_repo: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_repo.setdefault(str(row["repo"]), []).append(row)
    out: list[Triplet] = []
    for repository in sorted(by_repo):
        index = RepoIndex(read_corpus(data / "corpus", repository))
        for row in by_repo[repository]:
            answer = row_answer(row, index, rng)
            if answer is None:
                continue
            positive, negatives, group = answer
            question = str(row["question"])
            out.append(Triplet(question, positive, negatives, group, f"mined/{row['kind']}"))
            for text in worded.get((repository, str(row["kind"]), question), []):
                out.append(Triplet(text, positive, negatives, group, f"rewrite/{row['kind']}"))
    return out


def general_triplets(path: Path, limit: int, seed: int = 0) -> list[Triplet]:
    """Up to `limit` replay triplets from a relevance file whose rows give a query its positive passage
    (label 1) and negatives (label 0), as Natural Questions' file does."""
    positives: dict[str, str] = {}
    negatives: dict[str, list[str]] = {}
    for row in read_jsonl(path):
        query = str(row["query"])
        if int(row["label"]) == 1:
            positives.setdefault(query, str(row["passage"]))
        else:
            negatives.setdefault(query, []).append(str(row["passage"]))
    queries = sorted(positives)
    random.Random(seed).shuffle(queries)
    return [
        Triplet(q, positives[q], tuple(negatives.get(q, [])[:1]), f"general:{q}", "general/nq")
        for q in queries[:limit]
    ]


def count_by_source(triplets: Iterable[Triplet]) -> dict[str, int]:
    """How many triplets each source gave, for the card."""
    counts: dict[str, int] = {}
    for t in triplets:
        counts[t.source] = counts.get(t.source, 0) + 1
    return dict(sorted(counts.items()))
