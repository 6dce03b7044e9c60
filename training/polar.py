"""Yes/no questions for the relevance model, made from labelled NLI pairs.

Docs readers ask "Can I ...?", "Should my exporter ...?", "Is there a way to ...?", and the answering sentence
settles the question either way ("Similarly, expose ratios, not percentages."). The relevance sets are
factoid Wikipedia questions, so a model trained on them alone reads a sentence that says no, or one that is
merely about the topic, much like one that answers. NLI pairs hold exactly that distinction: turn the
hypothesis into a polar question, and a premise that entails or contradicts it answers the question (1),
while a neutral premise, written to be on topic without settling it, does not (0).

The question is made by moving the hypothesis's first auxiliary in front of its subject ("A man is
sleeping." -> "Is a man sleeping?"); a hypothesis without a clear auxiliary near its start is skipped rather
than turned into an unnatural question.

An experiment: the shipped relevance weights were not trained on it, because a model trained on it answered
fewer held-out docs questions (`training/README.md`, "Polar questions").
"""

from __future__ import annotations

import re
from pathlib import Path

from training.data import RelRow, load_nli

__all__ = ["load_polar", "polar_question"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_HAVE_OR_DO = _words("has have had do does did")
"""Auxiliaries that are also main verbs."""
_AUXILIARIES = _words(
    "is are was were can could will would should may might must has have had does do did shall"
)
_NEGATED = frozenset({f"{a}n't" for a in _AUXILIARIES} | {"can't", "won't", "shan't"})
_MAIN_VERB_AFTER = _words("a an the no some many to")
"""Words after has/have/had/do/does/did that make it the main verb ("He has a car"), not an auxiliary."""
_LOWER_WHEN_MOVED = _words(
    "the a an this that these those some many most all he she it they we you his her their our my your its "
    "no every each there both several few one two three people someone somebody everyone nobody none any "
    "another other such much more"
)
"""Sentence-initial words that are not names, so they lose their capital once the auxiliary leads."""
_PLAIN_WORD = re.compile(r"[A-Za-z'-]+")
_MAX_SUBJECT = 5
_LABELS = {"entailment": 1, "contradiction": 1, "neutral": 0}


def polar_question(statement: str) -> str | None:
    """The yes/no question that `statement` answers, or None when no auxiliary opens its predicate.

    The subject is at most a few plain words before the auxiliary: a comma, a quotation or a number there
    means the clause structure is not the simple one this inversion assumes.
    """
    words = statement.strip().rstrip(".!").split()
    if len(words) < 3 or len(words) > 30 or any(c in statement for c in '?"'):
        return None
    for index in range(1, min(_MAX_SUBJECT + 1, len(words) - 1)):
        word = words[index].lower()
        if word in _AUXILIARIES or word in _NEGATED:
            if word in _HAVE_OR_DO and words[index + 1].lower() in _MAIN_VERB_AFTER:
                return None
            subject = words[:index]
            first = subject[0]
            if first != "I" and first.lower() in _LOWER_WHEN_MOVED:
                first = first.lower()
            auxiliary = words[index][0].upper() + words[index][1:].lower()
            return " ".join([auxiliary, first, *subject[1:], *words[index + 1 :]]) + "?"
        if not _PLAIN_WORD.fullmatch(words[index]):
            return None
    return None


def load_polar(path: Path) -> list[RelRow]:
    """Relevance rows from an NLI file or folder: (polar question of the hypothesis, premise, answers it).

    Two-way sets (``not_entailment``) are skipped, since "not entailed" mixes a premise that says no with
    one that says nothing. Rows of one premise share a group, so validation ranks the questions a passage
    answers above those it only touches.
    """
    rows = []
    for row in load_nli(path):
        label = _LABELS.get(row.label)
        question = polar_question(row.hypothesis)
        if label is None or question is None:
            continue
        rows.append(RelRow(question, row.premise, label, f"premise:{row.premise}", row.source))
    return rows
