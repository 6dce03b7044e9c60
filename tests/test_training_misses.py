"""Near misses from other pages: the passages a question meets when the page that answers it is gone."""

from __future__ import annotations

from training.docs_misses import OtherPages
from training.docs_mix import RepoIndex, parse_page

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
