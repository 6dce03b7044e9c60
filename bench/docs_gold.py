"""Rows of a docs QA file (the `prometheus_docs/qa_dev.jsonl` format), the fixed tune/held-out split, and
the rule that says whether an indexed unit is a gold sentence.

Gold text is written as the file's README says: links as their text, line breaks as spaces, a leading list
marker or admonition label dropped, backticks and emphasis kept. citeline's units are plain text (code
spans without backticks, emphasis markers removed), so both sides are normalized the same way before they
are compared: NFKC, typographic quotes and dashes made plain, backticks and emphasis markers (`*`, and `_`
at a word's edge) removed, a leading list marker or upper-case label ("CAUTION:") dropped, lowercased,
whitespace folded, trailing punctuation dropped.

A unit matches a gold sentence when, in the same file, the normalized texts are equal, or one contains the
other and the shorter is at least half as long (the splitters cut differently), or their word sets overlap
by 90% of the larger one (small markup differences); when the row gives the gold's line, such a near match
must also sit at that line (from 5 lines before the unit to 1 after it: "This is also disabled by default."
is not "This is disabled by default." a page further). In another file only equal normalized text matches:
the same paragraph is sometimes copied between pages, and a near-copy elsewhere is another sentence. A code
unit matches when the unit right before it in its document (by ordinal) is a gold sentence: the rows'
gold for a command is the sentence that introduces its block. A changed row's old and new sentences are
near-copies, so there a unit is the old (new) one only when it is closer to it than to the new (old) one.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchkit import words

__all__ = [
    "GOLD_KINDS",
    "Gold",
    "QARow",
    "Unit",
    "load_rows",
    "matches",
    "normalize",
    "similarity",
    "split_rows",
    "unit_is_gold",
]

GOLD_KINDS = ("lookup", "two_sentence", "comparison", "code")
"""Kinds whose rows are answerable at the tip and carry `gold` sentences."""

_TRANSLATE = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "–": "-", "—": "-", "`": None})
_EMPHASIS = re.compile(r"\*+|(?<!\w)_+|_+(?!\w)")
_LEAD = re.compile(r"^(?:[*+-]|\d{1,3}[.)])\s+|^[A-Z][A-Z ]{1,20}:\s+")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """The comparable form of a sentence (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE).strip()
    text = _LEAD.sub("", text, count=1)
    text = _EMPHASIS.sub("", text)
    return _SPACE.sub(" ", text).strip().rstrip(".:;!?,").strip().lower()


@dataclass(frozen=True, slots=True)
class Gold:
    """One gold sentence: its file and its text as written in the row."""

    path: str
    sentence: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class QARow:
    """One question; `changed` rows also carry the old and new commit and sentence of `path`."""

    id: str
    kind: str
    question: str
    gold: tuple[Gold, ...]
    path: str = ""
    old_commit: str = ""
    new_commit: str = ""
    old_sentence: str = ""
    new_sentence: str = ""
    rival: str = ""
    """A sentence a gold unit must be closer to its gold than to: a changed row's other side."""

    @property
    def changed(self) -> bool:
        return self.kind == "changed"

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"


def _row(data: dict[str, Any], where: str) -> QARow:
    try:
        if data["kind"] == "changed":
            return QARow(
                str(data["id"]),
                "changed",
                str(data["question"]),
                (Gold(str(data["path"]), str(data["new_sentence"])),),
                str(data["path"]),
                str(data["old_commit"]),
                str(data["new_commit"]),
                str(data["old_sentence"]),
                str(data["new_sentence"]),
                str(data["old_sentence"]),
            )
        gold = tuple(Gold(str(g["path"]), str(g["sentence"]), int(g.get("line", 0))) for g in data["gold"])
        return QARow(str(data["id"]), str(data["kind"]), str(data["question"]), gold)
    except (KeyError, TypeError, ValueError) as exc:
        raise SystemExit(f"{where}: bad row ({type(exc).__name__}: {exc})") from None


def load_rows(path: Path) -> list[QARow]:
    """Every row of the JSON-lines file; a malformed line stops the run with its line number."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{number}: not JSON ({exc})") from None
            rows.append(_row(data, f"{path}:{number}"))
    if len({r.id for r in rows}) != len(rows):
        raise SystemExit(f"{path}: row ids are not unique")
    return rows


def split_rows(rows: list[QARow]) -> dict[str, str]:
    """The fixed split: within each kind, rows ordered by id; the 1st, 3rd, 5th... are `tune`, the 2nd,
    4th... `heldout`. Returns id -> split."""
    by_kind: dict[str, list[QARow]] = defaultdict(list)
    for row in rows:
        by_kind[row.kind].append(row)
    split = {}
    for members in by_kind.values():
        for index, row in enumerate(sorted(members, key=lambda r: r.id)):
            split[row.id] = "tune" if index % 2 == 0 else "heldout"
    return split


def similarity(text: str, gold: str, *, same_path: bool) -> float:
    """How closely unit text `text` matches `gold`: 1 for equal normalized text; in the same file, the
    shorter's share of the longer when one contains the other, else the word overlap over the larger word
    set; 0 when nothing applies. `matches` is this above 0."""
    mine, theirs = normalize(text), normalize(gold)
    if not mine or not theirs:
        return 0.0
    if mine == theirs:
        return 1.0
    if not same_path:
        return 0.0
    short, long = sorted((mine, theirs), key=len)
    if short in long and len(short) >= 0.5 * len(long):
        return max(0.8, len(short) / len(long))
    a, b = words(mine), words(theirs)
    overlap = len(a & b) / max(len(a), len(b)) if a and b else 0.0
    return overlap if overlap >= 0.9 else 0.0


def matches(text: str, gold: str, *, same_path: bool, rival: str = "") -> bool:
    """Whether unit text `text` is the gold sentence `gold` (the rule of the module docstring); with a
    `rival` (the other side of a changed fact), only when `text` is closer to `gold` than to it."""
    score = similarity(text, gold, same_path=same_path)
    return score > 0.0 and (not rival or score > similarity(text, rival, same_path=same_path))


@dataclass(frozen=True, slots=True)
class Unit:
    """An indexed unit as the bench sees it: a cited source or a search hit, with the unit before it."""

    sentence_id: int
    path: str
    text: str
    line_start: int
    line_end: int
    kind: str
    previous_text: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sentence_id": self.sentence_id,
            "path": self.path,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "kind": self.kind,
            "text": self.text,
        }


def _at_line(unit: Unit, gold: Gold) -> bool:
    return not gold.line or unit.line_start - 5 <= gold.line <= unit.line_end + 1


def unit_is_gold(unit: Unit, gold: Gold, rival: str = "") -> bool:
    """The unit is `gold` (closer to it than to `rival`), or is a code block right after it in its file."""
    same = unit.path == gold.path
    if matches(unit.text, gold.sentence, same_path=same, rival=rival):
        exact = similarity(unit.text, gold.sentence, same_path=False) == 1.0
        return exact or _at_line(unit, gold)
    return (
        unit.kind == "code"
        and same
        and unit.previous_text is not None
        and matches(unit.previous_text, gold.sentence, same_path=True, rival=rival)
        and _at_line(unit, gold)
    )
