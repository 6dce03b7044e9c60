"""What a docs mix adds to the mined rows, as a plain record: no parser, no engine, so a machine that only
trains from a pairs file (``training.pairs``) can read the recipes by name without citeline installed."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DocsRecipe"]


@dataclass(frozen=True, slots=True)
class DocsRecipe:
    """What a docs mix adds to the mined rows: near misses from other pages for question rows, a share of
    rows read with no heading at all, and a share asked in users' words."""

    other_pages: bool = False
    headless_share: float = 0.0
    """The share of rows (drawn once per row with a seed) whose every passage, answer and near misses alike,
    is read without its heading path: such a row is told apart by what its passages say, as a paraphrased
    question must be, and no heading sits over a negative only."""
    rewrite_share: float = 0.0
    """The share of rows that have a kept user-worded rewrite (``training/data/docs_rewrites.jsonl.gz``, drawn
    once per row with a seed) that are asked with one of those rewrites instead of the mined question: the
    same passages and targets, in a user's words, whose answer's heading does not restate the question."""
    dense_misses: int = 0
    """Negatives per row asked in a user's words, from the vector lane (``training.docs_dense``): the units
    of the repository nearest the rewrite by ``dense_embedder``'s cosine, outside the answer's section, target
    0."""
    reader_soft: bool = False
    """With ``rewrite_share``: every 1.5B rewrite may be asked, not only the kept ones, and a row asked in one
    trains its answer towards the reader's soft label for that rewrite (``training.reader_labels``) instead
    of 1: the rewrites down-weighted by the round-trip check rather than filtered by it."""
    dense_embedder: str = "citeline-docs"
    """The embedder spec (as ``[models] embedder`` takes it) that finds the vector lane's near misses."""
    question_pairs: bool = False
    """A written file (``users_written*``) is read as question pairs (``training.question_pairs``: does a
    new question ask what an earlier one asked?) instead of questions against passages."""
    pairs_embedder: str | None = None
    """With ``question_pairs``: the embedder spec whose cosine picks the other pages' questions read as
    negatives (the ones the memory reads, ``training.question_pairs``); None: shared content words."""
    pairs_same_page: int = 2
    """With ``question_pairs``: other rows of the same page read as negatives for each row."""
    pairs_other_pages: int = 2
    """With ``question_pairs``: rows of the repository's other pages, the closest, read as negatives."""
