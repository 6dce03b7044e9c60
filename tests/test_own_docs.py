"""citeline's own manual, indexed as a user's docs are: README.md and docs/ of this checkout, copied as they
are into a folder of their own (a walk of the checkout would race whatever else writes in it) and indexed by
the real indexer, then asked about citeline itself.

Each question names a statement the manual makes and a word or figure that statement must carry, so the test
fails when the docs lose the statement (or stop being found by the question a user would ask). The lexical
lane answers: it needs no model, and the manual's sentences are searchable as soon as they are written.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.search import Hit, Retriever, SearchMode
from indexer.database import Database
from indexer.reconcile import Repository, reconcile_repository

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def manual(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    """The manual indexed once for the module, on an emptied database; a lexical-lane retriever over it."""
    copy = tmp_path_factory.mktemp("manual") / "citeline"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy2(ROOT / "README.md", copy / "README.md")
    with database.connect() as conn:
        conn.execute("TRUNCATE repositories, answers, lexical_terms RESTART IDENTITY CASCADE")
        conn.execute("UPDATE lexical_stats SET sentence_count = 0, token_total = 0")
        conn.commit()
        reconcile_repository(conn, Repository("citeline", copy))
    retriever = Retriever(database, None, max_connections=2)
    yield retriever
    retriever.close()


def _search(retriever: Retriever, question: str, k: int = 5) -> list[Hit]:
    return retriever.search(question, k, mode=SearchMode.LEXICAL)


def test_the_manual_is_indexed_whole(manual: Retriever, database: Database) -> None:
    with database.connect() as conn:
        paths = {row[0] for row in conn.execute("SELECT path FROM documents").fetchall()}
    expected = {"README.md"} | {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")}
    assert paths == expected
    for page in ("configuration", "answers", "search", "models", "performance", "operations", "changelog"):
        assert f"docs/{page}.md" in paths


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("which port does the page listen on", ("listens on", "8750")),
        ("does citeline index embed the sentences", ("citeline index", "does not embed")),
        (
            "which command applies pending schema migrations",
            ("citeline migrate", "apply pending schema migrations"),
        ),
        ("how do I set the API port with an environment variable", ("CITELINE_API__PORT",)),
        ("when does readyz answer 503", ("503", "database is unreachable")),
        (
            "sha256 of the packaged planner model",
            ("cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",),
        ),
        ("what does the lexical lane find before a sentence is embedded", ("lexical lane finds",)),
    ],
)
def test_a_question_about_citeline_finds_the_manual_s_statement(
    manual: Retriever, question: str, statement: tuple[str, ...]
) -> None:
    """One of the top 5 hits is the sentence that makes the statement: it carries every part of it."""
    hits = _search(manual, question)
    assert any(all(part in hit.text for part in statement) for hit in hits), (
        f"{question!r}: no hit of the top {len(hits)} states {statement!r}: "
        + "; ".join(f"{hit.path}:{hit.line_start} {hit.text[:80]}" for hit in hits)
    )


def test_the_quick_start_names_the_page_s_address_and_the_cli(manual: Retriever) -> None:
    hits = _search(manual, "quick start make run page address ask from a second terminal", k=10)
    readme = [hit for hit in hits if hit.path == "README.md"]
    assert readme, "the quick start is in the README"
    assert any("citeline ask" in hit.text for hit in _search(manual, "ask a question from the command line"))
