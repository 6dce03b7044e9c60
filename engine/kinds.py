"""The enumerations an answer is described by: its outcome, route and budget, what a clause needs, the
verification stage that refused a candidate, and the state of a stored answer's source now.

Each value is what the answer's JSON carries (`engine.answers`), so a value never changes once shipped.
"""

from __future__ import annotations

import enum

__all__ = ["Budget", "ReferenceNeed", "Route", "SourceState", "Stage", "Status"]


class Status(enum.Enum):
    """The outcome of one question."""

    ANSWER = "answer"
    """At least one clause passed verification."""
    INSUFFICIENT = "insufficient"
    """The engine ran but no clause could be verified against the indexed sources."""
    FAIL = "fail"
    """The engine could not run (a model or the database failed); `reason` says why."""


class Route(enum.Enum):
    """Which path answered the question, chosen without an LLM."""

    FAST = "fast"
    """One retrieval and one verification pass: single-fact questions with a confident first retrieval."""
    REASON = "reason"
    """The IRCoT loop: plan a clause, retrieve for it, verify, repeat (multi-hop, comparison, unsure)."""


class Budget(enum.Enum):
    """How much work one question may cost."""

    LOW = "low"
    """Few rounds, and each clause stops at its first sufficient supports."""
    MID = "mid"
    """The default: more rounds, and every supporting candidate is scored."""
    HIGH = "high"
    """The most rounds and candidates, every stage on each; stale stored answers are re-verified."""


class ReferenceNeed(enum.Enum):
    """How many sources a planned clause needs to be accepted."""

    NONE = "none"
    """A connective clause adding no fact: every content word must already be in the accepted clauses."""
    SINGLE = "single"
    """One source sentence (with its neighbour as context) must entail the clause."""
    MULTI = "multi"
    """The clause joins facts: two or more sources, each needed, must entail it together."""


class Stage(enum.Enum):
    """The verification stage that refused a candidate clause: what a rejection is counted by."""

    ENTAILMENT = "entailment"
    """No candidate source entails it (for a multi-reference clause: not together, or not each needed)."""
    COVERAGE = "coverage"
    """Its key terms or numbers are not in its sources."""
    CONTRADICTION = "contradiction"
    """Other evidence, or an accepted clause, contradicts it."""
    RELEVANCE = "relevance"
    """Its sources do not bear on the question."""
    COMPOSITE = "composite"
    """Every stage passed, but their composite is below the threshold."""
    CONFLICT = "conflict"
    """Its own sources entail it, but a more recently changed source says otherwise and the engine's
    conflict policy keeps the more recent one."""


class SourceState(enum.Enum):
    """How a stored answer's cited sentence compares with the index now."""

    LIVE = "live"
    """The cited sentence exists with the same normalized text in the same document."""
    CHANGED = "changed"
    """The sentence row exists but its text hash or its document differs from what was cited, or the sentence
    is gone from a document that is still indexed (its file was edited)."""
    DELETED = "deleted"
    """The sentence and its document are gone (the file was deleted): only the stored copy remains."""
