"""A built relevance mix travels as one file: what comes back is what was built, and training from it needs
neither the corpus nor citeline's parser (a lent GPU machine has neither)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from training.data import RelRow
from training.pairs import load, save

ROOT = Path(__file__).resolve().parents[1]


def _rows() -> tuple[list[RelRow], list[RelRow]]:
    fit = [
        RelRow("clear cache", "Run make clean.", 1, "repo/page/q1", "docs_faq/pairs.jsonl.gz"),
        RelRow("clear cache", "Caching: be careful.", 0, "repo/page/q1", "docs_faq/pairs.jsonl.gz", 0.15),
        RelRow("who wrote it", "Ann wrote it.", 1, "7", "relevance/squad"),
    ]
    val = [RelRow("port", "The port is 8080.", 1, "repo/p2/q", "docs_faq/pairs.jsonl.gz")]
    return fit, val


def test_the_rows_come_back_in_order_with_their_soft_targets_counts_and_head(tmp_path: Path) -> None:
    fit, val = _rows()
    counts = {"relevance/squad": {"rows": 3, "train": 1}}
    save(tmp_path / "mix.jsonl.gz", fit, val, counts, {"docs": True, "docs_recipe": "docs6x"})
    got_fit, got_val, got_counts, head = load(tmp_path / "mix.jsonl.gz")
    assert got_fit == fit and got_val == val
    assert [r.goal for r in got_fit] == [1.0, 0.15, 1.0]
    assert got_counts == counts and head == {"docs": True, "docs_recipe": "docs6x"}


def test_a_file_that_is_not_a_saved_mix_is_refused_with_its_name(tmp_path: Path) -> None:
    other = tmp_path / "rows.jsonl"
    other.write_text('{"query": "q", "passage": "p", "label": 1}\n')
    with pytest.raises(ValueError, match=r"rows\.jsonl: not a pairs file"):
        load(other)


def test_the_relevance_script_loads_without_the_parser_or_the_engine() -> None:
    code = (
        "import sys, training.train_relevance\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('engine', 'indexer', 'psycopg'))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
