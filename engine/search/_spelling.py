"""A question as the models read it: each misspelt word replaced by the indexed word it was meant to be.

The lexical lane reads a typo through its typo stage (`_stages`), but the embedder and the cross-encoders
read the question's text, and a word they have never seen ("memroy", "storge") weighs nothing for them:
the sentence that answers is then rated as if the question left that word out. So before anything reads
the question, each word the index does not know is replaced by the word of the lexical lane's correction
(`typo_corrections`) that is one edit from it as typed, the one the docs use most where several are.

Only a misspelling is replaced, not a word the docs happen not to use. A word the models read whole (one
token of the shipped relevance model's vocabulary: "taller", "stared", "vault"), or an inflection of one
("mutes"), is left as typed: the models know it, and one edit away is another word ("talles", "stated"). So
is a word of fewer than `MIN_LETTERS` letters, and a capitalised one that does not open the question: such a
word is more often a name or an abbreviation than a typo ("HashiCorp Vault" is not "HashiCorp Fault").

Asked within some repositories (a scoped key's, or a filter's), a word is replaced only by a word those
repositories use: what a caller reads back (`read_as`, the notes, the trace's queries) never holds a word of
a repository it may not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from engine.search._bm25 import lexical_document_frequencies, query_lexemes
from engine.search._stages import edit_distance_one, typo_corrections
from indexer.database import Connection

__all__ = ["MIN_LETTERS", "Spelling", "model_words", "spell_question"]

MIN_LETTERS = 5
"""The shortest word that is replaced: "verison", "exportr" and "memroy" are, "grpc" is not."""

_SURFACE_SQL = r"""
SELECT w, (SELECT count(*) FROM (
    SELECT 1 FROM sentences s
    JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id
    WHERE s.tsv @@ %(lexeme)s::tsquery AND s.text ~* ('\m' || w || '\M')
      AND (%(repositories)s::text[] IS NULL OR r.name = ANY(%(repositories)s::text[]))
    LIMIT 100
) used)
FROM unnest(%(words)s::text[]) w
"""
"""How often each candidate word is written in the sentences holding its lexeme (counted up to 100)."""


_INFLECTIONS = ("s", "es", "d", "ed", "ing", "er", "ers", "est", "ly")
"""Endings that make another form of a word the models read whole ("mutes" of "mute")."""


def _reads_whole(word: str, whole: Callable[[str], bool]) -> bool:
    """Whether the models read `word`, or the word it inflects, as one token."""
    if whole(word):
        return True
    stems = (word[: -len(end)] for end in _INFLECTIONS if word.endswith(end) and len(word) > len(end) + 2)
    return any(whole(stem) or whole(stem + "e") for stem in stems)


@cache
def model_words() -> frozenset[str]:
    """The words the shipped relevance model reads as one token: its vocabulary's whole words, lower case."""
    path = resources.files("engine") / "weights" / "relevance" / "tokenizer.json"
    vocabulary = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    return frozenset(token for token in vocabulary if token.isalpha() and token.islower())


@dataclass(frozen=True, slots=True)
class Spelling:
    """A question's text with its misspelt words replaced, and each replacement (as typed, as read), in the
    order the words appear; `text` is the question itself when nothing was replaced."""

    text: str
    corrections: tuple[tuple[str, str], ...] = ()

    def note(self) -> str | None:
        """The replacements for a reader ('read "storge" as "storage"'), None when there are none."""
        if not self.corrections:
            return None
        return "read " + ", ".join(f'"{typed}" as "{read}"' for typed, read in self.corrections)


def spell_question(
    conn: Connection,
    question: str,
    read_whole: Callable[[str], bool] | None = None,
    *,
    repositories: Sequence[str] | None = None,
) -> Spelling:
    """`question` with each word the index does not know replaced by the indexed word one edit from it that
    the lexical lane's typo correction stands for (the one written most often in the docs, where several
    are). A word is left as typed when no such word exists, when it holds a digit, when it has fewer than
    `MIN_LETTERS` letters, when `read_whole` holds it or the word it inflects (by default: `model_words`), or
    when it has a capital letter and does not open the question. With `repositories`, only the words those
    repositories use are candidates."""
    whole = read_whole if read_whole is not None else model_words().__contains__
    terms = list(dict.fromkeys(query_lexemes(conn, question)))
    known = lexical_document_frequencies(conn, terms)
    scope = list(repositories) if repositories is not None else None
    corrections = typo_corrections(conn, question, terms, known, scope)
    if not corrections:
        return Spelling(question)
    replacements: dict[str, str] = {}
    for correction in corrections.values():
        for word in correction.typed:
            if len(word) >= MIN_LETTERS and word.isalpha() and not _reads_whole(word, whole):
                meant = _meant(conn, word, correction.lexeme, correction.words, scope)
                if meant is not None:
                    replacements[word] = meant
    return _replaced(question, replacements)


def _meant(
    conn: Connection, word: str, lexeme: str, candidates: Sequence[str], repositories: list[str] | None
) -> str | None:
    """The candidate one edit from `word` that the docs write most often (then the longest)."""
    near = edit_distance_one(word)
    found = [c for c in candidates if c in near and c.isalnum()]  # alphanumeric: safe inside the regex
    if len(found) < 2:
        return found[0] if found else None
    query = "'" + lexeme.replace("'", "''") + "'"
    params = {"lexeme": query, "words": found, "repositories": repositories}
    used = {str(r[0]): int(r[1]) for r in conn.execute(_SURFACE_SQL, params)}
    return max(found, key=lambda c: (used.get(c, 0), len(c), c))


def _replaced(question: str, replacements: dict[str, str]) -> Spelling:
    """Replace each whole word of `replacements` (matched without case), keeping a capital first letter; a
    word with a capital letter is replaced only where it opens the question."""
    if not replacements:
        return Spelling(question)
    done: list[tuple[str, str]] = []

    def swap(match: re.Match[str]) -> str:
        typed = match.group(0)
        if typed != typed.lower() and question[: match.start()].strip():
            return typed  # a name, most likely: see the module's docstring
        read = replacements[typed.lower()]
        if (typed, read) not in done:
            done.append((typed, read))
        return read[:1].upper() + read[1:] if typed[:1].isupper() else read

    words = "|".join(re.escape(w) for w in sorted(replacements, key=len, reverse=True))
    pattern = rf"(?<![\w-])({words})(?![\w-])"
    text = re.sub(pattern, swap, question, flags=re.IGNORECASE)
    return Spelling(text, tuple(done))
