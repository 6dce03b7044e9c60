"""The docs relevance data: the repositories held out, the pairs a mined row gives, and a section cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.docs_mix import (
    MAX_NEAR_MISSES,
    MAX_UNCERTAIN,
    UNCERTAIN,
    DocsPage,
    RepoIndex,
    pairs_for_row,
    parse_page,
)
from training.docs_queries import VERBATIM_SHARE, keywords, reworded
from training.docs_split import HELD_OUT, TUNE, draw, role
from training.docs_text import cut_section, in_paragraph, same_text

STATS = Path(__file__).resolve().parents[2] / "shared" / "traindata" / "docs_faq" / "stats.json"

PAGE = """# Caching

## How do I clear the cache?

To clear the cache, run this command:

```sh
tool cache clear
```

Be careful as this is a destructive operation.

## Where is the cache kept?

The cache lives in the build folder.

## Remote caches

A remote cache is shared between machines.
"""


def _index(pages: dict[str, str]) -> RepoIndex:
    parsed: dict[str, DocsPage] = {path: parse_page(text) for path, text in pages.items()}
    return RepoIndex(parsed)


@pytest.mark.skipif(not STATS.exists(), reason="../shared/traindata/docs_faq is not beside the checkout")
def test_the_held_out_lists_are_the_seeded_draw_of_the_forty_repositories() -> None:
    names = json.loads(STATS.read_text())
    assert len(names) == 40
    assert draw(names) == (HELD_OUT, TUNE)


def test_no_repository_is_both_held_out_and_tuned_on_and_the_rest_train() -> None:
    assert not set(HELD_OUT) & set(TUNE)
    assert {role(n) for n in HELD_OUT} == {"heldout"}
    assert {role(n) for n in TUNE} == {"tune"}
    assert role("someone/else") == "train"


def test_a_row_gives_its_answer_what_it_introduces_its_uncertain_section_and_its_near_misses() -> None:
    row = {
        "path": "cache.md",
        "question": "How do I clear the cache?",
        "positive": "To clear the cache, run this command:",
        "negatives": ["The cache lives in the build folder.", "A remote cache is shared between machines."],
        "kind": "faq",
    }
    assert pairs_for_row(row, _index({"cache.md": PAGE})) == [
        ("Caching > How do I clear the cache?: To clear the cache, run this command:", 1.0),
        ("Caching > How do I clear the cache?: tool cache clear", 1.0),
        ("Caching > How do I clear the cache?: Be careful as this is a destructive operation.", UNCERTAIN),
        ("Caching > Where is the cache kept?: The cache lives in the build folder.", 0.0),
        ("Caching > Remote caches: A remote cache is shared between machines.", 0.0),
    ]


def test_answers_and_near_misses_alike_are_read_under_their_full_heading_path() -> None:
    row = {
        "path": "cache.md",
        "question": "Where is the cache kept?",
        "positive": "The cache lives in the build folder.",
        "negatives": ["To clear the cache, run this command:"],
        "kind": "faq",
    }
    passages = [p for p, _ in pairs_for_row(row, _index({"cache.md": PAGE}))]
    assert passages == [
        "Caching > Where is the cache kept?: The cache lives in the build folder.",
        "Caching > How do I clear the cache?: To clear the cache, run this command:",
    ]


def test_a_mined_negative_from_the_answers_own_section_is_only_uncertain_as_it_may_answer_too() -> None:
    row = {
        "path": "cache.md",
        "question": "How do I clear the cache?",
        "positive": "To clear the cache, run this command:",
        "negatives": ["Be careful as this is a destructive operation."],
        "kind": "heading",
    }
    pairs = pairs_for_row(row, _index({"cache.md": PAGE}))
    assert [label for _, label in pairs] == [1.0, 1.0, UNCERTAIN]


def test_a_negative_from_another_page_is_read_under_that_pages_headings() -> None:
    other = "# Storage\n\n## Layout\n\nThe cache lives in the build folder, next to the binaries.\n"
    row = {
        "path": "cache.md",
        "question": "Where is the cache kept?",
        "positive": "The cache lives in the build folder.",
        "negatives": ["The cache lives in the build folder, next to the binaries."],
        "kind": "faq",
    }
    pairs = pairs_for_row(row, _index({"cache.md": PAGE, "storage.md": other}))
    assert ("Storage > Layout: The cache lives in the build folder, next to the binaries.", 0.0) in pairs


def test_the_rest_of_the_answers_paragraph_is_an_answer_too() -> None:
    page = "# Guide\n\n## Why is it slow?\n\nIt reads every file. Caching avoids that.\n\nSee #12.\n"
    row = {
        "path": "guide.md",
        "question": "Why is it slow?",
        "positive": "It reads every file.",
        "positive_context": "It reads every file. Caching avoids that.",
        "kind": "heading",
    }
    assert pairs_for_row(row, _index({"guide.md": page})) == [
        ("Guide > Why is it slow?: It reads every file.", 1.0),
        ("Guide > Why is it slow?: Caching avoids that.", 1.0),
        ("Guide > Why is it slow?: See #12.", UNCERTAIN),
    ]


def test_a_row_whose_positive_is_not_on_its_page_gives_nothing() -> None:
    row = {"path": "cache.md", "question": "Why?", "positive": "Not on the page at all.", "kind": "faq"}
    assert pairs_for_row(row, _index({"cache.md": PAGE})) == []


def test_cutting_a_section_removes_it_up_to_the_next_heading_of_its_level() -> None:
    cut = cut_section(PAGE, "How do I clear the cache?")
    assert cut is not None
    assert "destructive" not in cut
    assert "tool cache clear" not in cut
    assert "## Where is the cache kept?" in cut
    assert cut.startswith("# Caching\n")


def test_cutting_a_section_takes_its_subsections_and_ignores_headings_inside_code() -> None:
    page = "# A\n\n## Q?\n\nx\n\n```\n# not a heading\n```\n\n### Sub\n\ny\n\n## Next\n\nz\n"
    assert cut_section(page, "Q?") == "# A\n\n## Next\n\nz\n"


def test_cutting_a_bold_question_stops_at_the_next_bold_line() -> None:
    page = "# FAQ\n\n**Can I do this?**\n\nYes.\n\n**And that?**\n\nNo.\n"
    assert cut_section(page, "Can I do this?") == "# FAQ\n\n**And that?**\n\nNo.\n"


def test_a_question_that_is_not_a_heading_of_the_page_cannot_be_cut() -> None:
    assert cut_section(PAGE, "What is a cache?") is None


def test_a_unit_matches_the_mined_sentence_by_its_normalised_start_and_its_paragraph_by_containment() -> None:
    assert same_text("To clear the `cache`, run:", "To clear the cache, run: tool clear")
    assert not same_text("To clear", "To clear the cache")  # too short to be a prefix match
    assert in_paragraph("It is destructive.", "Run it. It is destructive. Take care.")
    assert not in_paragraph("It is safe.", "Run it. It is destructive.")


def test_a_questions_keywords_drop_question_and_function_words_but_keep_flags_and_names_whole() -> None:
    assert keywords("How do I clear the cache?") == ["clear", "cache"]
    assert keywords("Why does `--force-rerun` ignore config.yml?") == [
        "--force-rerun",
        "ignore",
        "config.yml",
    ]


def test_a_row_is_asked_the_same_way_in_every_run_and_a_short_question_always_as_mined() -> None:
    question = "How do I reload the gateway configuration without a restart?"
    assert reworded(question, "row-1") == reworded(question, "row-1")
    assert reworded("Why is it slow?", "any row") == "Why is it slow?"


def test_most_rows_are_asked_in_other_words_than_their_heading_and_each_keeps_two_keywords() -> None:
    question = "How do I reload the gateway configuration without a restart?"
    queries = [reworded(question, f"row-{i}") for i in range(600)]
    verbatim = queries.count(question) / len(queries)
    assert abs(verbatim - VERBATIM_SHARE) < 0.07
    assert queries.count("reload gateway configuration without restart") > 120
    words = set(keywords(question))
    for query in queries:
        if query != question:
            assert len(query.split()) >= 2 and set(query.split()) <= words


def test_a_long_section_gives_only_the_uncertain_units_nearest_the_answer() -> None:
    later = "".join(f"Step {i} does one more thing.\n\n" for i in range(1, 7))
    page = f"# Guide\n\n## How do I set it up?\n\nRun the installer.\n\n{later}"
    row = {
        "path": "guide.md",
        "question": "How do I set it up?",
        "positive": "Run the installer.",
        "kind": "faq",
    }
    pairs = pairs_for_row(row, _index({"guide.md": page}))
    uncertain = [p for p, goal in pairs if goal == UNCERTAIN]
    assert len(uncertain) == MAX_UNCERTAIN
    assert uncertain[0].endswith("Step 1 does one more thing.")


def test_only_the_first_mined_near_misses_are_kept() -> None:
    sections = "".join(f"## Part {i}\n\nPart {i} holds other facts.\n\n" for i in range(8))
    page = f"# Guide\n\n## Why is it slow?\n\nIt reads every file.\n\n{sections}"
    row = {
        "path": "guide.md",
        "question": "Why is it slow?",
        "positive": "It reads every file.",
        "negatives": [f"Part {i} holds other facts." for i in range(8)],
        "kind": "faq",
    }
    negatives = [p for p, goal in pairs_for_row(row, _index({"guide.md": page})) if goal == 0.0]
    assert len(negatives) == MAX_NEAR_MISSES
    assert negatives[0].endswith("Part 0 holds other facts.")
