"""A misspelt question is read as the index spells it, by search and by the models alike; the answer keeps
the question as asked and says what was read instead."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from engine.controller import AnswerEngine, EngineConfig
from engine.search import Spelling, model_words, spell_question
from indexer.database import Connection
from indexer.embedder import EmbeddingModel
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import Repository, reconcile_repository
from tests.engine_support import ContainmentNLI

PAGE = """# Cache

The cache keeps results in memory. A fault in the cache is logged. Alerts mustes be routed.

## Storage

Exemplar storage is switched on with a feature flag.
"""


def _index(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "guide.md").write_text(PAGE)
    reconcile_repository(conn, Repository("docs", repo_dir))


def test_a_misspelt_word_is_read_as_the_indexed_word_one_edit_away(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    spelling = spell_question(conn, "Where does the cache keep results, in memroy?")
    assert spelling == Spelling("Where does the cache keep results, in memory?", (("memroy", "memory"),))
    assert spelling.note() == 'read "memroy" as "memory"'


def test_a_word_the_stemmer_moves_is_corrected_to_the_word_not_its_stem(
    conn: Connection, repo_dir: Path
) -> None:
    """The lexical lane corrects "storg" to the lexeme "storag"; the models read the word "storage"."""
    _index(conn, repo_dir)
    assert (
        spell_question(conn, "How is exemplar storge switched on?").text
        == "How is exemplar storage switched on?"
    )


def test_a_question_the_index_can_read_is_left_as_typed(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    spelling = spell_question(conn, "Which flag switches on exemplar storage?")
    assert spelling == Spelling("Which flag switches on exemplar storage?")
    assert spelling.note() is None


def test_a_name_or_a_short_word_is_left_as_typed(conn: Connection, repo_dir: Path) -> None:
    """ "Vault" is one edit from the indexed "fault", and "cahe" from "cache"; a capitalised word is more
    often a name the docs never use, and a short one an abbreviation, than a typo."""
    _index(conn, repo_dir)
    nothing_whole = set[str]().__contains__
    assert spell_question(conn, "Is a HashiCorp Vault logged?", nothing_whole).corrections == ()
    assert spell_question(conn, "Is the cahe logged?", nothing_whole).corrections == ()
    assert spell_question(conn, "Is the vault logged?", nothing_whole).text == "Is the fault logged?"


def test_a_word_the_models_read_whole_or_its_inflection_is_left_as_typed(
    conn: Connection, repo_dir: Path
) -> None:
    """ "vault" is one token of the shipped models' vocabulary: they know it, and "fault" is another word.
    "mutes" is no token, but "mute" is."""
    _index(conn, repo_dir)
    assert "vault" in model_words()
    assert spell_question(conn, "Is the vault logged?").corrections == ()
    assert spell_question(conn, "Which alerts mutes?", set[str]().__contains__).text == "Which alerts mustes?"
    assert spell_question(conn, "Which alerts mutes?", {"mute"}.__contains__).corrections == ()


def test_a_capitalised_first_word_is_corrected_and_keeps_its_capital(
    conn: Connection, repo_dir: Path
) -> None:
    _index(conn, repo_dir)
    spelling = spell_question(conn, "Memroy: where does the cache keep results?")
    assert spelling.text == "Memory: where does the cache keep results?"
    assert spelling.corrections == (("Memroy", "memory"),)


class _Recording:
    """A relevance model that records the queries it reads (a fake: what is asserted is the query the engine
    passes, not a rating), rating a passage by the share of the query's words it holds."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.queries.append(query)
        words = {w.strip("?,.").lower() for w in query.split()}
        return [len(words & {w.strip("?,.:").lower() for w in p.split()}) / len(words) for p in passages]


def test_the_engine_reads_the_question_as_spelt_and_the_answer_keeps_it_as_asked(
    new_engine: Callable[..., AnswerEngine], conn: Connection, repo_dir: Path, embedder: EmbeddingModel
) -> None:
    _index(conn, repo_dir)
    EmbeddingWorker(conn, embedder).drain()
    relevance = _Recording()
    engine = new_engine(entailment=ContainmentNLI(), relevance=relevance, config=EngineConfig(store=False))
    result = engine.answer("Where does the cache keep results, in memroy?")
    assert result.question == "Where does the cache keep results, in memroy?"
    assert result.read_as == "Where does the cache keep results, in memory?"
    assert result.to_dict()["read_as"] == result.read_as
    assert 'read "memroy" as "memory"' in result.notes
    assert "Where does the cache keep results, in memory?" in relevance.queries
    assert not any("memroy" in query for query in relevance.queries)

    as_typed = new_engine(
        entailment=ContainmentNLI(), relevance=_Recording(), config=EngineConfig(store=False, spelling=False)
    )
    result = as_typed.answer("Where does the cache keep results, in memroy?")
    assert result.read_as is None and "read_as" not in result.to_dict()
    assert not any(note.startswith("read ") for note in result.notes)
