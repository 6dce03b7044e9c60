"""The lexical lane with robustness stages: exact lexemes, then typo corrections, then prefixes.

Stage 0 searches the query's own lexemes. When the index lacks some of them and the top hit does not hold
every query lexeme, stage 1 replaces the unknown lexemes with their most frequent edit-distance-1 neighbours
in the index's own vocabulary ("compilr" -> "compil"; the lexeme of a word one edit from the word typed
counts too: "memroy" -> "memori"), and stage 2 widens the still unknown ones to the indexed terms they
prefix ("bootstr" -> "bootstrap").

The corrected query's hits rank first, then the exact query's: the exact query is the corrected one less
the words it could not read, so on a question ("how do I switch on exemplar storge?") its hits match only
the other words, fill every slot, and would keep the sentence that holds the corrected word out. A prefix
stage only adds hits below the stages before it: a widened word matches many terms, most of them not meant.
"""

from __future__ import annotations

import enum
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice

from engine.search._bm25 import (
    LexicalHit,
    bm25_search_terms,
    indexed_lexemes_of,
    lexemes_in_repositories,
    lexical_document_frequencies,
    query_lexemes,
    terms_with_prefix,
    typed_words,
)
from indexer.database import Connection

__all__ = [
    "Correction",
    "LexicalStage",
    "StagedHit",
    "StagedSearch",
    "edit_distance_one",
    "merge_stages",
    "staged_lexical_search",
    "typo_corrections",
]

_ALPHABET = string.ascii_lowercase + string.digits
_MIN_PREFIX = 4
_MAX_TYPO = 32
"""A longer unknown lexeme or word is not corrected: no typo, and its variants grow with its length."""
_MAX_CORRECTED = 8
"""At most this many unknown lexemes of a query are corrected, the first ones: more is no typo."""


class LexicalStage(enum.Enum):
    """Which query variant found a lexical hit."""

    EXACT = "exact"
    """The query's own lexemes, as the text search configuration stems them."""
    TYPO = "typo"
    """Unknown lexemes replaced by indexed lexemes one edit away."""
    PREFIX = "prefix"
    """Lexemes widened to the indexed lexemes they are a prefix of."""


@dataclass(frozen=True, slots=True)
class StagedHit:
    """A lexical hit and the stage that first found it."""

    hit: LexicalHit
    stage: LexicalStage


@dataclass(slots=True)
class StagedSearch:
    """What the lexical lane did: the merged hits and the stages it ran, for traces."""

    hits: list[StagedHit] = field(default_factory=list)
    stages_run: list[LexicalStage] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)


