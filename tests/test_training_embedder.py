"""The embedder's training data: each mined question and its kept rewrites meet their answer as the queue
embeds it, with near misses from other sections, and only training repositories are read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from indexer.embedding_context import ContextOptions, contextual_text
from training.docs_split import HELD_OUT, TUNE, role
from training.embedder_data import REWRITES, docs_triplets, kept_rewrites, read_rewrites, write_rewrites
from training.embedder_eval import dense_recall, load_questions
from training.train_embedder import batches

PAGE = """# Caching

## How do I clear the cache?

To clear the cache, run this command:

```sh
tool cache clear
```

## Where is the cache kept?

The cache lives in the build folder.

## Remote caches

A remote cache is shared between machines.
"""


def _gz(path: Path, rows: list[dict[str, object]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def _data(tmp_path: Path, repo: str = "someone/tool") -> Path:
    (tmp_path / "corpus").mkdir(parents=True)
    _gz(tmp_path / "corpus" / (repo.replace("/", "__") + ".jsonl.gz"), [{"path": "cache.md", "text": PAGE}])
    row = {
        "repo": repo,
        "path": "cache.md",
        "question": "How do I clear the cache?",
        "positive": "To clear the cache, run this command:",
        "positive_context": "To clear the cache, run this command:",
        "negatives": ["The cache lives in the build folder."],
        "kind": "faq",
    }
    _gz(tmp_path / "pairs.jsonl.gz", [row])
    rewrites = [
        {"text": "how can I wipe stored build results?"},
        {"text": "my disk is full of old artefacts"},
        {"text": ""},
    ]
    _gz(
        tmp_path / "paraphrases.jsonl.gz",
        [{"repo": repo, "kind": "faq", "question": row["question"], "rewrites": rewrites}],
    )
    check = {
        "repo": repo,
        "kind": "faq",
        "question": row["question"],
        "rewrite": "my disk is full of old artefacts",
        "picks_answer": False,
    }
    _gz(tmp_path / "rewrite_checks.jsonl.gz", [check])
    return tmp_path


def test_rewrites_the_round_trip_check_showed_missing_the_answer_and_empty_ones_are_dropped(
    tmp_path: Path,
) -> None:
    kept = kept_rewrites(_data(tmp_path))
    assert kept == {
        ("someone/tool", "faq", "How do I clear the cache?"): ["how can I wipe stored build results?"]
    }


def test_a_row_gives_its_question_and_rewrite_the_answer_as_embedded_and_near_misses(tmp_path: Path) -> None:
    triplets = docs_triplets(_data(tmp_path))
    expected = contextual_text(
        "To clear the cache, run this command:",
        ("Caching", "How do I clear the cache?"),
        None,
        None,
        ContextOptions(),
    )
    assert [t.query for t in triplets] == [
        "How do I clear the cache?",
        "how can I wipe stored build results?",
    ]
    assert {t.positive for t in triplets} == {expected}
    assert len({t.group for t in triplets}) == 1
    negatives = triplets[0].negatives
    assert negatives[0] == "Caching > Where is the cache kept?:\nThe cache lives in the build folder."
    assert all("How do I clear the cache?" not in n for n in negatives)


def test_held_out_repositories_give_no_training_rows(tmp_path: Path) -> None:
    assert docs_triplets(_data(tmp_path, HELD_OUT[0])) == []


def test_a_batch_never_holds_two_wordings_of_one_answer(tmp_path: Path) -> None:
    import random

    triplets = docs_triplets(_data(tmp_path)) * 3
    for batch in batches(triplets, 4, random.Random(1)):
        assert len({t.group for t in batch}) == len(batch)


def test_dense_recall_counts_a_question_whose_answer_ranks_in_the_top_k(tmp_path: Path) -> None:
    data = _data(tmp_path, HELD_OUT[0])
    questions, units = load_questions(data, ("heldout",))
    assert [q.worded for q in questions] == ["mined", "rewrite"]

    def answer_first(texts: list[str]) -> np.ndarray:  # a query and the answer share one direction
        rows = [
            [1.0, 0.0] if "run this" in t or t.startswith(("How do", "how can")) else [0.0, 1.0]
            for t in texts
        ]
        return np.array(rows, dtype=np.float32)

    figures = dense_recall(answer_first, questions, units, ks=(1,))
    assert figures["mined@1"] == 1.0
    assert figures["rewrite@1"] == 1.0

    def answer_last(texts: list[str]) -> np.ndarray:
        return np.array(
            [[0.0, 1.0] if "run this command" in t else [1.0, 0.0] for t in texts], dtype=np.float32
        )

    assert dense_recall(answer_last, questions, units, ks=(1,))["rewrite@1"] == 0.0


DOCS_FAQ = Path(__file__).resolve().parents[2] / "shared" / "traindata" / "docs_faq"


@pytest.mark.skipif(not DOCS_FAQ.exists(), reason="../shared/traindata/docs_faq is not beside the checkout")
def test_the_committed_rewrites_are_the_training_repositories_kept_ones_and_nothing_held_out() -> None:
    committed = read_rewrites(REWRITES)
    derived = {k: v for k, v in kept_rewrites(DOCS_FAQ).items() if role(k[0]) == "train" and v}
    assert committed == derived
    assert not {repo for repo, _, _ in committed} & (set(HELD_OUT) | set(TUNE))


def test_written_rewrites_read_back_the_same(tmp_path: Path) -> None:
    data = _data(tmp_path / "d")
    out = tmp_path / "rewrites.jsonl.gz"
    assert write_rewrites(data, out) == 1
    assert read_rewrites(out) == kept_rewrites(data)
    assert [t.query for t in docs_triplets(data, rewrites_file=out)] == [
        "How do I clear the cache?",
        "how can I wipe stored build results?",
    ]


def test_an_embedder_spec_names_its_label_model_and_runtime_or_takes_the_default_runtime() -> None:
    from indexer.embedder import EmbedderRuntime
    from training.embedder_eval import embedder_spec

    docs = embedder_spec("docs=citeline-docs@onnx-int8")
    assert docs == ("docs", "citeline-docs", EmbedderRuntime.ONNX_INT8)
    assert embedder_spec("default=") == ("default", "", EmbedderRuntime.AUTO)
    base = embedder_spec("base=all-MiniLM-L6-v2", "torch")
    assert base == ("base", "all-MiniLM-L6-v2", EmbedderRuntime.TORCH)


def _written(data: Path, repo: str = "someone/tool", usable: bool = True) -> Path:
    row = {
        "row": 0,
        "repo": repo,
        "kind": "faq",
        "path": "cache.md",
        "question": "How do I clear the cache?",
        "usable": usable,
        "plain": "how can I wipe the stored build stuff?",
        "situation": "my builds pick up stale files and I want to start over, how?",
        "terse": "wipe build cache",
        "near_miss": "where on disk are the stored build files?",
    }
    _gz(data / "users_written.jsonl.gz", [row])
    return data / "users_written.jsonl.gz"


def test_each_written_style_meets_the_mined_answer_with_its_near_miss_question_and_negatives(
    tmp_path: Path,
) -> None:
    from training.embedder_written import written_triplets

    data = _data(tmp_path)
    triplets = written_triplets([_written(data)])
    mined = docs_triplets(data, rewrites=False)[0]
    assert [t.query for t in triplets] == [
        "how can I wipe the stored build stuff?",
        "my builds pick up stale files and I want to start over, how?",
        "wipe build cache",
    ]
    assert {(t.positive, t.negatives, t.group) for t in triplets} == {
        (mined.positive, mined.negatives, mined.group)
    }
    assert {t.near_miss for t in triplets} == {"where on disk are the stored build files?"}


def test_unusable_and_held_out_written_rows_give_no_triplets(tmp_path: Path) -> None:
    from training.embedder_written import written_triplets

    assert written_triplets([_written(_data(tmp_path / "a"), usable=False)]) == []
    held = _data(tmp_path / "b", HELD_OUT[0])
    assert written_triplets([_written(held, HELD_OUT[0])]) == []


def test_a_written_file_that_names_another_mined_question_is_refused(tmp_path: Path) -> None:
    from training.embedder_written import written_triplets

    file = _written(_data(tmp_path))
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    rows[0]["question"] = "Where is the cache kept?"
    _gz(file, rows)
    with pytest.raises(ValueError, match="the mined row differs"):
        written_triplets([file])


def test_the_question_side_term_is_low_when_an_answer_is_nearest_its_own_question() -> None:
    import torch

    from training.embedder_data import Triplet
    from training.train_embedder import _question_side

    batch = [Triplet("q1", "p1", (), "g1", "s", "n1"), Triplet("q2", "p2", (), "g2", "s", "n2")]
    asked = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])  # q1 q2 n1 n2
    near_own = _question_side(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), asked, batch, [0, 1])
    near_miss = _question_side(torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]), asked, batch, [0, 1])
    assert float(near_own) < 0.01 < 1.0 < float(near_miss)
