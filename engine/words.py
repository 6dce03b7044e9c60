"""Word tools shared by routing, planning and verification: terms, stems, named entities, key-term coverage.

Every stage that compares texts (a question's terms with a sentence's, a clause's with its sources') goes
through these, so they all agree on what a word is: a run of letters or digits in any script, lower-cased,
with stopwords dropped and a dash between digits read as a hyphen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from indexer.hashing import normalize_sentence
from indexer.stopwords import STOPWORDS

__all__ = [
    "NUMBER",
    "STOPWORDS",
    "content_terms",
    "coverage",
    "entities",
    "same_text",
    "stem",
    "stems",
    "subject",
]

_WORD = re.compile(r"[^\W_][\w'’\-]*")
"""A word in any script: "Prológica" and "Høgh" are one word each, not "Prol gica" and "H gh"."""
_DIGIT_DASH = re.compile(r"(?<=\d)[‐‑‒–—−](?=\d)")
_CAPITAL = "A-Z0-9À-ÖØ-Þ"
_ENTITY = re.compile(
    rf"(?:\"[^\"]+\"|“[^”]+”|(?:[{_CAPITAL}][\w'’\-.]*)(?:\s+(?:of|the|de|&)?\s*[{_CAPITAL}][\w'’\-.]*)*)"
)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
"""A figure as written: "1901", "9,984", "2.5"."""


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


def coverage(clause: str, texts: Sequence[str]) -> float:
    """Share of the clause's content words found in `texts` (by stem); 0 if any number is missing."""
    haystack = " ".join(texts)
    numbers = set(NUMBER.findall(clause))
    if not numbers <= set(NUMBER.findall(haystack)):
        return 0.0
    terms = [t for t in content_terms(clause) if not NUMBER.fullmatch(t)]
    if not terms:
        return 1.0
    have = stems(haystack)
    have |= set(content_terms(haystack))
    return sum(1 for t in terms if stem(t) in have or t in have) / len(terms)


def subject(text: str) -> tuple[str, ...]:
    """The terms of the first named entity, skipping figures ("In 1901 the Acme bridge": Acme)."""
    named = (e for e in entities(text) if not NUMBER.fullmatch(e))
    return tuple(content_terms(next(named, "")))


def same_text(a: str, b: str) -> bool:
    """The same sentence once normalized, a final full stop aside."""
    return normalize_sentence(a).rstrip(".") == normalize_sentence(b).rstrip(".")
