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

__all__ = [
    "QuestionShape",
    "RoutingConfig",
    "RoutingDecision",
    "content_terms",
    "entities",
    "question_parts",
    "route",
    "shape",
    "stem",
    "stems",
]

_WORD = re.compile(r"[^\W_][\w'’\-]*")
"""A word in any script: "Prológica" and "Høgh" are one word each, not "Prol gica" and "H gh"."""
_DIGIT_DASH = re.compile(r"(?<=\d)[‐‑‒–—−](?=\d)")
_CAPITAL = "A-Z0-9À-ÖØ-Þ"
_ENTITY = re.compile(
    rf"(?:\"[^\"]+\"|“[^”]+”|(?:[{_CAPITAL}][\w'’\-.]*)(?:\s+(?:of|the|de|&)?\s*[{_CAPITAL}][\w'’\-.]*)*)"
)
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
STOPWORDS = frozenset(
    """a an the of in on at to for by with from as is are was were be been being and or but not no nor so
    what which who whom whose when where why how that this these those it its they them their there here
    do does did has have had can could would should will shall may might must than then also into onto
    about over under between both either neither same more less most least any all some such only very
    one i you he she we his her our your my me him us name named called""".split()  # noqa: SIM905
)


def stem(word: str) -> str:
    """A light suffix-stripping stem, so that inflections meet: "defeated", "defeating" and "defeats" all
    give "defeat", "produced" and "produce" give "produc". Words of four letters or fewer are kept whole."""
    word = word.lower()
    if len(word) <= 4 or not word.isalpha():
        return word
    if word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and any(v in base for v in "aeiouy"):
            word = base
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # stopped -> stop
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def stems(text: str) -> set[str]:
    """The stems of a text's content terms: what the planner and the verifier compare texts by."""
    return {stem(t) for t in content_terms(text)}


def content_terms(text: str) -> list[str]:
    """Lower-cased words that carry content (no stopwords), in order, without repeats; a dash between digits
    is a hyphen, so the "2-6" of a question meets the "2–6" of a page."""
    words = (w.lower().strip("'’-") for w in _WORD.findall(_DIGIT_DASH.sub("-", text)))
    return list(dict.fromkeys(w for w in words if w and w not in STOPWORDS))


def entities(text: str) -> list[str]:
    """Capitalised or quoted spans and numbers, skipping a capitalised first word that is only a stopword."""
    found = []
    for match in _ENTITY.finditer(text):
        span = match.group(0).strip('"“”. ')
        if not span or span.lower() in STOPWORDS:
            continue
        words = span.split()
        while words and words[0].lower() in STOPWORDS:
            words = words[1:]
        if words:
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


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
