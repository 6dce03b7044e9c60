"""Question pairs for the memory's matcher: does a new question ask what an earlier one asked, in other words?

The team's memory (``engine.memory``) offers a sentence accepted for an earlier question when a new question
asks the same thing. The embedder's cosine finds the candidates but cannot tell a rewording from a question
on the same page that asks something else; this mix teaches a cross-encoder that difference, read as
(new question, earlier question) -> 1 when one answer answers both.

From each usable written row of a training repository (``training.docs_written.joined_rows``), the row's
wordings (the mined question as the docs' heading asks it, and the written ``plain``, ``situation`` and
``terse``), all asked by one mined answer:
- every two wordings, target 1, in a seeded order (a memory reads them either way round);
- the row's ``near_miss`` (on the same page, not answered by the answer) against each wording, target 0;
- up to ``OTHER_ROWS`` other rows of the same page, a `plain` wording against one of this row's, target 0,
  unless the two rows share their mined answer (then they ask the same thing);
- the ``OTHER_PAGE_ROWS`` rows of the repository's other pages whose `plain` wording shares the most content
  words with this row's (or, with an `embedder`, is the closest by its cosine: the questions the memory
  reads, `engine.memory`), the same way: a question on another page of the same product that shares its
  topic ("custom query client" against "how does the client ask the server for more data?") asks
  something else, and a matcher taught only its own page's questions scores such pairs as rewordings.

One group per row, so validation holds out whole rows; the held-out and tune repositories are never read.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.words import stems
from training.data import RelRow
from training.docs_written import STYLES, joined_rows

__all__ = ["OTHER_ROWS", "load_question_pairs", "row_pairs", "wordings"]

OTHER_ROWS = 2
"""Other rows of the same page read as negatives for each row."""
OTHER_PAGE_ROWS = 2
"""Rows of other pages of the same repository, the closest by shared content words, read as negatives."""


def wordings(mined: dict[str, object], written: dict[str, object]) -> list[str]:
    """The row's questions its mined answer answers: the mined one, then the written styles, deduplicated."""
    out: list[str] = []
    for text in (mined.get("question"), *(written.get(s) for s in STYLES)):
        value = str(text or "").strip()
        if value and value.lower() not in {o.lower() for o in out}:
            out.append(value)
    return out


def row_pairs(
    asked: list[str], near_miss: str, others: list[str], group: str, source: str, rng: random.Random
) -> list[RelRow]:
    """The pairs of one row (module docstring): `asked` its wordings, `others` other rows' questions."""

    def pair(a: str, b: str, label: int) -> RelRow:
        first, second = (a, b) if rng.random() < 0.5 else (b, a)
        return RelRow(first, second, label, group, source)

    out = [pair(a, b, 1) for a, b in combinations(asked, 2)]
    if near_miss:
        out += [pair(near_miss, a, 0) for a in asked]
    out += [pair(other, rng.choice(asked), 0) for other in others]
    return out


def load_question_pairs(
    file: Path,
    seed: int = 13,
    embedder: str | None = None,
    same_page: int = OTHER_ROWS,
    other_pages: int = OTHER_PAGE_ROWS,
) -> list[RelRow]:
    """The question pairs of a written file's training rows (``joined_rows``), as the module says;
    `embedder` a spec as ``[models] embedder`` takes it; `same_page` and `other_pages` how many negatives of
    each kind a row reads (``OTHER_ROWS``, ``OTHER_PAGE_ROWS`` by default)."""
    by_repo = joined_rows(file)
    encode = _encoder(embedder) if embedder is not None else None
    source = f"docs_faq/{file.name.split('.')[0]}:pairs"
    rng = random.Random(seed)
    out: list[RelRow] = []
    for repository in sorted(by_repo):
        by_page: dict[str, list[tuple[dict[str, object], dict[str, object]]]] = defaultdict(list)
        for mined, written in by_repo[repository]:
            by_page[str(mined["path"])].append((mined, written))
        plains = [
            (str(m["path"]), m["positive"], plain, stems(plain))
            for m, w in by_repo[repository]
            if (plain := str(w.get("plain") or "").strip())
        ]
        vectors = encode([p[2] for p in plains]) if encode is not None and plains else None
        where = {text: n for n, (_, _, text, _) in enumerate(plains)}
        for page in sorted(by_page):
            rows = by_page[page]
            for mined, written in rows:
                others = [
                    str(w.get("plain") or "").strip()
                    for m, w in rows
                    if m["positive"] != mined["positive"] and str(w.get("plain") or "").strip()
                ]
                picked = rng.sample(others, min(same_page, len(others)))
                plain = str(written.get("plain") or "").strip()
                if vectors is not None and plain in where:
                    picked += _nearest_elsewhere(
                        mined, vectors[where[plain]] @ vectors.T, plains, other_pages
                    )
                else:
                    picked += _closest_elsewhere(mined, plain, plains, other_pages)
                group = f"qpairs:{repository}:{page}:{mined['question']}"
                near = str(written.get("near_miss") or "").strip()
                out += row_pairs(wordings(mined, written), near, picked, group, source, rng)
    return out


def _closest_elsewhere(
    mined: dict[str, object], plain: str, plains: list[tuple[str, object, str, set[str]]], count: int
) -> list[str]:
    """The `plain` wordings of other pages' rows sharing the most content stems with `plain` (at least one),
    ties in file order, leaving out rows with the same mined answer."""
    own = stems(plain)
    scored = [
        (len(own & theirs), n, text)
        for n, (path, positive, text, theirs) in enumerate(plains)
        if path != mined["path"] and positive != mined["positive"] and own & theirs
    ]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [text for _, _, text in scored[:count]]


def _nearest_elsewhere(
    mined: dict[str, object],
    cosines: npt.NDArray[np.float32],
    plains: list[tuple[str, object, str, set[str]]],
    count: int,
) -> list[str]:
    """The `plain` wordings of other pages' rows closest by the embedder's cosine (`cosines`, one per row of
    `plains`), leaving out rows with the same mined answer."""
    ranked = sorted(range(len(plains)), key=lambda n: (-float(cosines[n]), n))
    return [
        plains[n][2] for n in ranked if plains[n][0] != mined["path"] and plains[n][1] != mined["positive"]
    ][:count]


def _encoder(spec: str) -> Callable[[list[str]], npt.NDArray[np.float32]]:
    """Unit vectors of questions on the embedder `spec` names."""
    from indexer.embedder import load_embedding_model

    model = load_embedding_model(spec)

    def encode(texts: list[str]) -> npt.NDArray[np.float32]:
        return np.asarray(model.encode(texts), dtype=np.float32)

    return encode
