"""The query a docs training row is asked with: its mined question, or that question in other words.

A mined question *is* the heading it was mined from, word for word, while users paraphrase and type keywords.
Asked only verbatim, a model learns that an answer sits under a heading that copies the question and that an
answer under any other question heading never answers: it then rates a paraphrased question's answer near
zero. So each row is asked one of three ways, chosen by a seeded draw per row (the same row always gets the
same query):

- the question as mined;
- its keywords: the words left once question words, auxiliaries, pronouns and function words are dropped
  ("How do I clear the cache?" -> "clear cache");
- a part of those keywords, each dropped at random but never fewer than two kept.

The answer's heading then matches the query only in part, as a user's question does.
"""

from __future__ import annotations

import random
import re

__all__ = ["VERBATIM_SHARE", "keywords", "reworded"]

VERBATIM_SHARE = 1 / 3
"""The share of rows asked with the question as mined; the rest are split evenly between the two others."""

_DROP = 0.35
"""How likely each keyword is to be dropped in the third form."""

_FUNCTION_WORDS = frozenset(
    """a an the and or but if so as than then there this that these those here
    i me my we us our you your it its they them their he she his her one
    is are was were be been being am do does did doing done have has had
    can could should would will shall may might must need
    how what why when where which who whom whose
    to of in on for with by at from into onto about via per
    any some all each every such own same other another
    not no yes also just only very too""".split()  # noqa: SIM905 (a word list reads best as text)
)

_TOKEN = re.compile(r"[^\s]+")
_EDGE = re.compile(r"^[\"'(\[{`]+|[\"')\]}`?!.,;:]+$")


def keywords(question: str) -> list[str]:
    """The question's words less its function words, in order, stripped of edge punctuation (a flag such
    as ``--force`` or a name such as ``config.yml`` is kept whole)."""
    out = []
    for token in _TOKEN.findall(question):
        word = _EDGE.sub("", token)
        if word and word.lower() not in _FUNCTION_WORDS:
            out.append(word)
    return out


def reworded(question: str, seed: str) -> str:
    """The query for one row (see the module's docstring); ``seed`` names the row, so the draw is the same
    in every run. A question with fewer than three keywords is always asked as mined: dropping words from it
    leaves too little to ask."""
    rng = random.Random(seed)
    draw = rng.random()
    words = keywords(question)
    if draw < VERBATIM_SHARE or len(words) < 3:
        return question
    if draw < (1 + VERBATIM_SHARE) / 2:
        return " ".join(words)
    kept = [w for w in words if rng.random() >= _DROP]
    if len(kept) < 2:
        two = sorted(rng.sample(range(len(words)), 2))
        kept = [words[i] for i in two]
    return " ".join(kept)
