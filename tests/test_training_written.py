"""The relevance rows of a question written in users' words: three styles against the mined answer's
passages, its near-miss question against the answer, nothing from a row marked unusable or held out."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from training.docs_mix import UNCERTAIN, DocsPage, RepoIndex, pairs_for_row, parse_page
from training.docs_split import HELD_OUT, role
from training.docs_written import NEAR_MISSES_KEPT, STYLES, UNCERTAIN_KEPT, load_written, written_groups

PAGE = """# Caching

## How do I clear the cache?

To clear the cache, run the clear command. It removes every entry.

Be careful as this is a destructive operation.

A cleared cache refills on the next build.

Remote entries are kept.

## Where is the cache kept?

The cache lives in the build folder.

## Remote caches

A remote cache is shared between machines.
"""

MINED = {
    "repo": "owner/docs",
    "kind": "faq",
    "path": "cache.md",
    "question": "How do I clear the cache?",
    "positive": "To clear the cache, run the clear command.",
    "positive_context": "To clear the cache, run the clear command. It removes every entry.",
    "negatives": ["The cache lives in the build folder.", "A remote cache is shared between machines."],
}
WRITTEN = {
    "usable": True,
    "plain": "how can I wipe the stored build stuff?",
    "situation": "my builds use stale files and I want to start over, how do I wipe them?",
    "terse": "wipe stored builds",
    "near_miss": "where on disk are the stored build files?",
}


def _pairs() -> list[tuple[str, float]]:
    parsed: dict[str, DocsPage] = {"cache.md": parse_page(PAGE)}
    return pairs_for_row(MINED, RepoIndex(parsed))


def test_each_style_asks_the_answer_and_its_near_misses_in_its_own_group() -> None:
    rows = written_groups(WRITTEN, _pairs(), "g", "docs_faq/users_written")
    groups = {r.group for r in rows}
    assert groups == {f"g:{style}" for style in STYLES}
    for style in STYLES:
        asked = [r for r in rows if r.group == f"g:{style}" and r.query == WRITTEN[style]]
        assert any(r.label == 1 and "run the clear command" in r.passage for r in asked)
        assert any(r.label == 0 and r.target is None and "build folder" in r.passage for r in asked)
        assert sum(r.target == UNCERTAIN for r in asked) <= UNCERTAIN_KEPT
        assert sum(r.label == 0 and r.target is None for r in asked) <= NEAR_MISSES_KEPT


def test_the_near_miss_question_is_a_negative_against_the_mined_answer_only() -> None:
    rows = written_groups(WRITTEN, _pairs(), "g", "docs_faq/users_written")
    near = [r for r in rows if r.query == WRITTEN["near_miss"]]
    assert len(near) == 1
    assert near[0].label == 0 and near[0].goal == 0.0
    assert "run the clear command" in near[0].passage
    assert near[0].group == "g:plain"


def test_an_unusable_row_or_one_whose_answer_is_not_found_gives_nothing() -> None:
    assert written_groups({**WRITTEN, "usable": False}, _pairs(), "g", "s") == []
    assert written_groups(WRITTEN, [], "g", "s") == []


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def test_a_held_out_repository_is_never_read_and_a_mismatched_row_is_an_error(tmp_path: Path) -> None:
    train_repo = "owner/docs"
    assert role(train_repo) == "train"
    held = HELD_OUT[0]
    mined = [MINED, {**MINED, "repo": held}]
    _write(tmp_path / "pairs.jsonl.gz", mined)
    (tmp_path / "corpus").mkdir()
    for name in (train_repo, held):
        _write(
            tmp_path / "corpus" / (name.replace("/", "__") + ".jsonl.gz"),
            [{"path": "cache.md", "text": PAGE}],
        )
    written = [
        {**WRITTEN, "row": 0, "repo": train_repo, "question": MINED["question"]},
        {**WRITTEN, "row": 1, "repo": held, "question": MINED["question"]},
    ]
    _write(tmp_path / "users_written.jsonl.gz", written)
    rows = load_written(tmp_path / "users_written.jsonl.gz")
    assert rows and all(r.group.startswith(f"written:{train_repo}:") for r in rows)
    _write(tmp_path / "users_written.jsonl.gz", [{**written[0], "question": "Something else?"}])
    with pytest.raises(ValueError, match="row 0"):
        load_written(tmp_path / "users_written.jsonl.gz")
