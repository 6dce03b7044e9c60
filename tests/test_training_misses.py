"""Near misses from other pages: the passages a question meets when the page that answers it is gone."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from indexer.embedder import EmbeddingModel
from indexer.markdown import TextUnit
from training.docs_dense import DenseMisses
from training.docs_misses import OtherPages
from training.docs_mix import DocsRecipe, RepoIndex, load_docs, parse_page

CACHE = """# Caching

## How do I clear the cache?

To clear the cache, run tool cache clear.
"""

STORAGE = """# Storage

## Disk usage

The build cache grows, and old entries are never cleared on their own.

## Mirrors

A mirror copies packages from the registry.
"""

HOWTO = """# Clear the cache

Deleting the folder also clears it.
"""


def _other(pages: dict[str, str]) -> OtherPages:
    return OtherPages(RepoIndex({path: parse_page(text) for path, text in pages.items()}).citable())


def test_the_best_ranked_unit_of_another_page_is_a_near_miss() -> None:
    other = _other({"cache.md": CACHE, "storage.md": STORAGE})
    misses = other.misses("How do I clear the cache?", "cache.md", limit=1)
    assert [(u.heading_path, u.text) for u in misses] == [
        (("Storage", "Disk usage"), "The build cache grows, and old entries are never cleared on their own.")
    ]


def test_the_question_s_own_page_never_gives_a_near_miss() -> None:
    other = _other({"cache.md": CACHE, "storage.md": STORAGE})
    misses = other.misses("How do I clear the cache?", "cache.md", limit=5)
    assert misses and not any("run tool cache clear" in m.text for m in misses)


def test_a_unit_under_a_heading_that_restates_the_question_may_answer_it_and_is_no_miss() -> None:
    other = _other({"cache.md": CACHE, "storage.md": STORAGE, "howto.md": HOWTO})
    misses = other.misses("How do I clear the cache?", "cache.md", limit=5)
    assert not any("Deleting the folder" in m.text for m in misses)
    assert any("Disk usage" in m.heading_path for m in misses)


def test_a_question_without_content_words_meets_no_miss() -> None:
    assert _other({"storage.md": STORAGE}).misses("How do I?", "cache.md") == []


def _docs_file(tmp_path: Path) -> Path:
    """A one-repository docs_faq file (a training repository) with its corpus beside it."""
    (tmp_path / "corpus").mkdir()
    pages = [{"path": "cache.md", "title": "Caching", "text": CACHE}, {"path": "storage.md", "text": STORAGE}]
    with gzip.open(tmp_path / "corpus" / "someone__docs.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(p) + "\n" for p in pages)
    row = {
        "repo": "someone/docs",
        "path": "cache.md",
        "question": "How do I clear the cache?",
        "positive": "To clear the cache, run tool cache clear.",
        "negatives": [],
        "kind": "faq",
    }
    file = tmp_path / "pairs.jsonl.gz"
    with gzip.open(file, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
    return file


def test_the_docs4_recipe_reads_every_passage_under_its_headings_and_adds_no_other_page(
    tmp_path: Path,
) -> None:
    rows = load_docs(_docs_file(tmp_path))
    assert [(r.passage, r.label) for r in rows] == [
        ("Caching > How do I clear the cache?: To clear the cache, run tool cache clear.", 1)
    ]


def test_other_pages_add_their_best_ranked_unit_as_a_near_miss(tmp_path: Path) -> None:
    rows = load_docs(_docs_file(tmp_path), recipe=DocsRecipe(other_pages=True))
    assert [r.label for r in rows] == [1, 0]
    assert rows[1].passage.startswith("Storage > Disk usage: ")


def test_a_headless_row_reads_its_answer_and_its_near_misses_without_any_heading(tmp_path: Path) -> None:
    rows = load_docs(_docs_file(tmp_path), recipe=DocsRecipe(other_pages=True, headless_share=1.0))
    assert rows[0].passage == "To clear the cache, run tool cache clear."
    assert rows[1].passage == "The build cache grows, and old entries are never cleared on their own."


def test_a_row_with_a_kept_rewrite_is_asked_in_the_user_s_words_with_the_same_passages(
    tmp_path: Path,
) -> None:
    rewrite = "my disk is full of old build artefacts, how do I free it?"
    rewrites = {("someone/docs", "faq", "How do I clear the cache?"): [rewrite]}
    file = _docs_file(tmp_path)
    mined = load_docs(file, recipe=DocsRecipe(rewrite_share=0.0), rewrites=rewrites)
    asked = load_docs(file, recipe=DocsRecipe(rewrite_share=1.0), rewrites=rewrites)
    assert {r.query for r in asked} == {rewrite}
    assert rewrite not in {r.query for r in mined}
    assert [(r.passage, r.label) for r in asked] == [(r.passage, r.label) for r in mined]


def test_a_row_without_a_kept_rewrite_keeps_its_mined_question(tmp_path: Path) -> None:
    rows = load_docs(_docs_file(tmp_path), recipe=DocsRecipe(rewrite_share=1.0), rewrites={})
    assert all("cache" in r.query.lower() for r in rows)


def _dense_misses(embedder: EmbeddingModel, extra: dict[str, str], query: str, limit: int) -> list[TextUnit]:
    """The vector lane's misses for `query` over the cache and storage pages (and `extra`), the answer being
    the cache page's one sentence."""
    pages = {"cache.md": CACHE, "storage.md": STORAGE, **extra}
    index = RepoIndex({path: parse_page(text) for path, text in pages.items()})
    answer = "To clear the cache, run tool cache clear."
    section = ("Caching", "How do I clear the cache?")
    return DenseMisses(index, embedder).misses(query, "cache.md", section, answer, limit=limit)


def test_the_vector_lane_s_nearest_unit_outside_the_answer_s_section_is_a_near_miss(
    embedder: EmbeddingModel,
) -> None:
    misses = _dense_misses(embedder, {}, "my disk fills up with old build files", limit=1)
    assert [m.text for m in misses] == [
        "The build cache grows, and old entries are never cleared on their own."
    ]


def test_the_answer_s_own_section_and_its_text_elsewhere_are_never_a_vector_lane_miss(
    embedder: EmbeddingModel,
) -> None:
    copy = {"copy.md": "# Copy\n\nTo clear the cache, run tool cache clear.\n"}
    misses = _dense_misses(embedder, copy, "How do I clear the cache?", limit=10)
    assert misses and not any("run tool cache clear" in m.text for m in misses)


def test_the_vector_lane_recipe_adds_its_misses_to_a_row_asked_in_a_user_s_words(tmp_path: Path) -> None:
    rewrites = {("someone/docs", "faq", "How do I clear the cache?"): ["my disk is full, how do I free it?"]}
    recipe = DocsRecipe(rewrite_share=1.0, dense_misses=2, dense_embedder="")
    rows = load_docs(_docs_file(tmp_path), recipe=recipe, rewrites=rewrites)
    assert [r.label for r in rows] == [1, 0, 0]
    assert {r.passage.split(":")[0] for r in rows[1:]} == {"Storage > Disk usage", "Storage > Mirrors"}


def test_a_row_asked_as_mined_gets_no_vector_lane_miss(tmp_path: Path) -> None:
    rows = load_docs(_docs_file(tmp_path), recipe=DocsRecipe(dense_misses=2, dense_embedder=""), rewrites={})
    assert [r.label for r in rows] == [1]
