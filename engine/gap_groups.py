"""Grouping askings of one question in other words (the rule `engine.gaps` states), and what grouping reads.

`Groups` keeps each group's first wording and section, so a later question (a verified answer, a sentence the
team accepted) can be matched to the group it would have joined (`Groups.best`) by the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from engine.gap_kinds import Passage
from engine.words import stems

__all__ = ["Asked", "GapConfig", "Groups", "grouped", "question_words", "section_of"]


@dataclass(frozen=True, slots=True)
class GapConfig:
    """How askings are grouped, and how many are read."""

    min_overlap: float = 0.6
    same_section_overlap: float = 0.34
    max_wordings: int = 10
    max_rows: int = 5000
    """The most recent askings of each kind that are read (older ones are left out of the groups), and the
    most recent answers and accepted sentences read as closing them."""
    floor: float = 0.35
    """The relevance floor a rating is measured against when its asking recorded none: the verifier's
    `min_relevance` (`engine.verdicts.VerifierConfig`). An asking's own floor (the `threshold` of its passages
    measured on `relevance`) wins."""
    near_margin: float = 0.1
    """How far below the floor a best rating still counts as near it: below `floor - near_margin` a gap is
    `not_in_docs`, from there up to the floor `near_miss` (`engine.gap_kinds`)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """One asking of a question the docs did not answer: `kind` is `insufficient`, `fail`, `unhelpful` or
    `stale`; the closest section is where search came closest (or the accepted sentence, for `stale`)."""

    question: str
    kind: str
    at: datetime
    answer_id: str | None = None
    repository: str | None = None
    path: str | None = None
    heading: str | None = None
    detail: str | None = None
    """A comment given with the feedback, or the stale sentence's text."""
    passages: tuple[Passage, ...] = ()
    """The passages it read, rated or not (`engine.gap_kinds.near_passages`); a stale one's accepted one."""
    rated: bool = False
    """Whether its passages were rated against the relevance floor."""


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b))


class Groups:
    """Askings grouped as the module says, and where another question would join (`best`)."""

    def __init__(self, config: GapConfig) -> None:
        self.config = config
        self.seeds: list[tuple[frozenset[str], tuple[str, str] | None]] = []
        self.members: list[list[Asked]] = []
        self.accepted: list[list[tuple[Passage, datetime]]] = []
        self.by_word: dict[str, list[int]] = {}  # only groups sharing a word can be joined

    def best(self, words: frozenset[str], section: tuple[str, str] | None) -> int:
        """The group a question of `words` closest to `section` joins; -1 for none."""
        best, best_score = -1, 0.0
        for index in sorted({i for w in words for i in self.by_word.get(w, ())}):
            seed, seed_section = self.seeds[index]
            score = _overlap(words, seed)
            same = section is not None and section == seed_section
            needed = self.config.same_section_overlap if same else self.config.min_overlap
            if score >= needed and score > best_score:
                best, best_score = index, score
        return best

    def add(self, item: Asked) -> None:
        """Add `item` to the group it joins, or start one with it."""
        words = question_words(item.question)
        section = section_of(item.path, item.heading)
        best = self.best(words, section)
        if best >= 0:
            self.members[best].append(item)
            return
        for word in words:
            self.by_word.setdefault(word, []).append(len(self.seeds))
        self.seeds.append((words, section))
        self.members.append([item])
        self.accepted.append([])


def question_words(question: str) -> frozenset[str]:
    """A question's content-word stems (its stripped lower-case text when it has none)."""
    return frozenset(stems(question)) or frozenset({question.strip().lower()})


def section_of(path: str | None, heading: str | None) -> tuple[str, str] | None:
    """A section as grouping compares it; None without a path."""
    return (path, heading or "") if path else None


def grouped(asked: Iterable[Asked], config: GapConfig) -> Groups:
    """`asked` grouped, oldest first (`engine.gaps`)."""
    groups = Groups(config)
    for item in sorted(asked, key=lambda a: a.at):
        groups.add(item)
    return groups
