"""A strong reader's judgements of the engine's candidates become relevance rows read as the engine reads
them; a judged held-out or tune question, or a label outside 0-2, is refused rather than trained on."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from training.judged import PARTLY_TARGET, load_judged


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in rows)
    return path


def _row(repo: str, labels: list[int]) -> dict[str, Any]:
    texts = ["Run `uv python install`.", "uv can install Python.", "See the guide."]
    return {
        "repo": repo,
        "role": "train",
        "source": "page_questions",
        "question": "how do I get python with uv",
        "candidates": [
            {"rank": i, "path": "guide.md", "heading": "Guide > Python" if i else "", "text": t, "label": lb}
            for i, (t, lb) in enumerate(zip(texts, labels, strict=False))
        ],
    }


def test_each_candidate_is_a_row_under_its_heading_with_the_readers_target(tmp_path: Path) -> None:
    rows = load_judged(_write(tmp_path / "j.jsonl.gz", [_row("astral-sh/uv", [2, 1, 0])]))
    assert [(r.label, r.goal) for r in rows] == [(1, 1.0), (0, PARTLY_TARGET), (0, 0.0)]
    assert rows[0].passage == "Run `uv python install`."
    assert rows[1].passage == "Guide > Python: uv can install Python."
    assert len({r.group for r in rows}) == 1


def test_a_partial_answer_trains_below_the_relevance_floor() -> None:
    assert 0.0 < PARTLY_TARGET < 0.35


def test_a_judged_held_out_question_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "j.jsonl.gz", [_row("starship/starship", [2, 0, 0])])
    with pytest.raises(ValueError, match="heldout"):
        load_judged(path)


def test_a_label_outside_the_scale_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "j.jsonl.gz", [_row("astral-sh/uv", [3, 0, 0])])
    with pytest.raises(ValueError, match="label 3"):
        load_judged(path)
