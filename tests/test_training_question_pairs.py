"""The memory matcher's question pairs: a row's wordings ask the same thing, its near miss and the other
rows of its page do not, and nothing comes from a held-out repository."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from tests.test_training_written import MINED, WRITTEN
from training.docs_split import HELD_OUT, role
from training.question_pairs import OTHER_PAGE_ROWS, OTHER_ROWS, load_question_pairs, row_pairs, wordings


def test_every_two_wordings_are_a_positive_and_the_near_miss_against_each_a_negative() -> None:
    asked = wordings(MINED, WRITTEN)
    assert asked == [MINED["question"], WRITTEN["plain"], WRITTEN["situation"], WRITTEN["terse"]]
    rows = row_pairs(asked, WRITTEN["near_miss"], ["is the remote cache shared?"], "g", "s", random.Random(1))
    positives = {frozenset((r.query, r.passage)) for r in rows if r.label == 1}
    assert len(positives) == 6 and all(len(p) == 2 and p <= set(asked) for p in positives)
    near = [r for r in rows if WRITTEN["near_miss"] in (r.query, r.passage)]
    assert len(near) == 4 and all(r.label == 0 for r in near)
    other = [r for r in rows if "is the remote cache shared?" in (r.query, r.passage)]
    assert len(other) == 1 and other[0].label == 0
    assert {r.group for r in rows} == {"g"}


def test_a_wording_repeated_in_another_case_is_asked_once() -> None:
    asked = wordings(MINED, {**WRITTEN, "terse": "HOW DO I CLEAR THE CACHE?"})
    assert asked == [MINED["question"], WRITTEN["plain"], WRITTEN["situation"]]


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def test_rows_of_one_page_are_each_others_negatives_unless_they_share_their_answer(tmp_path: Path) -> None:
    held = HELD_OUT[0]
    assert role("owner/docs") == "train"
    mined = [
        MINED,
        {**MINED, "question": "Where is the cache?", "positive": "The cache lives in the build folder."},
        {**MINED, "question": "Clearing", "positive": MINED["positive"]},
        {**MINED, "repo": held},
    ]
    _write(tmp_path / "pairs.jsonl.gz", mined)
    written = [
        {**WRITTEN, "row": 0, "repo": "owner/docs", "question": mined[0]["question"]},
        {
            **WRITTEN,
            "row": 1,
            "repo": "owner/docs",
            "question": mined[1]["question"],
            "plain": "cache folder?",
        },
        {**WRITTEN, "row": 2, "repo": "owner/docs", "question": mined[2]["question"], "plain": "empty it?"},
        {**WRITTEN, "row": 3, "repo": held, "question": MINED["question"], "plain": "held out question"},
    ]
    _write(tmp_path / "users_written.jsonl.gz", written)
    rows = load_question_pairs(tmp_path / "users_written.jsonl.gz")
    assert all("held out question" not in (r.query, r.passage) for r in rows)
    assert all(r.group.startswith("qpairs:owner/docs:cache.md:") for r in rows)
    first = [r for r in rows if r.group.endswith(MINED["question"])]
    against_other = [r for r in first if "cache folder?" in (r.query, r.passage)]
    assert len(against_other) == 1 and against_other[0].label == 0
    assert not [r for r in first if "empty it?" in (r.query, r.passage)]  # the same answer: not a negative
    assert len(against_other) <= OTHER_ROWS


def test_the_closest_rows_of_other_pages_are_negatives_unless_they_share_the_answer(tmp_path: Path) -> None:
    other_page = {**MINED, "path": "remote.md"}
    mined = [
        MINED,
        {**other_page, "question": "Remote", "positive": "The remote cache is shared by every machine."},
        {**other_page, "question": "Speed", "positive": "Builds take minutes."},
        {**other_page, "question": "Same", "positive": MINED["positive"]},
    ]
    _write(tmp_path / "pairs.jsonl.gz", mined)
    plain = {1: "is the build cache shared with CI?", 2: "why so slow?", 3: "how do I wipe the build cache?"}
    written = [{**WRITTEN, "row": 0, "repo": "owner/docs", "question": MINED["question"]}] + [
        {**WRITTEN, "row": n, "repo": "owner/docs", "question": mined[n]["question"], "plain": plain[n]}
        for n in (1, 2, 3)
    ]
    _write(tmp_path / "users_written.jsonl.gz", written)
    rows = load_question_pairs(tmp_path / "users_written.jsonl.gz")
    first = [r for r in rows if r.group == f"qpairs:owner/docs:cache.md:{MINED['question']}"]
    against = {text: r.label for r in first for text in plain.values() if text in (r.query, r.passage)}
    assert against == {plain[1]: 0}, "sharing words: a negative; sharing none, or the answer: not read"
    assert OTHER_PAGE_ROWS >= 1


def test_with_an_embedder_the_other_pages_questions_closest_by_its_cosine_are_the_negatives(
    tmp_path: Path,
) -> None:
    other_page = {**MINED, "path": "remote.md"}
    plain = {
        1: "how do I delete old compiled artifacts?",  # close in meaning, no content word shared
        2: "which fonts does the theme use?",
        3: "what colour is the stored button?",  # shares "stored", nothing of the meaning
    }
    mined = [MINED] + [{**other_page, "question": f"Q{n}", "positive": f"Answer {n}."} for n in sorted(plain)]
    _write(tmp_path / "pairs.jsonl.gz", mined)
    written = [{**WRITTEN, "row": 0, "repo": "owner/docs", "question": MINED["question"]}] + [
        {**WRITTEN, "row": n, "repo": "owner/docs", "question": f"Q{n}", "plain": plain[n]} for n in plain
    ]
    _write(tmp_path / "users_written.jsonl.gz", written)
    group = f"qpairs:owner/docs:cache.md:{MINED['question']}"

    def negatives(embedder: str | None) -> set[str]:
        rows = load_question_pairs(tmp_path / "users_written.jsonl.gz", embedder=embedder)
        return {t for r in rows if r.group == group for t in plain.values() if t in (r.query, r.passage)}

    assert negatives(None) == {plain[3]}, "by shared words, only the row sharing one"
    closest = negatives("citeline-docs")
    assert plain[1] in closest and len(closest) == OTHER_PAGE_ROWS


def test_a_wider_mix_reads_as_many_negatives_of_each_kind_as_it_is_told(tmp_path: Path) -> None:
    """`same_page` and `other_pages` (the `qpairs_wide` recipe reads four of each) bound each kind."""
    same = [{**MINED, "question": f"S{n}", "positive": f"Same page {n}."} for n in range(5)]
    elsewhere = [{**MINED, "path": "b.md", "question": f"O{n}", "positive": f"Other {n}."} for n in range(5)]
    mined = [MINED, *same, *elsewhere]
    _write(tmp_path / "pairs.jsonl.gz", mined)
    written = [{**WRITTEN, "row": 0, "repo": "owner/docs", "question": MINED["question"]}] + [
        {
            **WRITTEN,
            "row": n,
            "repo": "owner/docs",
            "question": m["question"],
            "plain": f"wipe builds {m['question']}?",
        }
        for n, m in enumerate(mined[1:], start=1)
    ]
    _write(tmp_path / "users_written.jsonl.gz", written)
    group = f"qpairs:owner/docs:cache.md:{MINED['question']}"

    def counted(**widths: int) -> tuple[int, int]:
        rows = load_question_pairs(tmp_path / "users_written.jsonl.gz", **widths)
        others = [
            t for r in rows if r.group == group for t in (r.query, r.passage) if t.startswith("wipe builds ")
        ]
        assert all(r.label == 0 for r in rows if r.group == group and {r.query, r.passage} & set(others))
        return sum(t[12] == "S" for t in others), sum(t[12] == "O" for t in others)

    assert counted() == (OTHER_ROWS, OTHER_PAGE_ROWS)
    assert counted(same_page=4, other_pages=4) == (4, 4)
    assert counted(same_page=0, other_pages=1) == (0, 1)
