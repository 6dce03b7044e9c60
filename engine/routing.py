"""FastPath or ReasonPath, decided from the question's shape and the first retrieval, with no LLM call.

Routing must be cheap and repeatable: the same question over the same index always takes the same route, so
an answer can be explained and cached. Multi-hop shapes (a comparison, a bridge phrase such as "the team that
...", several named entities) go to the loop, because one retrieval rarely holds both hops; so does a
single-fact question whose first retrieval is not confident (its top hit barely beats the next ones).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.answers import Route
from engine.search import Hit
from engine.words import content_terms, entities

__all__ = ["QuestionShape", "RoutingConfig", "RoutingDecision", "question_parts", "route", "shape"]

_COMPARISON = re.compile(
    r"\b(which|who|what)\b.*\b(or)\b|^\s*(is|are|was|were|do|does|did|has|have)\b.+\bor\b"
    r"|\bboth\b|\beither\b|\bneither\b|\bsame\b|\bcompared?\b|\bdiffer"
    r"|\b\w+er than\b|\b(more|less|fewer) than\b",
    re.IGNORECASE,
)
_BRIDGE = re.compile(
    r"\w+\s+(that|which|who|whose|whom|where)\s+\w+|\bof the\b.+\bof\b|'s\b.+'s\b"
    r"|\bthe \w+ (of|in|for|by) the\b",
    re.IGNORECASE,
)

_PART_BREAK = re.compile(
    r"(?:,|;|\s+-|\s+–)?\s+(?:and|but|or)\s+(?=(?:(?:on|in|at|for|from|to|with|by)\s+)?(?:what|which|who|where|when|why|how|is|are|was|were|do|does"
    r"|did|can|could|should|will|would|must)\b)"
    r"|[?;]\s+(?=\S)",
    re.IGNORECASE,
)
_MIN_PART_TERMS = 2


def question_parts(question: str) -> tuple[str, ...]:
    """The questions `question` asks at once, each to be answered by its own clause: "how do I make X
    accept Y, and on which path will it receive them?" asks two. A part needs two content terms of its own,
    or it is only a tail of the other ("... and why?"), and the question stays whole."""
    pieces = [p.strip(" ,;?-–") for p in _PART_BREAK.split(question)]
    parts = tuple(p for p in pieces if p)
    if len(parts) < 2 or any(len(content_terms(p)) < _MIN_PART_TERMS for p in parts):
        return (question.strip(),)
    return parts


@dataclass(frozen=True, slots=True)
class QuestionShape:
    """The surface features routing reads from a question."""

    comparison: bool
    bridge: bool
    entities: tuple[str, ...]

    @property
    def hops(self) -> int:
        """How many distinct documents a complete answer is expected to draw on."""
        return 2 if self.comparison or self.bridge or len(self.entities) >= 2 else 1


def shape(question: str) -> QuestionShape:
    """Comparison, bridge and entity features of `question`."""
    return QuestionShape(
        comparison=bool(_COMPARISON.search(question)),
        bridge=bool(_BRIDGE.search(question)),
        entities=tuple(entities(question)),
    )


@dataclass(frozen=True, slots=True)
class RoutingConfig:
    """When a first retrieval counts as confident: a high top score that clearly leads the runner-up."""

    min_top_score: float = 0.5
    min_margin: float = 0.1
    max_entities_fast: int = 1


@dataclass(frozen=True, slots=True)
class RoutingDecision:
    """The route and every reason that led to it, for the trace."""

    route: Route
    shape: QuestionShape
    reasons: tuple[str, ...] = field(default_factory=tuple)


def _confidence(hits: Sequence[Hit]) -> tuple[float, float]:
    """Top score and its margin over the runner-up: reranker scores, else vector cosines.

    RRF scores are ranks in disguise (first place in both lanes always scores the same), so they say nothing
    about confidence; without a reranker or vectors a retrieval is never confident.
    """
    key = next((k for k in ("rerank", "vector") if hits and k in hits[0].scores), None)
    if key is None:
        return 0.0, 0.0
    scores = [h.scores.get(key, 0.0) for h in hits[:2]]
    return scores[0], scores[0] - (scores[1] if len(scores) > 1 else 0.0)


def route(question: str, first_hits: Sequence[Hit], config: RoutingConfig | None = None) -> RoutingDecision:
    """FAST only for a single-entity, non-comparison, non-bridge question with a confident first retrieval."""
    config = config or RoutingConfig()
    features = shape(question)
    reasons = []
    if features.comparison:
        reasons.append("comparison phrasing")
    if features.bridge:
        reasons.append("bridge phrasing")
    if len(features.entities) > config.max_entities_fast:
        reasons.append(f"{len(features.entities)} entities")
    top, margin = _confidence(first_hits)
    if top < config.min_top_score or margin < config.min_margin:
        reasons.append(f"first retrieval not confident (top {top:.2f}, margin {margin:.2f})")
    if reasons:
        return RoutingDecision(Route.REASON, features, tuple(reasons))
    return RoutingDecision(Route.FAST, features, (f"confident first retrieval (top {top:.2f})",))
