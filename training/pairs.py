"""A built relevance mix as one file: build it where the corpus and citeline's parser are, train elsewhere.

A lent GPU machine takes a small working tree and has none of citeline's dependencies, while building the
docs mix parses thousands of Markdown pages with citeline's own parser. ``save`` writes what ``build``
returned (training rows with repeats expanded, validation rows, per-source counts) and the recipe's name to
a gzipped JSONL file; ``load`` reads it back into the same rows, so a run from the file trains on exactly the
pairs, in exactly the order, that a run from ``traindata/`` would.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from training.data import RelRow, read_jsonl

__all__ = ["load", "save"]

_FIT, _VAL = "fit", "val"


def save(
    path: Path, rows: list[RelRow], val: list[RelRow], counts: dict[str, dict[str, int]], head: dict[str, Any]
) -> None:
    """Write the mix: a first line with ``head`` and the counts, then one line per row in order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"head": head, "counts": counts}) + "\n")
        for split, part in ((_FIT, rows), (_VAL, val)):
            for row in part:
                fh.write(json.dumps({"split": split, **asdict(row)}) + "\n")


def load(path: Path) -> tuple[list[RelRow], list[RelRow], dict[str, dict[str, int]], dict[str, Any]]:
    """The training rows, validation rows, counts and head that ``save`` wrote."""
    lines = read_jsonl(path)
    first = next(lines, None)
    if first is None or "counts" not in first:
        raise ValueError(f"{path}: not a pairs file written by training.pairs (no header line)")
    parts: dict[str, list[RelRow]] = {_FIT: [], _VAL: []}
    for obj in lines:
        split = obj.pop("split")
        parts[split].append(RelRow(**obj))
    return parts[_FIT], parts[_VAL], first["counts"], first["head"]
