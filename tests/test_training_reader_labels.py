"""The reader's soft labels: every 1.5B rewrite of a training repository is kept, at the target its round-trip
check earned; rewrites of other repositories are never read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from training.reader_labels import ALONE, NEAR_MISS_ONLY, UNCHECKED, WITH_NEAR_MISS, reader_rewrites

TRAIN, HELD_OUT = "kubernetes/minikube", "MicrosoftDocs/WSL"
QUESTION = "How can I create more than one cluster with minikube?"


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def _check(rewrite: str, answer: bool, near_miss: bool) -> dict[str, object]:
    return {
        "repo": TRAIN,
        "kind": "faq",
        "question": QUESTION,
        "rewrite": rewrite,
        "picks_answer": answer,
        "picks_near_miss": near_miss,
    }


def test_each_rewrite_trains_towards_what_the_reader_made_of_it(tmp_path: Path) -> None:
    texts = ["can I run two minikube clusters?", "two clusters, and a dashboard?", "what is a node?"]
    unchecked = "is there a way to have several minikube clusters at once?"
    _write(
        tmp_path / "paraphrases.jsonl.gz",
        [
            {
                "repo": TRAIN,
                "kind": "faq",
                "question": QUESTION,
                "rewrites": [{"text": t} for t in [*texts, unchecked, "x"]],
            },
            {
                "repo": HELD_OUT,
                "kind": "faq",
                "question": "What is WSL?",
                "rewrites": [{"text": "what's wsl for?"}],
            },
        ],
    )
    _write(
        tmp_path / "rewrite_checks.jsonl.gz",
        [_check(texts[0], True, False), _check(texts[1], True, True), _check(texts[2], False, True)],
    )
    rewrites, goals = reader_rewrites(tmp_path)
    key = (TRAIN, "faq", QUESTION)
    assert rewrites == {key: [*texts, unchecked]}, (
        "a held-out repository's and a too-short rewrite are not read"
    )
    assert [goals[(*key, t)] for t in [*texts, unchecked]] == [
        ALONE,
        WITH_NEAR_MISS,
        NEAR_MISS_ONLY,
        UNCHECKED,
    ]
    assert ALONE > WITH_NEAR_MISS > NEAR_MISS_ONLY