def edit_distance_one(term: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion away from `term`."""
    splits = [(term[:i], term[i:]) for i in range(len(term) + 1)]
    deletes = {a + b[1:] for a, b in splits if b}
    transposes = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    replaces = {a + c + b[1:] for a, b in splits if b for c in _ALPHABET}
    inserts = {a + c + b for a, b in splits for c in _ALPHABET}
    return (deletes | transposes | replaces | inserts) - {term}


def merge_stages(stages: Sequence[Sequence[StagedHit]], k: int) -> list[StagedHit]:
    """Concatenate stage results in stage order, skipping sentences an earlier stage already holds."""
    merged: list[StagedHit] = []
    seen: set[int] = set()
    for hits in stages:
        for staged in hits:
            if staged.hit.sentence_id not in seen:
                seen.add(staged.hit.sentence_id)
                merged.append(staged)
    return merged[:k]


def _confident(hits: Sequence[LexicalHit], query_terms: int, unknown_terms: int) -> bool:
    """The grader: every query lexeme is in the index, or the top hit holds every query lexeme.

    Variants only help a query with terms the index has never seen (typos, other word forms); a long
    question whose terms are all known rarely has one sentence holding all of them, and widening it
    would only add noise and latency.
    """
    return unknown_terms == 0 or (bool(hits) and hits[0].matched_terms >= query_terms)


@dataclass(frozen=True, slots=True)
class Correction:
    """An unknown lexeme's correction: the indexed lexeme it is read as, the words one edit from a word the
    user typed that the text search configuration makes that lexeme of (none when the correction is one
    edit from the lexeme itself, not from a word typed), and the words typed (lower-cased) that made the
    unknown lexeme."""

    lexeme: str
    words: tuple[str, ...] = ()
    typed: tuple[str, ...] = ()


def typo_corrections(
    conn: Connection,
    query: str,
    terms: Sequence[str],
    known: dict[str, int],
    repositories: Sequence[str] | None = None,
) -> dict[str, Correction]:
    """Each unknown lexeme of `terms` that can be corrected, with its most frequent neighbour in the
    index's vocabulary. A neighbour is one edit from the lexeme, or the lexeme of a word one edit from the
    word the user typed: a typo is made in the word, and stemming can move it further ("memroy" is two
    edits from "memori", the lexeme of "memory", and one from "memory").

    Only the first `_MAX_CORRECTED` unknown lexemes of at most `_MAX_TYPO` letters are corrected, in two
    queries for all of them: a question of many unknown or very long words is no typo, and each word's
    variants grow with its length. A number, or a name with digits, is never corrected: "1800" is one edit
    from "100" and means another thing.

    With `repositories`, a neighbour is a lexeme some sentence of those repositories holds: a caller scoped
    to them is never shown, as a correction, a word that only another repository uses."""
    readable = (t for t in terms if t not in known and 3 <= len(t) <= _MAX_TYPO and t.isalpha())
    unknown = list(dict.fromkeys(islice(readable, _MAX_CORRECTED)))
    if not unknown:
        return {}
    typed = typed_words(conn, query)
    near_lexemes = {t: edit_distance_one(t) for t in unknown}
    near_words = {t: _near_words(typed.get(t, set())) for t in unknown}
    frequencies = lexical_document_frequencies(conn, sorted(set().union(*near_lexemes.values())))
    stemmed = indexed_lexemes_of(conn, sorted(set().union(*near_words.values())))
    corrections: dict[str, Correction] = {}
    for term in unknown:
        neighbours = {v: frequencies[v] for v in near_lexemes[term] if v in frequencies}
        neighbours.update(stemmed[w] for w in near_words[term] if w in stemmed)
        neighbours.pop(term, None)
        if repositories is not None and neighbours:
            in_scope = lexemes_in_repositories(conn, sorted(neighbours), repositories)
            neighbours = {v: n for v, n in neighbours.items() if v in in_scope}
        if neighbours:
            best = max(neighbours.items(), key=lambda item: (item[1], item[0]))[0]
            words = sorted(w for w in near_words[term] if w in stemmed and stemmed[w][0] == best)
            corrections[term] = Correction(best, tuple(words), tuple(sorted(typed.get(term, ()))))
    return corrections


def _typo_terms(
    conn: Connection,
    query: str,
    terms: Sequence[str],
    known: dict[str, int],
    repositories: Sequence[str] | None,
) -> tuple[list[str], dict[str, str]]:
    """`terms` with each correctable unknown lexeme replaced (`typo_corrections`), and the corrections
    made; the others stay as they are, and the prefix stage may still widen them."""
    corrections = typo_corrections(conn, query, terms, known, repositories)
    corrected = [corrections[t].lexeme if t in corrections else t for t in terms]
    return corrected, {t: c.lexeme for t, c in corrections.items()}


def _near_words(words: set[str]) -> set[str]:
    """The words one edit from any of `words` (as typed) that could be a typo: not from a long one."""
    return {v for w in words if w.isalpha() and len(w) <= _MAX_TYPO for v in edit_distance_one(w)}


def _prefix_terms(conn: Connection, terms: Sequence[str], known: dict[str, int]) -> list[str]:
    """Widen the lexemes the index does not know; known ones already match exactly."""
    widened: list[str] = []
    for term in terms:
        widened.append(term)
        if term not in known and len(term) >= _MIN_PREFIX:
            widened.extend(t for t in terms_with_prefix(conn, term) if t != term)
    return widened


def staged_lexical_search(
    conn: Connection,
    query: str,
    k: int,
    *,
    repositories: Sequence[str] | None = None,
    path_prefix: str | None = None,
) -> StagedSearch:
    """Run the stages in order until the grader is satisfied (at most three), then merge them.

    A stage whose variants change nothing (no correction found, no prefix widened) is not run: it would
    only repeat the search before it, and on long queries with a rare unknown term that doubled the cost.
    """

    def search(stage_terms: Sequence[str]) -> list[LexicalHit]:
        return bm25_search_terms(conn, stage_terms, k, repositories=repositories, path_prefix=path_prefix)

    terms = list(dict.fromkeys(query_lexemes(conn, query)))
    result = StagedSearch()
    if not terms:
        return result
    known = lexical_document_frequencies(conn, terms)
    exact = search([t for t in terms if t in known])
    result.stages_run.append(LexicalStage.EXACT)
    stages = [[StagedHit(h, LexicalStage.EXACT) for h in exact]]
    unknown = sum(1 for t in terms if t not in known)
    if not _confident(exact, len(terms), unknown):
        typo_terms, result.corrections = _typo_terms(conn, query, terms, known, repositories)
        if result.corrections:
            typo = search(typo_terms)
            result.stages_run.append(LexicalStage.TYPO)
            stages.insert(0, [StagedHit(h, LexicalStage.TYPO) for h in typo])  # see the module docstring
            if _confident(typo, len(terms), unknown - len(result.corrections)):
                result.hits = merge_stages(stages, k)
                return result
        corrected = known | dict.fromkeys(result.corrections.values(), 1)
        widened = _prefix_terms(conn, typo_terms, corrected)
        if len(widened) > len(typo_terms):  # nothing widened: the search would repeat the one before
            prefix = search(widened)
            result.stages_run.append(LexicalStage.PREFIX)
            stages.append([StagedHit(h, LexicalStage.PREFIX) for h in prefix])
    result.hits = merge_stages(stages, k)
    return result
