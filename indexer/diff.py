"""Multiset diff of a document's stored sentences against its freshly parsed ones.

Sentences are matched by normalized hash, first come first served in document order, so duplicates
("See above.") pair up one to one. A matched sentence keeps its row and id even when it moved: only its
position columns are touched, and it is not re-embedded.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["MovedSentence", "SentenceDiff", "StoredSentence", "diff_sentences"]


@dataclass(frozen=True, slots=True)
class StoredSentence:
    """The columns of a stored sentence that the diff compares."""

    id: int
    norm_hash: bytes
    ordinal: int
    kind: str
    text: str
    heading_path: tuple[str, ...]
    line_start: int
    line_end: int
    intro_ordinal: int | None = None
    """A code unit's introducing sentence, by ordinal in the same document (`TextUnit.intro`)."""


@dataclass(frozen=True, slots=True)
class MovedSentence:
    """A kept row whose position, heading path or exact spelling changed."""

    id: int
    new_index: int
    heading_changed: bool


@dataclass(slots=True)
class SentenceDiff:
    """What re-indexing one document must do: indexes refer to the new sentence list."""

    inserted: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    moved: list[MovedSentence] = field(default_factory=list)
    unchanged: int = 0


def diff_sentences(stored: Sequence[StoredSentence], new: Sequence[StoredSentence]) -> SentenceDiff:
    """Match `new` (ids unused) against `stored` by normalized hash, as multisets."""
    pool: defaultdict[bytes, deque[StoredSentence]] = defaultdict(deque)
    for old in sorted(stored, key=lambda s: s.ordinal):
        pool[old.norm_hash].append(old)
    result = SentenceDiff()
    for index, fresh in enumerate(new):
        candidates = pool.get(fresh.norm_hash)
        if not candidates:
            result.inserted.append(index)
            continue
        old = candidates.popleft()
        heading_changed = old.heading_path != fresh.heading_path
        if (
            heading_changed
            or old.ordinal != fresh.ordinal
            or old.line_start != fresh.line_start
            or old.line_end != fresh.line_end
            or old.kind != fresh.kind
            or old.text != fresh.text
            or old.intro_ordinal != fresh.intro_ordinal
        ):
            result.moved.append(MovedSentence(old.id, index, heading_changed))
        else:
            result.unchanged += 1
    result.deleted = [old.id for remaining in pool.values() for old in remaining]
    return result
