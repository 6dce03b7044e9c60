"""Load, filter, subsample and split the gzipped JSONL training sets in ``traindata/``.

Everything here is deterministic given a seed, because the model cards promise that the exact command
reproduces the shipped weights. Splits are made per *group* (NLI: premise; relevance: query) by hashing,
so no premise or query is seen on both sides of a split, and a row's side does not depend on file order.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "NLI_LABELS",
    "NliRow",
    "RelRow",
    "Source",
    "feedback_row",
    "group_hash_split",
    "load_feedback",
    "load_nli",
    "load_relevance",
    "norm_key",
    "read_jsonl",
    "sample_groups",
    "select",
]

NLI_LABELS = ("entailment", "neutral", "contradiction")
"""Class order of the shipped entailment model (its ``id2label``)."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class NliRow:
    premise: str
    hypothesis: str
    label: str  # entailment / neutral / contradiction, or not_entailment for 2-way sets
    source: str


@dataclass(frozen=True, slots=True)
class RelRow:
    query: str
    passage: str
    label: int  # 1 relevant, 0 not
    group: str  # one ranking list: the set's question id, else the query text
    source: str
    target: float | None = None
    """What the model is trained towards when the label is uncertain (a soft label); None: the label."""

    @property
    def goal(self) -> float:
        """The training target: the soft label when there is one, else the label."""
        return float(self.label) if self.target is None else self.target


@dataclass(frozen=True, slots=True)
class Source:
    """One file or folder of a training mix: at most ``cap`` rows (whole groups), seen ``repeats`` times."""

    path: str
    cap: int | None = None
    repeats: int = 1


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a ``.jsonl`` or ``.jsonl.gz`` file."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _files(path: Path) -> list[Path]:
    """A file, or the sorted JSONL(.gz) files of a folder (sorted so the row order is reproducible)."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
    return [path]


def _rel_name(path: Path) -> str:
    """``nli/lingnli/train.jsonl.gz``-style name for the ``source`` field of loaded rows."""
    return "/".join(path.parts[-3:])


def load_nli(path: Path) -> list[NliRow]:
    """Rows of an NLI file or folder, labels lower-cased (``not_entailment`` kept for 2-way sets)."""
    rows = []
    for file in _files(path):
        for obj in read_jsonl(file):
            label = str(obj["label"]).strip().lower().replace("-", "_")
            rows.append(NliRow(obj["premise"], obj["hypothesis"], label, _rel_name(file)))
    return rows


def feedback_row(obj: dict[str, Any], source: str = "feedback") -> RelRow:
    """One line of `citeline export-feedback` as a relevance row: the question asked in a user's words, the
    sentence the team accepted (label 1) or rejected (label 0) for it, grouped by question."""
    return RelRow(obj["question"], obj["sentence"], int(bool(obj["helpful"])), f"q:{obj['question']}", source)


def load_feedback(path: Path) -> list[RelRow]:
    """The relevance rows of a `citeline export-feedback` file (or a folder of them), in file order."""
    return [feedback_row(obj, _rel_name(file)) for file in _files(path) for obj in read_jsonl(file)]


def load_relevance(path: Path) -> list[RelRow]:
    """Rows of a relevance file or folder; the group is the set's question id when it has one. A line of
    `citeline export-feedback` (it has `helpful`) is read by `feedback_row`, so any recipe that trains on a
    relevance set can train on a team's own feedback."""
    rows = []
    for file in _files(path):
        for obj in read_jsonl(file):
            if "helpful" in obj and "passage" not in obj:
                rows.append(feedback_row(obj, _rel_name(file)))
                continue
            qid = obj.get("qid", obj.get("qidx", obj.get("idx")))
            group = f"{file.name}:{qid}" if qid is not None else f"q:{obj['query']}"
            rows.append(RelRow(obj["query"], obj["passage"], int(obj["label"]), group, _rel_name(file)))
    return rows


_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def norm_key(text: str) -> str:
    """Case-, space- and punctuation-insensitive key, so tokenized and raw copies of a sentence match."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


def _unit_hash(seed: int, key: str) -> float:
    digest = hashlib.sha1(f"{seed}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def group_hash_split(
    rows: Iterable[T], group: Callable[[T], str], fraction: float, seed: int
) -> tuple[list[T], list[T]]:
    """(train, held-out): a group goes to held-out when its seeded hash falls below ``fraction``."""
    train: list[T] = []
    held: list[T] = []
    for row in rows:
        (held if _unit_hash(seed, group(row)) < fraction else train).append(row)
    return train, held


def sample_groups(rows: list[T], group: Callable[[T], str], cap: int | None, seed: int) -> list[T]:
    """Whole groups, in seeded random order, until ``cap`` rows; keeps a set's hard negatives together."""
    if cap is None or len(rows) <= cap:
        return rows
    by_group: dict[str, list[T]] = {}
    for row in rows:
        by_group.setdefault(group(row), []).append(row)
    keys = sorted(by_group)
    random.Random(seed).shuffle(keys)
    out: list[T] = []
    for key in keys:
        if len(out) + len(by_group[key]) > cap:
            continue
        out.extend(by_group[key])
    return out


def select(
    rows: list[T], texts: Callable[[T], tuple[str, str]], banned: set[str], seen: set[tuple[str, str]]
) -> list[T]:
    """Drop rows sharing a (normalised) text with an evaluation set, and pairs already in ``seen``.

    ``seen`` is shared across the sources of one mix, so a pair present in two sets is trained on once.
    """
    out = []
    for row in rows:
        a, b = texts(row)
        pair = (norm_key(a), norm_key(b))
        if pair[0] in banned or pair[1] in banned or pair in seen:
            continue
        seen.add(pair)
        out.append(row)
    return out
