"""The lexical lane: BM25 over PostgreSQL full-text search; it only reads what `indexer.store` writes.

The GIN index finds the sentences holding any query lexeme; BM25 is then computed in SQL from each
candidate's term frequencies and the term statistics that the sentence triggers keep current, so a sentence is
ranked correctly the moment its transaction commits. The lane ranks sentence ids; `bm25_search` loads the
ranked sentences once, as hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.search._fusion import Lane
from engine.search._hits import Hit, hydrate
from indexer.database import Connection
from indexer.store import TEXT_SEARCH_CONFIG

__all__ = [
    "BM25Params",
    "LexicalHit",
    "bm25_search",
    "bm25_search_terms",
    "indexed_lexemes_of",
    "lexemes_in_repositories",
    "lexical_document_frequencies",
    "query_lexemes",
    "terms_with_prefix",
    "typed_words",
]


@dataclass(frozen=True, slots=True)
class BM25Params:
    """Okapi BM25 constants (the usual ones for short passages) and the candidate budget."""

    k1: float = 1.2
    b: float = 0.75
    candidate_budget: int = 1000
    """Postings read to find candidates, rarest terms first (the rarest is always read); a sentence holding
    only common query terms beyond the budget is not scored. The README gives the measured trade-off."""


@dataclass(frozen=True, slots=True)
class LexicalHit:
    """A sentence the lexical lane ranked: its BM25 score and how many query lexemes it holds."""

    sentence_id: int
    score: float
    matched_terms: int


_BM25_SQL = """
WITH q AS (
    SELECT DISTINCT term FROM unnest(%(terms)s::text[]) AS term
), stats AS (
    SELECT greatest(sentence_count, 1)::float8 AS n,
           greatest(token_total::float8 / greatest(sentence_count, 1), 1.0) AS avgdl
    FROM lexical_stats
), qt AS (
    SELECT q.term, t.df, ln(1 + (stats.n - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM q JOIN lexical_terms t ON t.term = q.term CROSS JOIN stats
), probe AS (
    -- Candidates come from the rarest terms, up to a posting budget: a sentence holding only very common
    -- query terms cannot outrank one holding a rare term, and scoring it is most of the cost. The rarest
    -- term is always read; a term whose postings would overrun the budget is not ("cell" in a biomedical
    -- corpus alone would add 9,000 candidates to score).
    SELECT term FROM (SELECT term, df, sum(df) OVER (ORDER BY df, term) AS cumulative FROM qt) x
    WHERE cumulative <= %(budget)s OR cumulative = df
), cand AS (
    SELECT s.id, s.tsv, s.token_count, s.document_id
    FROM sentences s JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id
    WHERE s.tsv @@ (SELECT string_agg(quote_literal(term), ' | ')::tsquery FROM probe)
      AND (%(repositories)s::text[] IS NULL OR r.name = ANY(%(repositories)s::text[]))
      AND (%(path_prefix)s::text IS NULL OR starts_with(d.path, %(path_prefix)s::text))
), scored AS (
    SELECT c.id, count(*) AS matched,
           sum(qt.idf * (tf.v * (%(k1)s + 1))
               / (tf.v + %(k1)s * (1 - %(b)s + %(b)s * c.token_count / stats.avgdl))) AS score
    FROM cand c
    CROSS JOIN LATERAL unnest(c.tsv) u
    JOIN qt ON qt.term = u.lexeme
    CROSS JOIN LATERAL (SELECT coalesce(array_length(u.positions, 1), 1)::float8 AS v) tf
    CROSS JOIN stats
    GROUP BY c.id
    ORDER BY score DESC, c.id
    LIMIT %(k)s
)
SELECT id, score, matched FROM scored ORDER BY score DESC, id
"""


def bm25_search(
    conn: Connection,
    query: str,
    k: int = 10,
    *,
    repositories: Sequence[str] | None = None,
    path_prefix: str | None = None,
    params: BM25Params | None = None,
) -> list[Hit]:
    """Top `k` sentences for `query` by BM25, optionally within repositories and under a path prefix, best
    first, each with its `bm25` score; a sentence deleted between ranking and loading is left out."""
    ranked = bm25_search_terms(
        conn, query_lexemes(conn, query), k, repositories=repositories, path_prefix=path_prefix, params=params
    )
    details = hydrate(conn, [r.sentence_id for r in ranked])
    hits = []
    for row in ranked:
        if row.sentence_id in details:
            hit = details[row.sentence_id][0]
            hit.lanes.append(Lane.LEXICAL.value)
            hit.scores["bm25"] = row.score
            hits.append(hit)
    return hits


def bm25_search_terms(
    conn: Connection,
    terms: Sequence[str],
    k: int = 10,
    *,
    repositories: Sequence[str] | None = None,
    path_prefix: str | None = None,
    params: BM25Params | None = None,
) -> list[LexicalHit]:
    """BM25 over already-analysed lexemes: the entry point for query variants (typos, prefixes)."""
    if not terms:
        return []
    params = params or BM25Params()
    rows = conn.execute(
        _BM25_SQL,
        {
            "terms": list(terms),
            "k": k,
            "k1": params.k1,
            "b": params.b,
            "budget": params.candidate_budget,
            "repositories": list(repositories) if repositories is not None else None,
            "path_prefix": path_prefix,
        },
    ).fetchall()
    return [LexicalHit(r[0], float(r[1]), r[2]) for r in rows]


def query_lexemes(conn: Connection, query: str) -> list[str]:
    """The lexemes the text search configuration makes of a query (stemmed, stop words dropped), in order."""
    rows = conn.execute(
        f"SELECT u.lexeme FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', normalize(%s, NFKC))) u"
        " ORDER BY u.positions[1]",
        (query,),
    ).fetchall()
    return [r[0] for r in rows]


def typed_words(conn: Connection, query: str) -> dict[str, set[str]]:
    """Each lexeme of `query` with the words, as typed (lower-cased), that the text search configuration
    made it of."""
    rows = conn.execute(
        f"SELECT lower(token), lexemes[1] FROM ts_debug('{TEXT_SEARCH_CONFIG}', normalize(%s, NFKC))"
        " WHERE cardinality(lexemes) > 0",
        (query,),
    ).fetchall()
    words: dict[str, set[str]] = {}
    for word, lexeme in rows:
        words.setdefault(lexeme, set()).add(word)
    return words


def indexed_lexemes_of(conn: Connection, words: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Each of `words` whose lexeme the index knows, with that lexeme and its document frequency."""
    if not words:
        return {}
    rows = conn.execute(
        "SELECT w, u.lexeme, t.df FROM unnest(%s::text[]) w"
        f" CROSS JOIN LATERAL unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', w)) u"
        " JOIN lexical_terms t ON t.term = u.lexeme",
        (list(words),),
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def lexical_document_frequencies(conn: Connection, terms: Sequence[str]) -> dict[str, int]:
    """Document frequency of each term that the index knows; unknown terms are absent."""
    rows = conn.execute("SELECT term, df FROM lexical_terms WHERE term = ANY(%s)", (list(terms),)).fetchall()
    return {r[0]: r[1] for r in rows}


def lexemes_in_repositories(conn: Connection, terms: Sequence[str], repositories: Sequence[str]) -> set[str]:
    """The `terms` (lexemes) that some sentence of `repositories` holds: the vocabulary a scoped caller may be
    shown, where `lexical_terms` counts every repository's."""
    if not terms:
        return set()
    rows = conn.execute(
        "SELECT t FROM unnest(%(terms)s::text[]) t WHERE EXISTS ("
        " SELECT 1 FROM sentences s JOIN documents d ON d.id = s.document_id"
        " JOIN repositories r ON r.id = d.repository_id"
        " WHERE r.name = ANY(%(repositories)s::text[]) AND s.tsv @@ quote_literal(t)::tsquery)",
        {"terms": list(terms), "repositories": list(repositories)},
    ).fetchall()
    return {r[0] for r in rows}


def terms_with_prefix(conn: Connection, prefix: str, limit: int = 20) -> list[str]:
    """The most frequent indexed lexemes starting with `prefix` (for prefix query variants)."""
    rows = conn.execute(
        "SELECT term FROM lexical_terms WHERE term LIKE %s ORDER BY df DESC, term LIMIT %s",
        (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%", limit),
    ).fetchall()
    return [r[0] for r in rows]
